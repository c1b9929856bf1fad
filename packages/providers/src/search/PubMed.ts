/**
 * PubMed through NCBI's E-utilities as a `SearchProvider`, no key needed: `esearch` finds the PubMed ids of a query
 * (relevance order), then one `efetch` reads their records (XML), each with its title, abstract (labelled sections
 * kept), authors, journal, year, DOI and PubMed Central copy; a record PubMed types as a preprint is marked as one.
 *
 * As documented in "Entrez Programming Utilities Help" (ncbi.nlm.nih.gov/books/NBK25501): "E-utilities In-Depth"
 * (NBK25499: `db`, `term`, `retmax`, `sort=relevance`, `retmode=json`, `datetype`/`reldate`; `efetch` with `id` joined
 * by commas, `retmode=xml`, `rettype=abstract`) and "A General Introduction" (NBK25497: every request should name its
 * `tool` and a contact `email`; without an API key a client may send 3 requests a second, with one (`api_key`,
 * `NCBI_API_KEY`) 10; past the limit NCBI answers 429 with `{"error": "API rate limit exceeded", ...}`). This provider
 * spaces its own requests to the limit of its key (Effect's `RateLimiter`), and its default policy asks for one search
 * (two requests) a second without a key, four with one.
 */
import { Errors, Resilience, SearchProvider, Source } from "@deep-research/core"
import type * as HttpClient from "@effect/platform/HttpClient"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as RateLimiter from "effect/RateLimiter"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Http from "./keyless/http.js"
import * as Identity from "./keyless/identity.js"
import { collapse, type Paper, toSearchResults } from "./keyless/scholarly.js"
import * as Xml from "./keyless/xml.js"
import { errorDetail, retryAfterOf } from "./searchHttp.js"

// =============================================================================
// Options
// =============================================================================

/** How to build the PubMed search provider. */
export interface Options {
  /** e.g. `http://127.0.0.1:8080/pubmed/entrez/eutils`. Defaults to NCBI's E-utilities. */
  readonly baseUrl?: string | undefined
  /** Optional: raises NCBI's limit from 3 to 10 requests a second. */
  readonly apiKey?: Redacted.Redacted | undefined
  /** Who runs this client: written into the `User-Agent`, and sent as `email` when it is an address. */
  readonly contact?: string | undefined
  /** Time limit of one request; 30 s by default. */
  readonly timeout?: Duration.DurationInput | undefined
  /** The name recorded on results and errors; `pubmed` by default. */
  readonly name?: string | undefined
  /** The HTTP client of its requests: the platform's fetch client by default. */
  readonly httpClient?: HttpClient.HttpClient | undefined
}

/** The E-utilities. */
export const defaultBaseUrl = "https://eutils.ncbi.nlm.nih.gov/entrez/eutils"

/** The name NCBI asks each tool to send as `tool`. */
export const tool = "deep-research"

/** NCBI's published limit: requests a second without a key, and with one. */
export const requestsPerSecond = { withoutKey: 3, withKey: 10 } as const

/** The default policy of a search (two requests): one a second without a key, four with one. */
export const policyFor = (hasKey: boolean): Resilience.PolicyOverrides =>
  new Resilience.PolicyOverrides({
    requestsPerSecond: hasKey ? 4 : 1,
    burst: 1,
    maxRequestsPerSecond: hasKey ? 4 : 1
  })

/** The default policy without a key (`Resilience.Settings.providers.pubmed`). */
export const policy: Resilience.PolicyOverrides = policyFor(false)

const maxResultsPerSearch = 50

// =============================================================================
// Wire format
// =============================================================================

/** The fields of an `esearch` answer (`retmode=json`) this provider reads. */
export const SearchResponse = Schema.Struct({
  esearchresult: Schema.Struct({
    count: Schema.optional(Schema.String),
    idlist: Schema.optionalWith(Schema.Array(Schema.String), { default: () => [] }),
    ERROR: Schema.optional(Schema.String)
  })
})

// =============================================================================
// Constructors
// =============================================================================

