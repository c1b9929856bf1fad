/**
 * arXiv through its API (`GET /api/query`, an Atom feed) as a `SearchProvider`, no key needed: e-prints with their
 * title, authors, abstract, year, primary category or journal reference, DOI, and the abstract page as the source
 * (its PDF named for a researcher who reads the full text: the extractor reads PDFs). An e-print without a journal
 * reference is marked a preprint.
 *
 * As documented in the arXiv API User's Manual (info.arxiv.org/help/api/user-manual): `search_query` with field
 * prefixes (`all:`), `start`, `max_results`, `sortBy`/`sortOrder`; the feed's `opensearch:totalResults`, each entry's
 * `id`, `published`, `title`, `summary`, `author/name`, `link` (`rel="alternate"`: the abstract page; `title="pdf"`: the
 * PDF), `arxiv:primary_category`, `arxiv:journal_ref`, `arxiv:doi`; errors come as a feed of one entry whose id is
 * under `http://arxiv.org/api/errors` (section 3.4). The Terms of Use for arXiv APIs (info.arxiv.org/help/api/tou)
 * ask for no more than one request every three seconds, on a single connection at a time: this provider spaces its
 * own requests so (Effect's `RateLimiter`, one token per three seconds, and one request in flight), whatever policy is
 * around it, and its default policy asks for the same. Two faults of the service are read as what they are: an empty
 * page of a non-empty result (a transient fault clients retry) and a 503 with `Retry-After` (the service's way of
 * saying slow down).
 */
import { Errors, Resilience, SearchProvider, Source } from "@deep-research/core"
import type * as HttpClient from "@effect/platform/HttpClient"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as RateLimiter from "effect/RateLimiter"
import type * as Scope from "effect/Scope"
import * as Http from "./keyless/http.js"
import * as Identity from "./keyless/identity.js"
import { collapse, type Paper, toSearchResults } from "./keyless/scholarly.js"
import * as QueryTerms from "./keyless/queryTerms.js"
import * as Xml from "./keyless/xml.js"
import { retryAfterOf } from "./searchHttp.js"

// =============================================================================
// Options
// =============================================================================

/** How to build the arXiv search provider. */
export interface Options {
  /** e.g. `http://127.0.0.1:8080/arxiv/api`. Defaults to arXiv's export API. */
  readonly baseUrl?: string | undefined
  /** Who runs this client (an e-mail address or a URL), written into the `User-Agent`. */
  readonly contact?: string | undefined
  /** Time limit of one request; 30 s by default. */
  readonly timeout?: Duration.DurationInput | undefined
  /** The least time between two requests; three seconds, as the Terms of Use ask, by default. */
  readonly interval?: Duration.DurationInput | undefined
  /** The name recorded on results and errors; `arxiv` by default. */
  readonly name?: string | undefined
  /** The HTTP client of its requests: the platform's fetch client by default. */
  readonly httpClient?: HttpClient.HttpClient | undefined
}

/** The export API, as the manual names it. */
export const defaultBaseUrl = "https://export.arxiv.org/api"

/** One request every three seconds (Terms of Use for arXiv APIs, "Rate limits"). */
export const requestInterval = Duration.seconds(3)

/** The default policy (`Resilience.Settings.providers.arxiv`): a search every three seconds, one at a time. */
export const policy: Resilience.PolicyOverrides = new Resilience.PolicyOverrides({
  requestsPerSecond: 1 / 3,
  burst: 1,
  maxRequestsPerSecond: 1 / 3,
  maxConcurrency: 1
})

const maxResultsPerSearch = 50

// =============================================================================
// Constructors
// =============================================================================

