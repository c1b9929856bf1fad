/**
 * Perplexity Sonar as a `SearchProvider`. Sonar is a chat model that searches the web and answers with citations; its
 * API is OpenAI-compatible, so it is called through the `openai` SDK (retries off: policy lives in core). The results
 * are the answer's `search_results` (title, URL, date, snippet) or, from models that only return them, its
 * `citations` (URLs). A result without a snippet gets the sentences of the answer that cite it.
 */
import { Errors, Resilience, SearchProvider, Source, SourcePolicy } from "@deep-research/core"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import OpenAI from "openai"
import type { ChatCompletionCreateParamsNonStreaming } from "openai/resources/chat/completions"
import { fetchKeepingErrorBodies, toProviderError } from "../models/openaiErrors.js"
import * as Environment from "../Environment.js"

// =============================================================================
// Options
// =============================================================================

/** How to build the Perplexity search provider. */
export interface Options {
  readonly apiKey: Redacted.Redacted
  /** e.g. `http://127.0.0.1:8080/perplexity`. Defaults to Perplexity's own API. */
  readonly baseUrl?: string | undefined
  /** The Sonar model; `sonar` by default. */
  readonly model?: string | undefined
  /** Time limit of one request; 60 s by default (Sonar searches before it answers). */
  readonly timeout?: Duration.DurationInput | undefined
  /** How much web context Sonar gathers: `low` (default, cheapest), `medium` or `high`. */
  readonly searchContextSize?: "low" | "medium" | "high" | undefined
  /** The name recorded on results and errors; `perplexity` by default. */
  readonly name?: string | undefined
}

/** Perplexity's API. */
export const defaultBaseUrl = "https://api.perplexity.ai"

/**
 * The resilience policy Perplexity gets by default (`Resilience.Settings.providers.perplexity`): the lowest usage
 * tier allows 50 Sonar requests a minute.
 */
export const policy: Resilience.PolicyOverrides = new Resilience.PolicyOverrides({
  requestsPerSecond: 50 / 60,
  burst: 3
})

const systemPrompt =
  "You are a search engine. Find the most relevant, authoritative sources for the query and answer briefly, " +
  "citing every statement with [n]."

// =============================================================================
// Wire format
// =============================================================================

const OptionalText = Schema.optional(Schema.NullOr(Schema.String))

/** The fields of a Sonar answer this provider reads. */
export const SonarResponse = Schema.Struct({
  choices: Schema.optional(
    Schema.Array(Schema.Struct({ message: Schema.optional(Schema.Struct({ content: OptionalText })) }))
  ),
  citations: Schema.optional(Schema.NullOr(Schema.Array(Schema.String))),
  search_results: Schema.optional(
    Schema.NullOr(
      Schema.Array(
        Schema.Struct({
          url: Schema.String,
          title: OptionalText,
          snippet: OptionalText,
          date: OptionalText,
          last_updated: OptionalText
        })
      )
    )
  )
})
export type SonarResponse = typeof SonarResponse.Type

type SonarRequest = ChatCompletionCreateParamsNonStreaming & {
  readonly search_domain_filter?: ReadonlyArray<string>
  readonly search_recency_filter?: "hour" | "day" | "week" | "month" | "year"
  readonly search_after_date_filter?: string
  readonly search_before_date_filter?: string
  readonly web_search_options?: { readonly search_context_size: "low" | "medium" | "high" }
}

// =============================================================================
// Constructors
// =============================================================================

/** Builds the search provider. */
export const make = (options: Options): SearchProvider.Service => {
  const name = options.name ?? "perplexity"
  const model = options.model ?? "sonar"
  const timeout = Duration.decode(options.timeout ?? Duration.seconds(60))
  const key = Redacted.value(options.apiKey)
  const client =
    key === ""
      ? undefined
      : new OpenAI({
          apiKey: key,
          baseURL: options.baseUrl ?? defaultBaseUrl,
          maxRetries: 0,
          timeout: Duration.toMillis(timeout),
          fetch: fetchKeepingErrorBodies()
        })

  const search = Effect.fn("Perplexity.search")(function* (query: string, searchOptions: SearchProvider.SearchOptions) {
    if (client === undefined) {
      return yield* new Errors.ProviderAuthenticationFailed({
        provider: name,
        detail: "no Perplexity API key was given"
      })
    }
    const request = sonarRequest(query, searchOptions, model, options.searchContextSize ?? "low")
    const raw: unknown = yield* Effect.tryPromise({
      try: (signal) => client.chat.completions.create(request, { signal }),
      catch: (error) => toProviderError(error, { provider: name, model, timeout })
    })
    const response = yield* Schema.decodeUnknown(SonarResponse)(raw).pipe(
      Effect.mapError(
        (error) =>
          new Errors.ProviderUnavailable({
            provider: name,
            detail: `unreadable answer: ${ParseResult.TreeFormatter.formatErrorSync(error)}`
          })
      )
    )
    return toSearchResults(response, name, searchOptions).slice(0, Math.max(0, searchOptions.maxResults))
  })

  return { name, search }
}

