/**
 * Exa search (`POST /search` with contents) as a `SearchProvider`, and Exa's `POST /contents` as a
 * `ContentExtractor`. The key goes in the `x-api-key` header. Snippets are Exa's highlights (passages chosen for the
 * query), else its summary, else the start of the text.
 */
import { ContentExtractor, Errors, Resilience, SearchProvider, Source } from "@deep-research/core"
import * as Clock from "effect/Clock"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { requestJson } from "./searchHttp.js"
import type * as HttpClient from "@effect/platform/HttpClient"
import * as Environment from "../Environment.js"

// =============================================================================
// Options
// =============================================================================

/** How to build the Exa services. */
export interface Options {
  readonly apiKey: Redacted.Redacted
  /** e.g. `http://127.0.0.1:8080/exa`. Defaults to Exa's own API. */
  readonly baseUrl?: string | undefined
  /** Time limit of one request; 30 s by default. */
  readonly timeout?: Duration.DurationInput | undefined
  /** Exa's search type; `auto` by default. */
  readonly searchType?: "auto" | "neural" | "keyword" | "fast" | undefined
  /** The name recorded on results and errors; `exa` by default. */
  readonly name?: string | undefined
  /** The HTTP client of its requests: the platform's fetch client by default; a test or a host may give its own. */
  readonly httpClient?: HttpClient.HttpClient | undefined
}

/** Both services over one key. */
export interface Exa {
  readonly search: SearchProvider.Service
  readonly extractor: ContentExtractor.Service
}

/** Exa's API. */
export const defaultBaseUrl = "https://api.exa.ai"

/**
 * The resilience policy Exa gets by default (`Resilience.Settings.providers.exa`): Exa allows about 10 requests a
 * second; half of that leaves room for other clients of the same key.
 */
export const policy: Resilience.PolicyOverrides = new Resilience.PolicyOverrides({ requestsPerSecond: 5, burst: 5 })

const maxResultsPerSearch = 100
const maxUrlsPerContents = 25
const rawContentCharacters = 50_000
const snippetCharacters = 500

// =============================================================================
// Wire format
// =============================================================================

const OptionalText = Schema.optional(Schema.NullOr(Schema.String))

const ExaResult = Schema.Struct({
  id: OptionalText,
  url: Schema.String,
  title: OptionalText,
  publishedDate: OptionalText,
  author: OptionalText,
  score: Schema.optional(Schema.NullOr(Schema.Number)),
  text: OptionalText,
  highlights: Schema.optional(Schema.NullOr(Schema.Array(Schema.String))),
  summary: OptionalText
})
type ExaResult = typeof ExaResult.Type

/** The fields of Exa's search answer this provider reads. */
export const SearchResponse = Schema.Struct({ results: Schema.Array(ExaResult) })

/** The fields of Exa's contents answer this provider reads. */
export const ContentsResponse = Schema.Struct({
  results: Schema.Array(ExaResult),
  statuses: Schema.optional(
    Schema.Array(
      Schema.Struct({
        id: Schema.String,
        status: Schema.String,
        error: Schema.optional(
          Schema.NullOr(
            Schema.Struct({ tag: OptionalText, httpStatusCode: Schema.optional(Schema.NullOr(Schema.Number)) })
          )
        )
      })
    )
  )
})

// =============================================================================
// Constructors
// =============================================================================

/** Builds both services. */
export const make = (options: Options): Exa => {
  const name = options.name ?? "exa"
  const baseUrl = (options.baseUrl ?? defaultBaseUrl).replace(/\/+$/, "")
  const timeout = Duration.decode(options.timeout ?? Duration.seconds(30))
  const key = Redacted.value(options.apiKey)

  const post = <A, I>(path: string, body: unknown, schema: Schema.Schema<A, I>) =>
    Effect.gen(function* () {
      if (key === "") {
        return yield* new Errors.ProviderAuthenticationFailed({ provider: name, detail: "no Exa API key was given" })
      }
      const raw = yield* requestJson(
        {
          provider: name,
          method: "POST",
          url: `${baseUrl}${path}`,
          headers: { "x-api-key": key },
          body,
          timeout
        },
        options.httpClient
      )
      return yield* Schema.decodeUnknown(schema)(raw).pipe(
        Effect.mapError(
          (error) =>
            new Errors.ProviderUnavailable({
              provider: name,
              detail: `unreadable answer: ${ParseResult.TreeFormatter.formatErrorSync(error)}`
            })
        )
      )
    })

  const search = Effect.fn("Exa.search")(function* (query: string, searchOptions: SearchProvider.SearchOptions) {
    const now = yield* Clock.currentTimeMillis
    const response = yield* post(
      "/search",
      searchBody(query, searchOptions, options.searchType ?? "auto", now),
      SearchResponse
    )
    return toSearchResults(response.results.slice(0, Math.max(0, searchOptions.maxResults)), name)
  })

  const extract = Effect.fn("Exa.extract")(function* (urls: ReadonlyArray<string>) {
    const batches: Array<ReadonlyArray<string>> = []
    for (let i = 0; i < urls.length; i += maxUrlsPerContents) batches.push(urls.slice(i, i + maxUrlsPerContents))
    const results = yield* Effect.forEach(batches, (batch) =>
      Effect.map(
        post("/contents", { urls: batch, text: { maxCharacters: rawContentCharacters } }, ContentsResponse),
        (response) => toExtractResults(batch, response)
      )
    )
    return results.flat()
  })

  return { search: { name, search }, extractor: { name, extract } }
}

