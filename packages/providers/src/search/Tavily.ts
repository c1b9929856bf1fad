/**
 * Tavily search and extraction (`@tavily/core`) as a `SearchProvider` and a `ContentExtractor`.
 *
 * The SDK takes a base URL (`apiBaseURL`), so tests point it at the emulator. Two limits of the SDK shape this
 * module: it throws plain `Error`s without the HTTP status or headers (errors are classified by Tavily's documented
 * texts, see `tavilyErrors.ts`; a 429's `retry-after` is lost, so core's computed backoff applies), and it
 * takes no AbortSignal, so interrupting a call ends the Effect at once while the HTTP request itself runs on until
 * the SDK's own timeout (`timeout`, by default 60 s for search, 30 s for extract). The SDK posts through the
 * process-wide default axios instance and exposes no request config; reaching the signal or the response would mean
 * an interceptor on that shared instance, which every other axios user in the process would go through, so it is
 * not done.
 */
import { tavily, type TavilyClient } from "@tavily/core"
import { ContentExtractor, Errors, Resilience, SearchProvider, Source } from "@deep-research/core"
import * as Config from "effect/Config"
import * as Context from "effect/Context"
import type * as ConfigError from "effect/ConfigError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { fromError } from "./tavilyErrors.js"
import * as Environment from "../Environment.js"

// =============================================================================
// Options
// =============================================================================

/** How to build the Tavily services. */
export interface Options {
  readonly apiKey: Redacted.Redacted
  /** e.g. `http://127.0.0.1:8080/tavily`. Defaults to Tavily's own API. */
  readonly baseUrl?: string | undefined
  /**
   * The SDK's limit on one search request. Default: the default resilience policy's search attempt timeout, so that
   * a request core has given up on (the SDK cannot be interrupted) ends at the same time.
   */
  readonly searchTimeout?: Duration.DurationInput | undefined
  /** The SDK's limit on one extract request. Default: the default resilience policy's extract attempt timeout. */
  readonly extractTimeout?: Duration.DurationInput | undefined
  /** `basic` (default) or `advanced` (tables and embedded content, slower, 2 credits per 5 URLs). */
  readonly extractDepth?: "basic" | "advanced" | undefined
  /** The name recorded on results and errors. Default `tavily`. */
  readonly name?: string | undefined
}

/** Both services over one client. */
export interface Tavily {
  readonly search: SearchProvider.Service
  readonly extractor: ContentExtractor.Service
}

/**
 * Tavily's rate limits as it publishes them (docs.tavily.com, "Rate Limits"): 100 requests a minute on a development
 * key, 1,000 on a production key. The policy starts at the development key's pace, with a burst of 10 (a minute's
 * budget may be spent early), and grows after successes towards the production key's; a 429 halves it again, so the
 * key's real limit is found either way.
 */
export const policy: Resilience.PolicyOverrides = new Resilience.PolicyOverrides({
  requestsPerSecond: 100 / 60,
  burst: 10,
  maxRequestsPerSecond: 1_000 / 60
})

/** The attempt timeout of the default resilience policy for this provider's calls of a kind. */
export const defaultTimeout = (name: string, kind: "search" | "extract"): Duration.Duration =>
  Resilience.policyFor(Resilience.defaultSettings, name, kind).attemptTimeout

/** Tavily answers at most this many URLs per extract call and this many results per search. */
const maxUrlsPerExtract = 20
const maxResultsPerSearch = 20

// =============================================================================
// Constructors
// =============================================================================

