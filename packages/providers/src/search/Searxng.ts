/**
 * A SearXNG instance (`GET /search?format=json`) as a `SearchProvider`: web search through the engines a user's own
 * metasearch instance queries, with no key. There is no default instance (`SEARXNG_URL`): public instances mostly turn
 * the JSON format off, and a user runs their own.
 *
 * As documented at docs.searxng.org ("Search API"): `q`, `format=json` (answered only when the instance lists `json`
 * under `search.formats` in its settings.yml, else 403), `pageno`, `language`, `time_range` (`day`, `month`, `year`);
 * the answer's `results[]` (`url`, `title`, `content`, `engine`, `publishedDate`) and `unresponsive_engines` (pairs of
 * an engine and why it did not answer). An answer with no result while engines failed is no "nothing found": it is the
 * instance unable to search for the moment. A result that cannot be read (one without a URL) is dropped and counted (a log
 * line and the span's `deep_research.search.dropped_results`); the others are kept. An instance publishes no rate limit (its limiter plugin answers 429); the
 * default search policy applies.
 */
import { Errors, SearchProvider, Source } from "@deep-research/core"
import type * as HttpClient from "@effect/platform/HttpClient"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Http from "./keyless/http.js"
import * as Identity from "./keyless/identity.js"

// =============================================================================
// Options
// =============================================================================

/** How to build the SearXNG search provider. */
export interface Options {
  /** The instance's root, e.g. `http://127.0.0.1:8888`. Required: there is no default instance. */
  readonly url: string
  /** The search language (`de`, `fr-FR`, ...), whatever the question's language. */
  readonly language?: string | undefined
  /** Who runs this client, written into the `User-Agent`. */
  readonly contact?: string | undefined
  /** Time limit of one request; 30 s by default (the instance waits for its slowest engine). */
  readonly timeout?: Duration.DurationInput | undefined
  /** The name recorded on results and errors; `searxng` by default. */
  readonly name?: string | undefined
  /** The HTTP client of its requests: the platform's fetch client by default. */
  readonly httpClient?: HttpClient.HttpClient | undefined
}

// =============================================================================
// Wire format
// =============================================================================

const OptionalText = Schema.optional(Schema.NullOr(Schema.String))

/** One result. */
export const Result = Schema.Struct({
  url: Schema.String,
  title: OptionalText,
  content: OptionalText,
  engine: OptionalText,
  publishedDate: OptionalText
})

/**
 * The fields of a search answer this provider reads. Each result is read on its own (`readResults`): an engine's result
 * without a URL costs that result, never the answer.
 */
export const SearchResponse = Schema.Struct({
  results: Schema.optionalWith(Schema.Array(Schema.Unknown), { default: () => [] }),
  unresponsive_engines: Schema.optionalWith(Schema.Array(Schema.Array(Schema.Unknown)), { default: () => [] })
})
export type SearchResponse = typeof SearchResponse.Type
export type Result = typeof Result.Type

const decodeResult = Schema.decodeUnknownOption(Result)

/** The results that can be read, and how many could not (no URL, not an object). */
export const readResults = (
  response: SearchResponse
): { readonly results: ReadonlyArray<Result>; readonly dropped: number } => {
  const results = response.results.flatMap((raw) => Option.toArray(decodeResult(raw)))
  return { results, dropped: response.results.length - results.length }
}

// =============================================================================
// Constructors
// =============================================================================

/** Builds the search provider. */
export const make = (options: Options): SearchProvider.Service => {
  const name = options.name ?? "searxng"
  const root = options.url.replace(/\/+$/, "")
  const timeout = Duration.decode(options.timeout ?? Duration.seconds(30))
  const headers = { "user-agent": Identity.userAgent(options.contact) }

  const search = Effect.fn("Searxng.search")(function* (query: string, searchOptions: SearchProvider.SearchOptions) {
    const asked = yield* Effect.serviceOption(SearchProvider.QuestionLanguage)
    const language = options.language ?? Option.getOrUndefined(asked)
    const answer = yield* Http.get(
      {
        provider: name,
        url: `${root}/search?${searchParams(query, searchOptions, language).toString()}`,
        headers,
        accept: "application/json",
        timeout
      },
      readError(name),
      options.httpClient
    )
    const response = yield* Http.decodeJson(SearchResponse, name, answer)
    const { decoded: results, dropped } = yield* Http.decodeItems(Result, response.results)
    yield* Effect.annotateCurrentSpan("deep_research.search.dropped_results", dropped)
    if (dropped > 0)
      yield* Effect.logWarning(
        `${name}: ${dropped} of ${response.results.length} results had no URL or could not be read; dropped`
      )
    const unanswered = unresponsive(response)
    if (results.length === 0 && (unanswered.length > 0 || dropped > 0)) {
      return yield* new Errors.ProviderUnavailable({
        provider: name,
        detail:
          dropped > 0
            ? `none of the instance's ${dropped} results could be read (no URL)`
            : `no engine answered (${unanswered.join("; ")})`
      })
    }
    return toSearchResults(results, Math.max(0, searchOptions.maxResults), name)
  })

  return { name, search }
}

/** SearXNG as the `SearchProvider` in context. */
export const layer = (options: Options): Layer.Layer<SearchProvider.SearchProvider> =>
  Layer.succeed(SearchProvider.SearchProvider, make(options))

// =============================================================================
// Requests
// =============================================================================

/** SearXNG's time ranges; a week is searched as the month around it (the documented ranges have no week). */
const timeRanges: Readonly<Record<NonNullable<SearchProvider.SearchOptions["timeRange"]>, string>> = {
  day: "day",
  week: "month",
  month: "month",
  year: "year"
}

/** The query string of a search. */
export const searchParams = (
  query: string,
  options: SearchProvider.SearchOptions,
  language: string | undefined
): URLSearchParams => {
  const params = new URLSearchParams({ q: query, format: "json", pageno: "1" })
  if (language !== undefined && language.trim() !== "") params.set("language", language.trim())
  if (options.timeRange !== undefined) params.set("time_range", timeRanges[options.timeRange])
  return params
}

// =============================================================================
// Errors
// =============================================================================

/** A 403 is the instance refusing the JSON format (a setting of the instance, not a key), which no retry changes. */
const readError =
  (provider: string): Http.ErrorReading =>
  (answer) =>
    answer.status === 403
      ? new Errors.ProviderInvalidRequest({
          provider,
          detail: "403: the instance does not answer format=json; add json to search.formats in its settings.yml"
        })
      : undefined

/** The engines that did not answer, each with its reason. */
export const unresponsive = (response: SearchResponse): ReadonlyArray<string> =>
  response.unresponsive_engines.map((pair) => pair.filter((part) => typeof part === "string").join(": "))

// =============================================================================
// Mapping
// =============================================================================

/** The results in the instance's order, at most `maxResults`. */
export const toSearchResults = (
  readable: ReadonlyArray<Result>,
  maxResults: number,
  provider: string
): ReadonlyArray<Source.SearchResult> => {
  const results = readable.slice(0, maxResults)
  return results.map(
    (result, i) =>
      new Source.SearchResult({
        url: result.url,
        title: typeof result.title === "string" && result.title.trim() !== "" ? result.title.trim() : result.url,
        snippet: (result.content ?? "").replace(/\s+/g, " ").trim(),
        score: 1 - i / Math.max(results.length, 1),
        provider,
        ...(typeof result.publishedDate === "string" && result.publishedDate !== ""
          ? { publishedDate: result.publishedDate.slice(0, 10) }
          : {})
      })
  )
}
