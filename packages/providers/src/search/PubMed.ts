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
import * as Option from "effect/Option"
import * as RateLimiter from "effect/RateLimiter"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Http from "./keyless/http.js"
import * as Identity from "./keyless/identity.js"
import { collapse, type Paper, toSearchResults } from "./keyless/scholarly.js"
import * as QueryTerms from "./keyless/queryTerms.js"
import { dateOf } from "./keyless/pubmedDates.js"
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

    const find = (params: Record<string, string>) =>
      Effect.gen(function* () {
        const found = yield* Effect.flatMap(get("esearch.fcgi", params, "application/json"), (answer) =>
          Http.decodeJson(SearchResponse, name, answer)
        )
        if (found.esearchresult.ERROR !== undefined) {
          return yield* new Errors.ProviderInvalidRequest({ provider: name, detail: found.esearchresult.ERROR })
        }
        return found.esearchresult.idlist
      })

    // Every term first; when no record has them all, any of them.
    const search = Effect.fn("PubMed.search")(function* (query: string, searchOptions: SearchProvider.SearchOptions) {
      const narrow = searchParams(query, searchOptions, "narrow")
      const wide = searchParams(query, searchOptions, "wide")
      const first = yield* find(narrow)
      const found = first.length > 0 || wide.term === narrow.term ? first : yield* find(wide)
      const ids = found.slice(0, Math.max(0, searchOptions.maxResults))
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

/**
 * One term in PubMed's syntax: a quoted phrase, or a word, searched as a text word (`[tw]`); a word of five letters or
 * more is truncated after its plural `s` is taken off (`fractures` and `fracture` as `fracture*`), as PubMed does not
 * stem a tagged term.
 */
const pubmedTerm = (term: QueryTerms.Term): string => {
  const [word = ""] = term.words
  if (term.words.length > 1) return `"${term.words.join(" ")}"[tw]`
  if (word.length < 5 || !/^[a-z]+$/.test(word)) return `${word}[tw]`
  return `${word.replace(/([^s])s$/, "$1")}*[tw]`
}

/**
 * The query's content terms in PubMed's syntax ("PubMed User Guide": search field tags, Boolean operators in upper
 * case, quoted phrases): each as a text word (`[tw]`: title, abstract, MeSH terms and subheadings, author keywords and
 * other terms, so a term matches the MeSH heading a record is indexed under with no model call to find it; a long word
 * truncated, `*`), every term
 * required (`AND`) or, for the wider query tried when that finds nothing, any (`OR`). The query as asked when it has no
 * content term left.
 */
export const term = (query: string, breadth: "narrow" | "wide" = "narrow"): string => {
  const terms = QueryTerms.contentTerms(query).slice(0, QueryTerms.maxTerms)
  if (terms.length === 0) return query
  return terms.map(pubmedTerm).join(breadth === "narrow" ? " AND " : " OR ")
}

/** The `esearch` parameters; a time range becomes `reldate` days of publication date. */
export const searchParams = (
  query: string,
  options: SearchProvider.SearchOptions,
  breadth: "narrow" | "wide" = "narrow"
): Record<string, string> => ({
  db: "pubmed",
  term: term(query, breadth),
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
      const retryAfter = retryAfterOf(answer.headers, now) ?? Duration.seconds(1)
      return new Errors.ProviderRateLimited({ provider, retryAfter })
    }
    if (/api[ _-]?key/i.test(detail)) return new Errors.ProviderAuthenticationFailed({ provider, detail })
    return undefined
  }

// =============================================================================
// Mapping
// =============================================================================

const authorName = (author: Xml.Node): string | undefined => {
  const collective = Xml.textOf(author, "CollectiveName")
  if (collective !== undefined) return collective
  const last = Xml.textOf(author, "LastName")
  if (last === undefined) return undefined
  const first = Xml.textOf(author, "ForeName") ?? Xml.textOf(author, "Initials")
  return first === undefined ? last : `${first} ${last}`
}

/** The abstract, each labelled section (`BACKGROUND`, `METHODS`, ...) kept with its label. */
const abstractOf = (holder: Xml.Node): string =>
  Xml.children(holder, "Abstract")
    .flatMap((abstract) => Xml.children(abstract, "AbstractText"))
    .map((part) => {
      const label = Xml.attribute(part, "Label")
      const body = Xml.text(part)
      return label === undefined ? body : `${label}: ${body}`
    })
    .filter((part) => part !== "")
    .join("\n")

/**
 * An identifier of the record's own (`PubmedData`'s, `BookDocument`'s or `PubmedBookData`'s `ArticleIdList`), never one
 * of the references it cites (`ReferenceList/Reference/ArticleIdList`), which real EFetch XML lists too.
 */
const ownId = (lists: ReadonlyArray<Xml.Node | undefined>, type: string): string | undefined => {
  for (const holder of lists) {
    if (holder === undefined) continue
    for (const list of Xml.children(holder, "ArticleIdList")) {
      const found = Xml.children(list, "ArticleId").find((id) => Xml.attribute(id, "IdType") === type)
      const value = found === undefined ? "" : Xml.text(found)
      if (value !== "") return value
    }
  }
  return undefined
}

/** The article's DOI as its publisher gave it (`ELocationID EIdType="doi"`), when the ArticleIdList has none. */
const locationDoi = (article: Xml.Node): string | undefined => {
  const found = Xml.children(article, "ELocationID").find((id) => Xml.attribute(id, "EIdType") === "doi")
  const value = found === undefined ? "" : Xml.text(found)
  return value === "" ? undefined : value
}

const pubmedUrl = (pmid: string): string => `https://pubmed.ncbi.nlm.nih.gov/${encodeURIComponent(pmid)}/`

/** A record's authors: those of its `AuthorList`s that list authors (a book's editors are not its authors). */
const authorsOf = (holder: Xml.Node): ReadonlyArray<string> =>
  Xml.children(holder, "AuthorList")
    .filter((list) => (Xml.attribute(list, "Type") ?? "authors") === "authors")
    .flatMap((list) => Xml.children(list, "Author").flatMap((author) => authorName(author) ?? []))

const yearOf = (published: string | undefined): number | undefined => {
  const year = published === undefined ? undefined : Number(published.slice(0, 4))
  return year !== undefined && Number.isInteger(year) ? year : undefined
}

/** One `PubmedArticle` as a paper. */
export const paperOf = (record: Xml.Node): { readonly pmid: string; readonly paper: Paper } | undefined => {
  const citation = Xml.children(record, "MedlineCitation")[0]
  const article = citation === undefined ? undefined : Xml.children(citation, "Article")[0]
  const pmid = citation === undefined ? undefined : Xml.text(Xml.children(citation, "PMID")[0]) || undefined
  if (citation === undefined || article === undefined || pmid === undefined) return undefined
  const journal = Xml.children(article, "Journal")[0]
  const issue = journal === undefined ? undefined : Xml.children(journal, "JournalIssue")[0]
  const published =
    dateOf(Xml.children(article, "ArticleDate")[0]) ??
    dateOf(issue === undefined ? undefined : Xml.children(issue, "PubDate")[0])
  const year = yearOf(published)
  const venue = journal === undefined ? undefined : Xml.text(Xml.children(journal, "Title")[0]) || undefined
  const data = Xml.children(record, "PubmedData")[0]
  const doi = ownId([data], "doi") ?? locationDoi(article)
  const pmc = ownId([data], "pmc")
  const types = Xml.all(article, "PublicationType").map((type) => Xml.text(type).toLowerCase())
  return {
    pmid,
    paper: {
      url: pubmedUrl(pmid),
      title: collapse(Xml.text(Xml.children(article, "ArticleTitle")[0])),
      abstract: abstractOf(article),
      work: new Source.Work({
        authors: authorsOf(article),
        ...(year !== undefined ? { year } : {}),
        ...(venue !== undefined ? { venue } : {}),
        ...(doi !== undefined ? { doi } : {}),
        preprint: types.includes("preprint")
      }),
      publishedDate: published,
      fullText: pmc === undefined ? undefined : `https://www.ncbi.nlm.nih.gov/pmc/articles/${encodeURIComponent(pmc)}/`
    }
  }
}

/**
 * One `PubmedBookArticle` (a chapter of StatPearls, GeneReviews or another NCBI Bookshelf book, or a whole book) as a
 * paper: its title (the chapter's, else the book's), authors (not editors), the book as its venue, its year, and its
 * Bookshelf page as the full text.
 */
export const bookOf = (record: Xml.Node): { readonly pmid: string; readonly paper: Paper } | undefined => {
  const document = Xml.children(record, "BookDocument")[0]
  const pmid = document === undefined ? undefined : Xml.text(Xml.children(document, "PMID")[0]) || undefined
  if (document === undefined || pmid === undefined) return undefined
  const book = Xml.children(document, "Book")[0]
  const bookTitle = book === undefined ? "" : collapse(Xml.text(Xml.children(book, "BookTitle")[0]))
  const publisher = book === undefined ? undefined : Xml.textOf(book, "PublisherName")
  const published = dateOf(book === undefined ? undefined : Xml.children(book, "PubDate")[0])
  const year = yearOf(published)
  const chapter = collapse(Xml.text(Xml.children(document, "ArticleTitle")[0]))
  const accession = ownId([document, Xml.children(record, "PubmedBookData")[0]], "bookaccession")
  const doi = ownId([document, Xml.children(record, "PubmedBookData")[0]], "doi")
  const venue = bookTitle === "" ? publisher : publisher === undefined ? bookTitle : `${bookTitle} (${publisher})`
  return {
    pmid,
    paper: {
      url: pubmedUrl(pmid),
      title: chapter !== "" ? chapter : bookTitle,
      abstract: abstractOf(document),
      work: new Source.Work({
        authors: authorsOf(document).length > 0 ? authorsOf(document) : book === undefined ? [] : authorsOf(book),
        ...(year !== undefined ? { year } : {}),
        ...(venue !== undefined && venue !== "" ? { venue } : {}),
        ...(doi !== undefined ? { doi } : {}),
        preprint: false
      }),
      publishedDate: published,
      fullText:
        accession === undefined ? undefined : `https://www.ncbi.nlm.nih.gov/books/${encodeURIComponent(accession)}/`
    }
  }
}

/** The records of an `efetch` answer (articles and books), in the order `esearch` ranked them. */
export const readArticles = (
  provider: string,
  answer: Http.Answer,
  ids: ReadonlyArray<string>
): Effect.Effect<ReadonlyArray<Source.SearchResult>, Errors.ProviderError> =>
  Effect.gen(function* () {
    // Each record is read as it is parsed and let go (`Xml.parseEach`): 2 MB of records are never one tree in memory.
    const set = yield* Xml.parseEach(
      answer.text,
      "PubmedArticleSet",
      provider,
      ["PubmedArticle", "PubmedBookArticle"],
      (record) =>
        Option.toArray(Option.fromNullable(record.name === "PubmedArticle" ? paperOf(record) : bookOf(record)))
    )
    if (set === undefined) {
      const failure = Xml.parseShort(answer.text, "eFetchResult")
      const detail = failure === undefined ? answer.text.slice(0, 200) : (Xml.textOf(failure, "ERROR") ?? "no records")
      return yield* new Errors.ProviderUnavailable({ provider, status: answer.status, detail: `efetch: ${detail}` })
    }
    const papers = set.items
    const ranked = ids.flatMap((id) => papers.find((p) => p.pmid === id)?.paper ?? [])
    return toSearchResults(ranked, provider)
  })