/** Builds both services. */
export const make = (options: Options): Effect.Effect<Tavily> =>
  Effect.sync(() => {
    const name = options.name ?? "tavily"
    const key = Redacted.value(options.apiKey)
    // Without a key the SDK silently falls back to the environment or to keyless mode; refuse instead.
    const client: TavilyClient | undefined =
      key === ""
        ? undefined
        : tavily({ apiKey: key, ...(options.baseUrl !== undefined ? { apiBaseURL: options.baseUrl } : {}) })
    // The SDK takes seconds.
    const seconds = (duration: Duration.DurationInput) => ({
      timeout: Duration.toMillis(Duration.decode(duration)) / 1000
    })
    const searchTimeout = seconds(options.searchTimeout ?? defaultTimeout(name, "search"))
    const extractTimeout = seconds(options.extractTimeout ?? defaultTimeout(name, "extract"))

    const call = <A>(run: (client: TavilyClient) => Promise<A>): Effect.Effect<A, Errors.ProviderError> =>
      client === undefined
        ? Effect.fail(
            new Errors.ProviderAuthenticationFailed({ provider: name, detail: "no Tavily API key was given" })
          )
        : Effect.tryPromise({ try: () => run(client), catch: (error) => fromError(error, { provider: name }) })

    // An answer decoded and read in one step (the schemas are synchronous).
    const read = <A, B>(
      decoded: Either.Either<A, ParseResult.ParseError>,
      f: (response: A) => B
    ): Effect.Effect<B, Errors.ProviderUnavailable> =>
      Either.match(decoded, {
        onLeft: (error) =>
          Effect.fail(
            new Errors.ProviderUnavailable({
              provider: name,
              detail: `unreadable response: ${ParseResult.TreeFormatter.formatErrorSync(error)}`
            })
          ),
        onRight: (response) => Effect.succeed(f(response))
      })

    // No spans of their own: each call is already the `search {provider}` or `extract {provider}` span around it, and
    // a second span would say nothing the first does not.
    const search = (query: string, searchOptions: SearchProvider.SearchOptions) =>
      Effect.flatMap(
        call((client) => client.search(query, { ...toSearchOptions(searchOptions), ...searchTimeout })),
        (raw) => read(decodeSearchResponse(raw), (response) => toSearchResults(response, name))
      )

    const extractBatch = (urls: ReadonlyArray<string>) =>
      Effect.flatMap(
        call((client) =>
          client.extract([...urls], {
            extractDepth: options.extractDepth ?? "basic",
            format: "markdown",
            ...extractTimeout
          })
        ),
        (raw) => read(decodeExtractResponse(raw), (response) => toExtractResults(urls, response))
      )

    const extract = (urls: ReadonlyArray<string>) =>
      Effect.suspend(() => {
        const batches: Array<ReadonlyArray<string>> = []
        for (let i = 0; i < urls.length; i += maxUrlsPerExtract) batches.push(urls.slice(i, i + maxUrlsPerExtract))
        return Effect.map(Effect.forEach(batches, extractBatch), (results) => results.flat())
      })

    return { search: { name, search }, extractor: { name, extract } }
  })

/** Tavily as both the `SearchProvider` and the `ContentExtractor` in context. */
export const layer = (
  options: Options
): Layer.Layer<SearchProvider.SearchProvider | ContentExtractor.ContentExtractor> =>
  Layer.effectContext(
    Effect.map(make(options), (services) =>
      Context.make(SearchProvider.SearchProvider, services.search).pipe(
        Context.add(ContentExtractor.ContentExtractor, services.extractor)
      )
    )
  )

/** Tavily as the `SearchProvider` only. */
export const layerSearch = (options: Options): Layer.Layer<SearchProvider.SearchProvider> =>
  Layer.effect(
    SearchProvider.SearchProvider,
    Effect.map(make(options), (services) => services.search)
  )

/** The key from `TAVILY_API_KEY` and the base URL from `TAVILY_BASE_URL` (if set). */
export const config: Config.Config<{ readonly apiKey: Redacted.Redacted; readonly baseUrl: string | undefined }> =
  Config.all({
    apiKey: Config.redacted(Config.nonEmptyString(Environment.tavilyApiKey)),
    baseUrl: Config.option(Config.nonEmptyString(Environment.tavilyBaseUrl)).pipe(Config.map(Option.getOrUndefined))
  })

/** Both services, configured from the environment (or whatever `ConfigProvider` is installed). */
export const layerConfig = (
  options: Omit<Options, "apiKey" | "baseUrl"> = {}
): Layer.Layer<SearchProvider.SearchProvider | ContentExtractor.ContentExtractor, ConfigError.ConfigError> =>
  Layer.unwrapEffect(Effect.map(config, (fromConfig) => layer({ ...options, ...fromConfig })))

// =============================================================================
// Search
// =============================================================================

/** Excluded domains a search takes at most (its API's `exclude_domains` limit; `include_domains` takes 300). */
export const maxExcludedDomains = 150

