/**
 * Semantic Scholar paper search (Graph API `GET /paper/search`) as a `SearchProvider`: scholarly sources with their
 * abstracts, year, venue, authors and citation count. The key (header `x-api-key`) is optional; without one,
 * requests share Semantic Scholar's public pool and are rate limited sooner.
 */
import { Errors, Resilience, SearchProvider, Source } from "@deep-research/core"
import * as Clock from "effect/Clock"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
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

/** How to build the Semantic Scholar search provider. */
export interface Options {
  /** Optional: without a key, requests go to the shared public pool. */
  readonly apiKey?: Redacted.Redacted | undefined
  /** e.g. `http://127.0.0.1:8080/semantic-scholar/graph/v1`. Defaults to the Graph API. */
  readonly baseUrl?: string | undefined
  /** Time limit of one request; 30 s by default. */
  readonly timeout?: Duration.DurationInput | undefined
  /** The name recorded on results and errors; `semantic-scholar` by default. */
  readonly name?: string | undefined
  /** The HTTP client of its requests: the platform's fetch client by default; a test or a host may give its own. */
  readonly httpClient?: HttpClient.HttpClient | undefined
}

/** The Graph API. */
export const defaultBaseUrl = "https://api.semanticscholar.org/graph/v1"

/**
 * The resilience policy Semantic Scholar gets by default (`Resilience.Settings.providers["semantic-scholar"]`): a key
 * starts at 1 request a second, and the keyless pool is shared and smaller still.
 */
export const policy: Resilience.PolicyOverrides = new Resilience.PolicyOverrides({ requestsPerSecond: 1, burst: 1 })

/** The paper fields requested. */
export const fields = "title,url,abstract,year,venue,authors,citationCount,publicationDate,externalIds,openAccessPdf"

const maxResultsPerSearch = 100
const snippetCharacters = 600

// =============================================================================
// Wire format
// =============================================================================

const OptionalText = Schema.optional(Schema.NullOr(Schema.String))

const Paper = Schema.Struct({
  paperId: Schema.String,
  title: OptionalText,
  url: OptionalText,
  abstract: OptionalText,
  year: Schema.optional(Schema.NullOr(Schema.Number)),
  venue: OptionalText,
  publicationDate: OptionalText,
  citationCount: Schema.optional(Schema.NullOr(Schema.Number)),
  authors: Schema.optional(Schema.NullOr(Schema.Array(Schema.Struct({ name: OptionalText })))),
  externalIds: Schema.optional(Schema.NullOr(Schema.Record({ key: Schema.String, value: Schema.Unknown }))),
  openAccessPdf: Schema.optional(Schema.NullOr(Schema.Struct({ url: OptionalText })))
})
type Paper = typeof Paper.Type

/** The fields of a paper-search answer this provider reads. */
export const SearchResponse = Schema.Struct({
  total: Schema.optional(Schema.Number),
  data: Schema.optionalWith(Schema.Array(Paper), { default: () => [] })
})

// =============================================================================
// Constructors
// =============================================================================

/** Builds the search provider. */
export const make = (options: Options = {}): SearchProvider.Service => {
  const name = options.name ?? "semantic-scholar"
  const baseUrl = (options.baseUrl ?? defaultBaseUrl).replace(/\/+$/, "")
  const timeout = Duration.decode(options.timeout ?? Duration.seconds(30))
  const key = options.apiKey === undefined ? "" : Redacted.value(options.apiKey)

  const search = Effect.fn("SemanticScholar.search")(function* (
    query: string,
    searchOptions: SearchProvider.SearchOptions
  ) {
    const now = yield* Clock.currentTimeMillis
    const raw = yield* requestJson(
      {
        provider: name,
        method: "GET",
        url: `${baseUrl}/paper/search?${searchParams(query, searchOptions, now).toString()}`,
        headers: key === "" ? {} : { "x-api-key": key },
        timeout
      },
      options.httpClient
    )
    const response = yield* Schema.decodeUnknown(SearchResponse)(raw).pipe(
      Effect.mapError(
        (error) =>
          new Errors.ProviderUnavailable({
            provider: name,
            detail: `unreadable answer: ${ParseResult.TreeFormatter.formatErrorSync(error)}`
          })
      )
    )
    return toSearchResults(response.data.slice(0, Math.max(0, searchOptions.maxResults)), name)
  })

  return { name, search }
}

/** Semantic Scholar as the `SearchProvider` in context. */
export const layer = (options: Options = {}): Layer.Layer<SearchProvider.SearchProvider> =>
  Layer.succeed(SearchProvider.SearchProvider, make(options))

/** The key from `SEMANTIC_SCHOLAR_API_KEY` and the base URL from `SEMANTIC_SCHOLAR_BASE_URL`, both optional. */
export const config: Config.Config<{
  readonly apiKey: Redacted.Redacted | undefined
  readonly baseUrl: string | undefined
}> = Config.all({
  apiKey: Config.option(Config.redacted(Config.nonEmptyString(Environment.semanticScholarApiKey))).pipe(
    Config.map(Option.getOrUndefined)
  ),
  baseUrl: Config.option(Config.nonEmptyString(Environment.semanticScholarBaseUrl)).pipe(
    Config.map(Option.getOrUndefined)
  )
})