/** Exa as both the `SearchProvider` and the `ContentExtractor` in context. */
export const layer = (
  options: Options
): Layer.Layer<SearchProvider.SearchProvider | ContentExtractor.ContentExtractor> => {
  const exa = make(options)
  return Layer.succeedContext(
    Context.make(SearchProvider.SearchProvider, exa.search).pipe(
      Context.add(ContentExtractor.ContentExtractor, exa.extractor)
    )
  )
}

/** Exa as the `SearchProvider` only. */
export const layerSearch = (options: Options): Layer.Layer<SearchProvider.SearchProvider> =>
  Layer.succeed(SearchProvider.SearchProvider, make(options).search)

/** The key from `EXA_API_KEY` and the base URL from `EXA_BASE_URL` (if set). */
export const config: Config.Config<{ readonly apiKey: Redacted.Redacted; readonly baseUrl: string | undefined }> =
  Config.all({
    apiKey: Config.redacted(Config.nonEmptyString(Environment.exaApiKey)),
    baseUrl: Config.option(Config.nonEmptyString(Environment.exaBaseUrl)).pipe(Config.map(Option.getOrUndefined))
  })

/** Both services, configured from the environment (or whatever `ConfigProvider` is installed). */
export const layerConfig = (
  options: Omit<Options, "apiKey" | "baseUrl"> = {}
): Layer.Layer<SearchProvider.SearchProvider | ContentExtractor.ContentExtractor, ConfigError.ConfigError> =>
  Layer.unwrapEffect(Effect.map(config, (fromConfig) => layer({ ...options, ...fromConfig })))

// =============================================================================
// Mapping
// =============================================================================

const dayMillis = 24 * 60 * 60 * 1000
const rangeMillis: Readonly<Record<NonNullable<SearchProvider.SearchOptions["timeRange"]>, number>> = {
  day: dayMillis,
  week: 7 * dayMillis,
  month: 31 * dayMillis,
  year: 366 * dayMillis
}

/** Exa's `/search` body for the port's options. */
export const searchBody = (
  query: string,
  options: SearchProvider.SearchOptions,
  searchType: string,
  now: number
): Record<string, unknown> => ({
  query,
  type: searchType,
  numResults: Math.max(1, Math.min(maxResultsPerSearch, options.maxResults)),
  contents: {
    highlights: { maxCharacters: snippetCharacters, query },
    ...(options.includeRawContent === true ? { text: { maxCharacters: rawContentCharacters } } : {})
  },
  ...(options.includeDomains !== undefined && options.includeDomains.length > 0
    ? { includeDomains: [...options.includeDomains] }
    : {}),
  ...(options.excludeDomains !== undefined && options.excludeDomains.length > 0
    ? { excludeDomains: [...options.excludeDomains] }
    : {}),
  // A date window (a source policy's) is sent as Exa's published-date bounds, in place of a recent time range.
  ...(options.since !== undefined
    ? { startPublishedDate: `${options.since}T00:00:00.000Z` }
    : options.timeRange !== undefined && options.until === undefined
      ? { startPublishedDate: new Date(now - rangeMillis[options.timeRange]).toISOString() }
      : {}),
  ...(options.until !== undefined ? { endPublishedDate: `${options.until}T23:59:59.999Z` } : {}),
  ...(options.topic === "news"
    ? { category: "news" }
    : options.topic === "finance"
      ? { category: "financial report" }
      : {})
})

const snippetOf = (result: ExaResult): string => {
  const highlights = (result.highlights ?? []).map((h) => h.trim()).filter((h) => h !== "")
  if (highlights.length > 0) return highlights.join(" … ")
  if (typeof result.summary === "string" && result.summary.trim() !== "") return result.summary.trim()
  const text = (result.text ?? "").replace(/\s+/g, " ").trim()
  return text.length > snippetCharacters ? `${text.slice(0, snippetCharacters)}…` : text
}

/** Search results in the port's terms. */
export const toSearchResults = (
  results: ReadonlyArray<ExaResult>,
  provider: string
): ReadonlyArray<Source.SearchResult> =>
  results.map(
    (result) =>
      new Source.SearchResult({
        url: result.url,
        title: typeof result.title === "string" && result.title.trim() !== "" ? result.title.trim() : result.url,
        snippet: snippetOf(result),
        provider,
        ...(typeof result.text === "string" && result.text !== "" ? { rawContent: result.text } : {}),
        ...(typeof result.score === "number" ? { score: result.score } : {}),
        ...(typeof result.publishedDate === "string" && result.publishedDate !== ""
          ? { publishedDate: result.publishedDate }
          : {})
      })
  )

/** One result per requested URL, in order: the page, Exa's reason for failing it, or that it did not answer. */
export const toExtractResults = (
  urls: ReadonlyArray<string>,
  response: typeof ContentsResponse.Type
): ReadonlyArray<Source.ExtractResult> =>
  urls.map((url): Source.ExtractResult => {
    const page = response.results.find((r) => r.url === url || r.id === url)
    if (page !== undefined && typeof page.text === "string" && page.text.trim() !== "") {
      return new Source.ExtractedPage({
        url,
        title: typeof page.title === "string" && page.title.trim() !== "" ? page.title.trim() : url,
        content: page.text,
        contentType: "text/plain"
      })
    }
    const status = response.statuses?.find((s) => s.id === url)
    if (status !== undefined && status.status !== "success") {
      const tag = status.error?.tag ?? "unknown error"
      const code = status.error?.httpStatusCode
      return new Source.ExtractFailure({
        url,
        reason: `Exa could not read the page: ${tag}${code ? ` (${code})` : ""}`
      })
    }
    return new Source.ExtractFailure({
      url,
      reason: page !== undefined ? "Exa returned no text" : "Exa did not return this URL"
    })
  })