/** Perplexity as the `SearchProvider` in context. */
export const layer = (options: Options): Layer.Layer<SearchProvider.SearchProvider> =>
  Layer.succeed(SearchProvider.SearchProvider, make(options))

/** The key from `PERPLEXITY_API_KEY` and the base URL from `PERPLEXITY_BASE_URL` (if set). */
export const config: Config.Config<{ readonly apiKey: Redacted.Redacted; readonly baseUrl: string | undefined }> =
  Config.all({
    apiKey: Config.redacted(Config.nonEmptyString(Environment.perplexityApiKey)),
    baseUrl: Config.option(Config.nonEmptyString(Environment.perplexityBaseUrl)).pipe(Config.map(Option.getOrUndefined))
  })

/** The search provider, configured from the environment (or whatever `ConfigProvider` is installed). */
export const layerConfig = (
  options: Omit<Options, "apiKey" | "baseUrl"> = {}
): Layer.Layer<SearchProvider.SearchProvider, ConfigError.ConfigError> =>
  Layer.unwrapEffect(Effect.map(config, (fromConfig) => layer({ ...options, ...fromConfig })))

// =============================================================================
// Mapping
// =============================================================================

/** A day (`YYYY-MM-DD`) as Sonar's date filters take it: `%m/%d/%Y`. */
const sonarDate = (day: string): string => {
  const [year, month, date] = day.split("-")
  return `${month}/${date}/${year}`
}

/**
 * The chat request for a query: domain filters (a `-` marks an excluded domain), and a date window (a source policy's)
 * as Sonar's published-date filters, else a recent time range as its recency filter.
 */
export const sonarRequest = (
  query: string,
  options: SearchProvider.SearchOptions,
  model: string,
  searchContextSize: "low" | "medium" | "high"
): SonarRequest => {
  const domains = [...(options.includeDomains ?? []), ...(options.excludeDomains ?? []).map((domain) => `-${domain}`)]
  return {
    model,
    messages: [
      { role: "system", content: systemPrompt },
      { role: "user", content: query }
    ],
    web_search_options: { search_context_size: searchContextSize },
    ...(domains.length > 0 ? { search_domain_filter: domains } : {}),
    ...(options.timeRange !== undefined && options.since === undefined && options.until === undefined
      ? { search_recency_filter: options.timeRange }
      : {}),
    ...(options.since !== undefined ? { search_after_date_filter: sonarDate(options.since) } : {}),
    ...(options.until !== undefined ? { search_before_date_filter: sonarDate(options.until) } : {})
  }
}

/**
 * The sentences of the answer that cite source `n` (1-based), markers removed: only those whose every source the
 * search's domain filters admit, so that a sentence drawn from a page the source policy removes does not reach the
 * research as another source's words.
 */
const citingSentences = (answer: string, n: number, admits: (cited: number) => boolean): string =>
  answer
    .split(/(?<=[.!?])\s+/)
    .filter((sentence) => {
      const cited = [...sentence.matchAll(/\[(\d+)\]/g)].map((match) => Number(match[1]))
      return cited.includes(n) && cited.every(admits)
    })
    .map((sentence) => sentence.replace(/\s*\[\d+\]/g, "").trim())
    .join(" ")

const hostOf = (url: string): string => {
  try {
    return new URL(url).hostname
  } catch {
    return url
  }
}

/** Search results from `search_results`, else from `citations`; ranked in the order Perplexity gives them. */
export const toSearchResults = (
  response: SonarResponse,
  provider: string,
  options: Pick<SearchProvider.SearchOptions, "includeDomains" | "excludeDomains"> = {}
): ReadonlyArray<Source.SearchResult> => {
  const answer = response.choices?.[0]?.message?.content ?? ""
  const citations = response.citations ?? []
  // A marker the citations do not list names no page: nothing to hold against the filters.
  const admits = (cited: number) => {
    const url = citations[cited - 1]
    return url === undefined || SourcePolicy.admitsUrl(url, options)
  }
  const fromSearch = response.search_results ?? []
  const items =
    fromSearch.length > 0
      ? fromSearch.map((r) => ({
          url: r.url,
          title: r.title ?? undefined,
          snippet: r.snippet ?? undefined,
          date: r.date ?? r.last_updated ?? undefined
        }))
      : citations.map((url) => ({ url, title: undefined, snippet: undefined, date: undefined }))
  return items.map((item, i) => {
    // the answer's [n] markers number the citations list; search_results usually follow the same order
    const citationIndex = citations.indexOf(item.url)
    const cited = citingSentences(answer, (citationIndex >= 0 ? citationIndex : i) + 1, admits)
    const snippet = item.snippet !== undefined && item.snippet.trim() !== "" ? item.snippet.trim() : cited
    return new Source.SearchResult({
      url: item.url,
      title: item.title !== undefined && item.title.trim() !== "" ? item.title.trim() : hostOf(item.url),
      snippet,
      score: 1 - i / Math.max(items.length, 1),
      provider,
      ...(item.date !== undefined && item.date !== "" ? { publishedDate: item.date } : {})
    })
  })
}