/** The SDK's search options for the port's options. */
export const toSearchOptions = (options: SearchProvider.SearchOptions) => ({
  maxResults: Math.max(0, Math.min(maxResultsPerSearch, options.maxResults)),
  ...(options.depth !== undefined ? { searchDepth: options.depth } : {}),
  ...(options.includeRawContent === true ? { includeRawContent: "markdown" as const } : {}),
  ...(options.topic !== undefined ? { topic: options.topic } : {}),
  // A date window (a source policy's) is sent as Tavily's start_date / end_date, in place of a recent time range.
  ...(options.timeRange !== undefined && options.since === undefined && options.until === undefined
    ? { timeRange: options.timeRange }
    : {}),
  ...(options.since !== undefined ? { startDate: options.since } : {}),
  ...(options.until !== undefined ? { endDate: options.until } : {}),
  ...(options.includeDomains !== undefined && options.includeDomains.length > 0
    ? { includeDomains: [...options.includeDomains] }
    : {}),
  // Tavily refuses more than 150 excluded domains (a policy may list 200): the first 150 are sent, the product's own
  // check leaves out the rest.
  ...(options.excludeDomains !== undefined && options.excludeDomains.length > 0
    ? { excludeDomains: options.excludeDomains.slice(0, maxExcludedDomains) }
    : {})
})

const OptionalText = Schema.optional(Schema.NullOr(Schema.String))

/** The fields of the SDK's search answer this provider reads. */
export const SearchResponse = Schema.Struct({
  results: Schema.Array(
    Schema.Struct({
      url: Schema.String,
      title: OptionalText,
      content: OptionalText,
      rawContent: OptionalText,
      score: Schema.optional(Schema.NullOr(Schema.Number)),
      publishedDate: OptionalText
    })
  )
})
export type SearchResponse = typeof SearchResponse.Type

const decodeSearchResponse = Schema.decodeUnknownEither(SearchResponse)

/** Search results in the port's terms. */
const toSearchResults = (response: SearchResponse, provider: string): ReadonlyArray<Source.SearchResult> =>
  response.results.map(
    (result) =>
      // Made from the decoded answer, whose types the compiler has checked: the class would only check them again.
      new Source.SearchResult(
        {
          url: result.url,
          title: result.title ?? result.url,
          snippet: result.content ?? "",
          provider,
          ...(typeof result.rawContent === "string" && result.rawContent !== ""
            ? { rawContent: result.rawContent }
            : {}),
          ...(typeof result.score === "number" ? { score: result.score } : {}),
          ...(typeof result.publishedDate === "string" && result.publishedDate !== ""
            ? { publishedDate: result.publishedDate }
            : {})
        },
        true
      )
  )

// =============================================================================
// Extract
// =============================================================================

/** The fields of the SDK's extract answer this provider reads. */
export const ExtractResponse = Schema.Struct({
  results: Schema.Array(Schema.Struct({ url: Schema.String, title: OptionalText, rawContent: OptionalText })),
  failedResults: Schema.Array(Schema.Struct({ url: Schema.String, error: OptionalText }))
})
export type ExtractResponse = typeof ExtractResponse.Type

const decodeExtractResponse = Schema.decodeUnknownEither(ExtractResponse)

/** Tavily may echo a URL normalised (trailing slash, host case); match on a lenient form when the exact one fails. */
const urlKey = (url: string): string => {
  try {
    const parsed = new URL(url)
    return `${parsed.protocol}//${parsed.host.toLowerCase()}${parsed.pathname.replace(/\/+$/, "")}${parsed.search}`
  } catch {
    return url.trim()
  }
}

/** One result per requested URL, in order: the page, Tavily's reason for failing it, or that it did not answer. */
export const toExtractResults = (
  urls: ReadonlyArray<string>,
  response: ExtractResponse
): ReadonlyArray<Source.ExtractResult> => {
  const find = <A extends { readonly url: string }>(items: ReadonlyArray<A>, url: string): A | undefined =>
    items.find((item) => item.url === url) ?? items.find((item) => urlKey(item.url) === urlKey(url))
  return urls.map((url): Source.ExtractResult => {
    const page = find(response.results, url)
    if (page !== undefined && typeof page.rawContent === "string" && page.rawContent.trim() !== "") {
      return new Source.ExtractedPage({
        url,
        title: page.title ?? url,
        content: page.rawContent,
        contentType: "text/markdown"
      })
    }
    const failed = find(response.failedResults, url)
    if (failed !== undefined) {
      return new Source.ExtractFailure({ url, reason: failed.error ?? "Tavily could not extract the page" })
    }
    return new Source.ExtractFailure({
      url,
      reason: page !== undefined ? "Tavily returned no content" : "Tavily did not return this URL"
    })
  })
}
