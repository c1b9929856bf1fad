/**
 * Wikipedia through the MediaWiki Action API as a `SearchProvider`, no key needed: a full-text search
 * (`list=search`), then the lead text of the pages found, all in one further request (`prop=extracts|info` over the
 * pipe-joined page ids, plain text, with each page's canonical URL). Any language edition: the one configured, else
 * the question's (`SearchProvider.QuestionLanguage`, set by the pipeline), else English.
 *
 * As documented on mediawiki.org: API:Search (parameters `srsearch`, `srlimit`, `srprop`, `srnamespace`, `srenablerewrites`),
 * Extension:TextExtracts (`exintro`, `explaintext`, `exlimit`; several pages' extracts only with `exintro`), API:Info
 * (`inprop=url`), API:Errors and warnings (an error is `{"error": {"code", "info"}}`, usually with HTTP 200), and
 * API:Etiquette: there is no hard limit on reads, but requests should go in series, several pages in one request
 * (the pipe character) and with a `User-Agent` that identifies the client and a contact (Wikimedia User-Agent policy,
 * meta.wikimedia.org). So this provider sends its requests one at a time, and its default policy is one search a
 * second, one at a time; `ratelimited` and `maxlag` answers are a rate limit to wait out.
 */
import { Errors, Resilience, SearchProvider, Source } from "@deep-research/core"
import type * as HttpClient from "@effect/platform/HttpClient"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Http from "./keyless/http.js"
import * as Identity from "./keyless/identity.js"
import { retryAfterOf } from "./searchHttp.js"

// =============================================================================
// Options
// =============================================================================

/** How to build the Wikipedia search provider. */
export interface Options {
  /**
   * The wiki's root, `{language}` standing for the edition's code; `https://{language}.wikipedia.org` by default. A
   * root without `{language}` is one wiki whatever the language.
   */
  readonly baseUrl?: string | undefined
  /** The edition to search (`de`, `zh`, ...), whatever the question's language. */
  readonly language?: string | undefined
  /** Who runs this client (an e-mail address or a URL), written into the `User-Agent` as Wikimedia asks. */
  readonly contact?: string | undefined
  /** Time limit of one request; 30 s by default. */
  readonly timeout?: Duration.DurationInput | undefined
  /** The name recorded on results and errors; `wikipedia` by default. */
  readonly name?: string | undefined
  /** The HTTP client of its requests: the platform's fetch client by default. */
  readonly httpClient?: HttpClient.HttpClient | undefined
}

/** Every language edition, under its own host. */
export const defaultBaseUrl = "https://{language}.wikipedia.org"

/** The edition searched when neither the options nor the question name one. */
export const defaultLanguage = "en"

/** The default policy (`Resilience.Settings.providers.wikipedia`): requests in series, as API:Etiquette asks. */
export const policy: Resilience.PolicyOverrides = new Resilience.PolicyOverrides({
  requestsPerSecond: 1,
  burst: 2,
  maxConcurrency: 1
})

/** TextExtracts gives at most 20 lead sections in one request. */
const maxResultsPerSearch = 20
const snippetCharacters = 600

// =============================================================================
// Wire format
// =============================================================================

/** An Action API error (`formatversion=2`). */
export const ApiError = Schema.Struct({ code: Schema.String, info: Schema.optional(Schema.String) })
export type ApiError = typeof ApiError.Type

/** One search hit. */
export const SearchHit = Schema.Struct({
  pageid: Schema.Number,
  title: Schema.String,
  snippet: Schema.optional(Schema.String),
  timestamp: Schema.optional(Schema.String)
})
export type SearchHit = typeof SearchHit.Type

/** The fields of a `list=search` answer this provider reads. */
export const SearchResponse = Schema.Struct({
  error: Schema.optional(ApiError),
  // Each hit decoded on its own (`Http.decodeItems`), the unreadable ones dropped.
  query: Schema.optional(Schema.Struct({ search: Schema.Array(Schema.Unknown) }))
})