/** Builds the search provider; its pacing lives as long as the scope. */
export const make = (options: Options = {}): Effect.Effect<SearchProvider.Service, never, Scope.Scope> =>
  Effect.gen(function* () {
    const name = options.name ?? "arxiv"
    const baseUrl = (options.baseUrl ?? defaultBaseUrl).replace(/\/+$/, "")
    const timeout = Duration.decode(options.timeout ?? Duration.seconds(30))
    const headers = { "user-agent": Identity.userAgent(options.contact) }
    const paced = yield* RateLimiter.make({ limit: 1, interval: options.interval ?? requestInterval })
    const connection = yield* Effect.makeSemaphore(1)

    const ask = (params: URLSearchParams) =>
      connection.withPermits(1)(
        paced(
          Http.get(
            {
              provider: name,
              url: `${baseUrl}/query?${params.toString()}`,
              headers,
              accept: "application/atom+xml",
              timeout
            },
            readError(name),
            options.httpClient
          )
        )
      )

    // Every term first; when no paper has them all, any of them (one request more, three seconds later).
    const search = Effect.fn("Arxiv.search")(function* (query: string, searchOptions: SearchProvider.SearchOptions) {
      const now = yield* Clock.currentTimeMillis
      const narrow = searchParams(query, searchOptions, now, "narrow")
      if (narrow === undefined) return []
      const found = yield* Effect.flatMap(ask(narrow), (answer) => readFeed(name, answer))
      const wide = searchParams(query, searchOptions, now, "wide")
      if (found.length > 0 || wide === undefined || wide.toString() === narrow.toString()) return found
      return yield* Effect.flatMap(ask(wide), (answer) => readFeed(name, answer))
    })

    return { name, search }
  })

/** arXiv as the `SearchProvider` in context. */
export const layer = (options: Options = {}): Layer.Layer<SearchProvider.SearchProvider> =>
  Layer.scoped(SearchProvider.SearchProvider, make(options))

// =============================================================================
// Requests
// =============================================================================

const dayMillis = 24 * 60 * 60 * 1000
const rangeDays: Readonly<Record<NonNullable<SearchProvider.SearchOptions["timeRange"]>, number>> = {
  day: 1,
  week: 7,
  month: 31,
  year: 366
}

/** `YYYYMMDDHHMM`, the form of a `submittedDate` range. */
const stamp = (millis: number): string => new Date(millis).toISOString().replace(/[-:T]/g, "").slice(0, 12)

/** One term in arXiv's grammar: a word, or a phrase in double quotes, searched in every field. */
const arxivTerm = (term: QueryTerms.Term): string =>
  term.words.length === 1 ? `all:${term.words[0]}` : `all:"${term.words.join(" ")}"`

/**
 * The query's content terms in arXiv's grammar (API User's Manual, "query interface": field prefixes, `AND`, `OR`,
 * double-quoted phrases): every term required (`AND`), so that a paper about the whole subject ranks first, or, for the
 * wider query tried when that finds nothing, any of them (`OR`). Question and stop words are out and every operator
 * and special character neutralised (`keyless/queryTerms.ts`); a time range becomes a `submittedDate` range. Undefined
 * when nothing searchable is left.
 */
export const searchQuery = (
  query: string,
  timeRange: SearchProvider.SearchOptions["timeRange"],
  now: number,
  breadth: "narrow" | "wide" = "narrow"
): string | undefined => {
  const terms = QueryTerms.contentTerms(query).slice(0, QueryTerms.maxTerms)
  if (terms.length === 0) return undefined
  const words = terms.map(arxivTerm).join(breadth === "narrow" ? " AND " : " OR ")
  if (timeRange === undefined) return words
  return `(${words}) AND submittedDate:[${stamp(now - rangeDays[timeRange] * dayMillis)} TO ${stamp(now)}]`
}

/** A source policy's date window as a `submittedDate` range (`YYYYMMDDHHMM`, both ends inclusive), if there is one. */
const submittedWindow = (options: SearchProvider.SearchOptions): string | undefined =>
  options.since === undefined && options.until === undefined
    ? undefined
    : `submittedDate:[${(options.since ?? "1991-01-01").replace(/-/g, "")}0000 TO ${(options.until ?? "9999-12-31").replace(/-/g, "")}2359]`

/** The query string of a search, or undefined when the query has nothing to search for. */
export const searchParams = (
  query: string,
  options: SearchProvider.SearchOptions,
  now: number,
  breadth: "narrow" | "wide" = "narrow"
): URLSearchParams | undefined => {
  const window = submittedWindow(options)
  const words = searchQuery(query, window === undefined ? options.timeRange : undefined, now, breadth)
  const searchQueryText = words === undefined || window === undefined ? words : `(${words}) AND ${window}`
  if (searchQueryText === undefined) return undefined
  return new URLSearchParams({
    search_query: searchQueryText,
    start: "0",
    max_results: String(Math.max(1, Math.min(maxResultsPerSearch, options.maxResults))),
    sortBy: "relevance",
    sortOrder: "descending"
  })
}

// =============================================================================
// Errors
// =============================================================================

const errorsPrefix = "http://arxiv.org/api/errors"