/** The search provider, configured from the environment (or whatever `ConfigProvider` is installed). */
export const layerConfig = (
  options: Omit<Options, "apiKey" | "baseUrl"> = {}
): Layer.Layer<SearchProvider.SearchProvider, ConfigError.ConfigError> =>
  Layer.unwrapEffect(Effect.map(config, (fromConfig) => layer({ ...options, ...fromConfig })))

// =============================================================================
// Mapping
// =============================================================================

const dayMillis = 24 * 60 * 60 * 1000
const rangeDays: Readonly<Record<NonNullable<SearchProvider.SearchOptions["timeRange"]>, number>> = {
  day: 1,
  week: 7,
  month: 31,
  year: 366
}

/**
 * The query string of a paper search. A date window (a source policy's) is its `publicationDateOrYear` range
 * (`since:until`, either side open); else a time range is a lower bound.
 */
export const searchParams = (query: string, options: SearchProvider.SearchOptions, now: number): URLSearchParams => {
  const params = new URLSearchParams({
    query,
    fields,
    offset: "0",
    limit: String(Math.max(1, Math.min(maxResultsPerSearch, options.maxResults)))
  })
  if (options.since !== undefined || options.until !== undefined) {
    params.set("publicationDateOrYear", `${options.since ?? ""}:${options.until ?? ""}`)
  } else if (options.timeRange !== undefined) {
    const from = new Date(now - rangeDays[options.timeRange] * dayMillis).toISOString().slice(0, 10)
    params.set("publicationDateOrYear", `${from}:`)
  }
  return params
}

const authorsOf = (paper: Paper): string => {
  const names = (paper.authors ?? []).flatMap((a) => (typeof a.name === "string" && a.name !== "" ? [a.name] : []))
  if (names.length === 0) return ""
  return names.length > 3 ? `${names.slice(0, 3).join(", ")} et al.` : names.join(", ")
}

/** One line of bibliographic facts: authors, year, venue, citation count. */
export const describePaper = (paper: Paper): string =>
  [
    authorsOf(paper),
    typeof paper.year === "number" ? String(paper.year) : "",
    typeof paper.venue === "string" ? paper.venue.trim() : "",
    typeof paper.citationCount === "number" ? `${paper.citationCount.toLocaleString("en-US")} citations` : ""
  ]
    .filter((part) => part !== "")
    .join(" · ")

const truncate = (text: string, length: number): string =>
  text.length > length ? `${text.slice(0, length).replace(/\s+\S*$/, "")}…` : text

/** Venues that are preprint servers: a paper Semantic Scholar lists under one has not been peer reviewed there. */
const preprintServer = /arxiv|biorxiv|medrxiv|ssrn|research square|preprints\.org/i

/**
 * Search results in the port's terms: the abstract (with the paper's facts) as snippet and raw content, the paper's
 * authors, year and venue as its work.
 */
export const toSearchResults = (papers: ReadonlyArray<Paper>, provider: string): ReadonlyArray<Source.SearchResult> =>
  papers.map((paper, i) => {
    const facts = describePaper(paper)
    const abstract = (paper.abstract ?? "").replace(/\s+/g, " ").trim()
    const url =
      typeof paper.url === "string" && paper.url !== ""
        ? paper.url
        : `https://www.semanticscholar.org/paper/${encodeURIComponent(paper.paperId)}`
    const published =
      typeof paper.publicationDate === "string" && paper.publicationDate !== ""
        ? paper.publicationDate
        : typeof paper.year === "number"
          ? String(paper.year)
          : undefined
    const body = abstract !== "" ? abstract : "No abstract available."
    const doi = paper.externalIds?.["DOI"]
    const venue = typeof paper.venue === "string" && paper.venue.trim() !== "" ? paper.venue.trim() : undefined
    return new Source.SearchResult({
      url,
      title: typeof paper.title === "string" && paper.title.trim() !== "" ? paper.title.trim() : url,
      snippet: facts !== "" ? `${facts}. ${truncate(body, snippetCharacters)}` : truncate(body, snippetCharacters),
      ...(abstract !== "" ? { rawContent: facts !== "" ? `${facts}\n\n${abstract}` : abstract } : {}),
      score: 1 - i / Math.max(papers.length, 1),
      provider,
      ...(published !== undefined ? { publishedDate: published } : {}),
      work: new Source.Work({
        authors: (paper.authors ?? []).flatMap((a) => (typeof a.name === "string" && a.name !== "" ? [a.name] : [])),
        ...(typeof paper.year === "number" && Number.isInteger(paper.year) ? { year: paper.year } : {}),
        ...(venue !== undefined ? { venue } : {}),
        ...(typeof doi === "string" ? { doi } : {}),
        ...(venue !== undefined ? { preprint: preprintServer.test(venue) } : {})
      })
    })
  })