/** One page's lead text and URL. */
export const Page = Schema.Struct({
  pageid: Schema.optional(Schema.Number),
  title: Schema.String,
  extract: Schema.optional(Schema.String),
  fullurl: Schema.optional(Schema.String),
  missing: Schema.optional(Schema.Boolean)
})
export type Page = typeof Page.Type

/** The fields of a `prop=extracts|info` answer this provider reads. */
export const PagesResponse = Schema.Struct({
  error: Schema.optional(ApiError),
  query: Schema.optional(Schema.Struct({ pages: Schema.Array(Schema.Unknown) }))
})

// =============================================================================
// Constructors
// =============================================================================

/** Builds the search provider. */
export const make = (options: Options = {}): Effect.Effect<SearchProvider.Service> =>
  Effect.gen(function* () {
    const name = options.name ?? "wikipedia"
    const timeout = Duration.decode(options.timeout ?? Duration.seconds(30))
    const headers = { "user-agent": Identity.userAgent(options.contact) }
    // One request at a time, whatever the policy around it says.
    const inSeries = yield* Effect.makeSemaphore(1)

    // An Action API error comes with HTTP 200: it is read from the body, with the answer's `Retry-After`.
    const call = <A extends { readonly error?: ApiError | undefined }, I>(url: string, schema: Schema.Schema<A, I>) =>
      inSeries.withPermits(1)(
        Effect.gen(function* () {
          const answer = yield* Http.get(
            { provider: name, url, headers, accept: "application/json", timeout },
            readError(name),
            options.httpClient
          )
          const body = yield* Http.decodeJson(schema, name, answer)
          if (body.error === undefined) return body
          const now = yield* Clock.currentTimeMillis
          return yield* Effect.fail(apiError(name, body.error, retryAfterOf(answer.headers, now)))
        })
      )

    const search = Effect.fn("Wikipedia.search")(function* (
      query: string,
      searchOptions: SearchProvider.SearchOptions
    ) {
      const asked = yield* Effect.serviceOption(SearchProvider.QuestionLanguage)
      const api = apiUrl(options.baseUrl ?? defaultBaseUrl, editionOf(options.language, Option.getOrUndefined(asked)))
      const found = yield* call(`${api}?${searchParams(query, searchOptions).toString()}`, SearchResponse)
      const listed = (found.query?.search ?? []).slice(0, Math.max(0, searchOptions.maxResults))
      const { decoded: hits } = yield* Http.decodeItems(SearchHit, listed)
      if (hits.length === 0) return []
      const pages = yield* call(`${api}?${pageParams(hits.map((hit) => hit.pageid)).toString()}`, PagesResponse)
      const { decoded: read } = yield* Http.decodeItems(Page, (pages.query?.pages ?? []).slice(0, maxResultsPerSearch))
      return toSearchResults(hits, read, api, name)
    })

    return { name, search }
  })

/** Wikipedia as the `SearchProvider` in context. */
export const layer = (options: Options = {}): Layer.Layer<SearchProvider.SearchProvider> =>
  Layer.effect(SearchProvider.SearchProvider, make(options))

// =============================================================================
// Requests
// =============================================================================

const languageCode = /^[a-z]{2,3}(-[a-z0-9]+)*$/

/** The edition to search: the configured one, else the question's, else English. */
export const editionOf = (configured: string | undefined, question: string | undefined): string => {
  for (const candidate of [configured, question]) {
    const code = candidate?.trim().toLowerCase() ?? ""
    if (languageCode.test(code)) return code
  }
  return defaultLanguage
}

/** The `api.php` of an edition. */
export const apiUrl = (baseUrl: string, language: string): string =>
  `${baseUrl.replace(/\{language\}/g, language).replace(/\/+$/, "")}/w/api.php`