/** The message of an error feed (one entry under `http://arxiv.org/api/errors`), if the feed is one. */
export const errorMessage = (feed: Xml.Node): string | undefined => {
  const entry = Xml.first(feed, "entry")
  if (entry === undefined) return undefined
  const id = Xml.textOf(entry, "id") ?? ""
  return id.replace(/^https:/, "http:").startsWith(errorsPrefix) ? (Xml.textOf(entry, "summary") ?? id) : undefined
}

/**
 * A non-2xx answer: an error feed is a refused request; a 503 (or a 429) is arXiv asking to slow down, for as long as
 * its `Retry-After` says or else the three seconds of its published limit.
 */
const readError =
  (provider: string): Http.ErrorReading =>
  (answer, now) => {
    if (answer.status === 503 || answer.status === 429) {
      const retryAfter = retryAfterOf(answer.headers, now)
      if (answer.status === 429 || retryAfter !== undefined) {
        return new Errors.ProviderRateLimited({ provider, retryAfter: retryAfter ?? requestInterval })
      }
      return undefined
    }
    const feed = Xml.parseShort(answer.text, "feed")
    const message = feed === undefined ? undefined : errorMessage(feed)
    return message === undefined
      ? undefined
      : new Errors.ProviderInvalidRequest({ provider, detail: `${answer.status} ${message}` })
  }

// =============================================================================
// Mapping
// =============================================================================

const linkOf = (entry: Xml.Node, match: (link: Xml.Node) => boolean): string | undefined => {
  const link = Xml.all(entry, "link").find(match)
  return link === undefined ? undefined : Xml.attribute(link, "href")
}

/** One feed entry as a paper. */
export const paperOf = (entry: Xml.Node): Paper | undefined => {
  const id = Xml.textOf(entry, "id")
  const abs = linkOf(entry, (link) => Xml.attribute(link, "rel") === "alternate") ?? id
  if (abs === undefined) return undefined
  const published = Xml.textOf(entry, "published")
  const year = published === undefined ? undefined : Number(published.slice(0, 4))
  const journal = Xml.textOf(entry, "arxiv:journal_ref")
  const primary = Xml.first(entry, "arxiv:primary_category")
  const category = primary === undefined ? undefined : Xml.attribute(primary, "term")
  const doi = Xml.textOf(entry, "arxiv:doi")
  return {
    url: abs.replace(/^http:\/\//, "https://"),
    title: collapse(Xml.textOf(entry, "title") ?? ""),
    abstract: collapse(Xml.textOf(entry, "summary") ?? ""),
    work: new Source.Work({
      authors: Xml.all(entry, "author").flatMap((author) => {
        const authorName = Xml.textOf(author, "name")
        return authorName === undefined ? [] : [authorName]
      }),
      ...(year !== undefined && Number.isInteger(year) ? { year } : {}),
      venue: journal ?? (category === undefined ? "arXiv" : `arXiv (${category})`),
      ...(doi !== undefined ? { doi } : {}),
      preprint: journal === undefined
    }),
    publishedDate: published?.slice(0, 10),
    fullText: linkOf(entry, (link) => Xml.attribute(link, "title") === "pdf")?.replace(/^http:\/\//, "https://")
  }
}

/**
 * The results of a feed. An error feed is a refused request; an empty page of a result arXiv counts as non-empty is
 * its known transient fault, retried as the provider being unavailable for the moment.
 */
export const readFeed = (
  provider: string,
  answer: Http.Answer
): Effect.Effect<ReadonlyArray<Source.SearchResult>, Errors.ProviderError> =>
  Effect.gen(function* () {
    const feed = yield* Xml.parse(answer.text, "feed", provider)
    if (feed === undefined) {
      return yield* new Errors.ProviderUnavailable({
        provider,
        status: answer.status,
        detail: `the answer was no Atom feed: ${answer.text.slice(0, 200)}`
      })
    }
    const message = errorMessage(feed)
    if (message !== undefined) return yield* new Errors.ProviderInvalidRequest({ provider, detail: message })
    const entries = Xml.all(feed, "entry")
    const total = Number(Xml.textOf(feed, "opensearch:totalResults") ?? "0")
    if (entries.length === 0 && Number.isFinite(total) && total > 0) {
      return yield* new Errors.ProviderUnavailable({
        provider,
        status: answer.status,
        detail: `arXiv counted ${total} results but sent an empty page`
      })
    }
    const papers = yield* Xml.mapYielding(entries, (entry) => {
      const paper = paperOf(entry)
      return paper === undefined ? [] : [paper]
    })
    return toSearchResults(papers, provider)
  })