/** Builds the search provider; its pacing lives as long as the scope. */
export const make = (options: Options = {}): Effect.Effect<SearchProvider.Service, never, Scope.Scope> =>
  Effect.gen(function* () {
    const name = options.name ?? "pubmed"
    const baseUrl = (options.baseUrl ?? defaultBaseUrl).replace(/\/+$/, "")
    const timeout = Duration.decode(options.timeout ?? Duration.seconds(30))
    const headers = { "user-agent": Identity.userAgent(options.contact) }
    const key = options.apiKey === undefined ? undefined : Redacted.value(options.apiKey)
    const perSecond = key === undefined ? requestsPerSecond.withoutKey : requestsPerSecond.withKey
    // One request every 1/limit seconds: never more than the limit in any second.
    const paced = yield* RateLimiter.make({ limit: 1, interval: Duration.millis(Math.ceil(1000 / perSecond)) })
    const email = Identity.emailOf(options.contact)
    const common: Record<string, string> = { tool }
    if (email !== undefined) common["email"] = email
    if (key !== undefined) common["api_key"] = key

    const get = (utility: string, params: Readonly<Record<string, string>>, accept: string) =>
      paced(
        Http.get(
          {
            provider: name,
            url: `${baseUrl}/${utility}?${new URLSearchParams({ ...params, ...common }).toString()}`,
            headers,
            accept,
            timeout
          },
          readError(name),
          options.httpClient
        )
      )

    const search = Effect.fn("PubMed.search")(function* (query: string, searchOptions: SearchProvider.SearchOptions) {
      const found = yield* Effect.flatMap(
        get("esearch.fcgi", searchParams(query, searchOptions), "application/json"),
        (answer) => Http.decodeJson(SearchResponse, name, answer)
      )
      if (found.esearchresult.ERROR !== undefined) {
        return yield* new Errors.InvalidRequest({ provider: name, detail: found.esearchresult.ERROR })
      }
      const ids = found.esearchresult.idlist.slice(0, Math.max(0, searchOptions.maxResults))
      if (ids.length === 0) return []
      const records = yield* get("efetch.fcgi", fetchParams(ids), "application/xml")
      return yield* readArticles(name, records, ids)
    })

    return { name, search }
  })

/** PubMed as the `SearchProvider` in context. */
export const layer = (options: Options = {}): Layer.Layer<SearchProvider.SearchProvider> =>
  Layer.scoped(SearchProvider.SearchProvider, make(options))

// =============================================================================
// Requests
// =============================================================================

const rangeDays: Readonly<Record<NonNullable<SearchProvider.SearchOptions["timeRange"]>, number>> = {
  day: 1,
  week: 7,
  month: 31,
  year: 366
}

/** The `esearch` parameters; a time range becomes `reldate` days of publication date. */
export const searchParams = (query: string, options: SearchProvider.SearchOptions): Record<string, string> => ({
  db: "pubmed",
  term: query,
  retmax: String(Math.max(1, Math.min(maxResultsPerSearch, options.maxResults))),
  sort: "relevance",
  retmode: "json",
  // A date window (a source policy's) is sent as mindate/maxdate, which E-utilities take only as a pair.
  ...(options.since !== undefined || options.until !== undefined
    ? {
        datetype: "pdat",
        mindate: (options.since ?? "1800-01-01").replace(/-/g, "/"),
        maxdate: (options.until ?? "3000-12-31").replace(/-/g, "/")
      }
    : options.timeRange !== undefined
      ? { datetype: "pdat", reldate: String(rangeDays[options.timeRange]) }
      : {})
})

/** The `efetch` parameters of the records of `ids`. */
export const fetchParams = (ids: ReadonlyArray<string>): Record<string, string> => ({
  db: "pubmed",
  id: ids.join(","),
  retmode: "xml",
  rettype: "abstract"
})

// =============================================================================
// Errors
// =============================================================================

/**
 * A non-2xx answer with NCBI's error JSON: the rate limit is waited out (its `Retry-After`, else the second the limit
 * counts); a refused API key is an authentication failure.
 */
const readError =
  (provider: string): Http.ErrorReading =>
  (answer, now) => {
    const detail = errorDetail(answer.text)
    if (answer.status === 429 || /rate limit/i.test(detail)) {
      return new Errors.RateLimited({ provider, retryAfter: retryAfterOf(answer.headers, now) ?? Duration.seconds(1) })
    }
    if (/api[ _-]?key/i.test(detail)) return new Errors.AuthenticationFailed({ provider, detail })
    return undefined
  }

// =============================================================================
// Mapping
// =============================================================================

const months: Readonly<Record<string, string>> = {
  jan: "01",
  feb: "02",
  mar: "03",
  apr: "04",
  may: "05",
  jun: "06",
  jul: "07",
  aug: "08",
  sep: "09",
  oct: "10",
  nov: "11",
  dec: "12"
}