/** The query string of the search: articles only, with their snippets and last edit time. */
export const searchParams = (query: string, options: SearchProvider.SearchOptions): URLSearchParams =>
  new URLSearchParams({
    action: "query",
    list: "search",
    srsearch: query,
    srnamespace: "0",
    srlimit: String(Math.max(1, Math.min(maxResultsPerSearch, options.maxResults))),
    srprop: "snippet|timestamp",
    // API:Search: let the search engine rewrite a query that finds little (spelling, a near title) into one that finds
    srenablerewrites: "1",
    format: "json",
    formatversion: "2"
  })

/** The query string of the pages' lead text (plain) and canonical URLs. */
export const pageParams = (pageIds: ReadonlyArray<number>): URLSearchParams =>
  new URLSearchParams({
    action: "query",
    prop: "extracts|info",
    pageids: pageIds.join("|"),
    exintro: "1",
    explaintext: "1",
    exlimit: "max",
    inprop: "url",
    format: "json",
    formatversion: "2"
  })

// =============================================================================
// Errors
// =============================================================================

/** An Action API error in core's terms: `ratelimited` and `maxlag` are waited out, a bad parameter is ours. */
export const apiError = (provider: string, error: ApiError, retryAfter?: Duration.Duration): Errors.ProviderError => {
  const detail = `${error.code}: ${error.info ?? "no detail"}`
  switch (error.code) {
    case "ratelimited":
    case "maxlag":
      return new Errors.ProviderRateLimited({ provider, ...(retryAfter !== undefined ? { retryAfter } : {}) })
    case "readonly":
      return new Errors.ProviderUnavailable({ provider, detail })
    default:
      return error.code.startsWith("internal_api_error")
        ? new Errors.ProviderUnavailable({ provider, detail })
        : new Errors.ProviderInvalidRequest({ provider, detail })
  }
}

/** A non-2xx answer: the Action API's own error body when it sent one, with its `Retry-After`. */
const readError =
  (provider: string): Http.ErrorReading =>
  (answer, now) => {
    const body = Schema.decodeUnknownOption(Schema.parseJson(Schema.Struct({ error: ApiError })))(answer.text)
    return Option.isSome(body) ? apiError(provider, body.value.error, retryAfterOf(answer.headers, now)) : undefined
  }

// =============================================================================
// Mapping
// =============================================================================

const entities: Readonly<Record<string, string>> = { amp: "&", lt: "<", gt: ">", quot: '"', "#039": "'", apos: "'" }

/** A search snippet's HTML (match highlighting) as text. */
export const snippetText = (html: string): string =>
  html
    .replace(/<[^>]*>/g, "")
    .replace(/&(amp|lt|gt|quot|#039|apos);/g, (_, entity: string) => entities[entity] ?? "")
    .replace(/\s+/g, " ")
    .trim()

const truncate = (text: string, length: number): string =>
  text.length > length ? `${text.slice(0, length).replace(/\s+\S*$/, "")}…` : text

/** Search hits in their rank, each with its page's lead text and URL. */
export const toSearchResults = (
  hits: ReadonlyArray<SearchHit>,
  pages: ReadonlyArray<Page>,
  api: string,
  provider: string
): ReadonlyArray<Source.SearchResult> => {
  const wiki = api.replace(/\/w\/api\.php$/, "")
  return hits.map((hit, i) => {
    const page = pages.find((p) => p.pageid === hit.pageid) ?? pages.find((p) => p.title === hit.title)
    const text = (page?.extract ?? "").trim()
    const snippet =
      text !== "" ? truncate(text.replace(/\s+/g, " "), snippetCharacters) : snippetText(hit.snippet ?? "")
    return new Source.SearchResult({
      url: page?.fullurl ?? `${wiki}/wiki/${encodeURIComponent(hit.title.replace(/ /g, "_"))}`,
      title: hit.title,
      snippet,
      ...(text !== "" ? { rawContent: text } : {}),
      score: 1 - i / Math.max(hits.length, 1),
      provider
    })
  })
}