/** A `PubDate` or `ArticleDate` as `YYYY-MM-DD`, `YYYY-MM` or `YYYY` (`MedlineDate` gives its year). */
const dateOf = (date: Xml.Node | undefined): string | undefined => {
  if (date === undefined) return undefined
  const year = Xml.textOf(date, "Year") ?? /\b(\d{4})\b/.exec(Xml.textOf(date, "MedlineDate") ?? "")?.[1]
  if (year === undefined) return undefined
  const monthText = (Xml.textOf(date, "Month") ?? "").toLowerCase()
  const month = /^\d{1,2}$/.test(monthText) ? monthText.padStart(2, "0") : months[monthText.slice(0, 3)]
  const day = Xml.textOf(date, "Day")
  if (month === undefined) return year
  return day === undefined || !/^\d{1,2}$/.test(day) ? `${year}-${month}` : `${year}-${month}-${day.padStart(2, "0")}`
}

const authorName = (author: Xml.Node): string | undefined => {
  const collective = Xml.textOf(author, "CollectiveName")
  if (collective !== undefined) return collective
  const last = Xml.textOf(author, "LastName")
  if (last === undefined) return undefined
  const first = Xml.textOf(author, "ForeName") ?? Xml.textOf(author, "Initials")
  return first === undefined ? last : `${first} ${last}`
}

/** The abstract, each labelled section (`BACKGROUND`, `METHODS`, ...) kept with its label. */
const abstractOf = (article: Xml.Node): string =>
  Xml.all(article, "AbstractText")
    .map((part) => {
      const label = Xml.attribute(part, "Label")
      const body = Xml.text(part)
      return label === undefined ? body : `${label}: ${body}`
    })
    .filter((part) => part !== "")
    .join("\n")

const articleId = (record: Xml.Node, type: string): string | undefined => {
  const found = Xml.all(record, "ArticleId").find((id) => Xml.attribute(id, "IdType") === type)
  return found === undefined ? undefined : Xml.text(found) || undefined
}

/** One `PubmedArticle` as a paper. */
export const paperOf = (record: Xml.Node): { readonly pmid: string; readonly paper: Paper } | undefined => {
  const citation = Xml.first(record, "MedlineCitation")
  const article = citation === undefined ? undefined : Xml.first(citation, "Article")
  const pmid = citation === undefined ? undefined : Xml.textOf(citation, "PMID")
  if (article === undefined || pmid === undefined) return undefined
  const journal = Xml.first(article, "Journal")
  const published =
    dateOf(Xml.first(article, "ArticleDate")) ??
    dateOf(journal === undefined ? undefined : Xml.first(journal, "PubDate"))
  const year = published === undefined ? undefined : Number(published.slice(0, 4))
  const venue = journal === undefined ? undefined : Xml.textOf(journal, "Title")
  const doi = articleId(record, "doi")
  const pmc = articleId(record, "pmc")
  const types = Xml.all(article, "PublicationType").map((type) => Xml.text(type).toLowerCase())
  return {
    pmid,
    paper: {
      url: `https://pubmed.ncbi.nlm.nih.gov/${encodeURIComponent(pmid)}/`,
      title: collapse(Xml.textOf(article, "ArticleTitle") ?? ""),
      abstract: abstractOf(article),
      work: new Source.Work({
        authors: Xml.all(article, "Author").flatMap((author) => authorName(author) ?? []),
        ...(year !== undefined && Number.isInteger(year) ? { year } : {}),
        ...(venue !== undefined ? { venue } : {}),
        ...(doi !== undefined ? { doi } : {}),
        preprint: types.includes("preprint")
      }),
      publishedDate: published,
      fullText: pmc === undefined ? undefined : `https://www.ncbi.nlm.nih.gov/pmc/articles/${encodeURIComponent(pmc)}/`
    }
  }
}

/** The records of an `efetch` answer, in the order `esearch` ranked them. */
export const readArticles = (
  provider: string,
  answer: Http.Answer,
  ids: ReadonlyArray<string>
): Effect.Effect<ReadonlyArray<Source.SearchResult>, Errors.ProviderError> => {
  const set = Xml.parse(answer.text, "PubmedArticleSet")
  if (set === undefined) {
    const failure = Xml.parse(answer.text, "eFetchResult")
    const detail = failure === undefined ? answer.text.slice(0, 200) : (Xml.textOf(failure, "ERROR") ?? "no records")
    return Effect.fail(new Errors.ProviderUnavailable({ provider, status: answer.status, detail: `efetch: ${detail}` }))
  }
  const papers = Xml.all(set, "PubmedArticle").flatMap((record) => paperOf(record) ?? [])
  const ranked = ids.flatMap((id) => papers.find((p) => p.pmid === id)?.paper ?? [])
  return Effect.succeed(toSearchResults(ranked, provider))
}
