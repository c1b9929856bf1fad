/**
 * The keyless search APIs in the simulated world: each answers a query with the deterministic pages of `fakeWeb.ts`
 * (served under `/web/sim/`), in its own documented shape, so a simulated run can research with no key over any of
 * them. Wikipedia's second request and PubMed's `efetch` name the pages only by id: the ids handed out are remembered
 * to answer them.
 */
import { type FakeResult, hash, resultsFor } from "./fakeWeb.js"
import { searxngResults, wikipediaApi } from "../wire/keyless.js"
import { arxivFeed, openalexWork, openalexWorks } from "../wire/keylessPapers.js"
import { type PubmedArticle, pubmedArticles, type PubmedBook, pubmedSearch } from "../wire/keylessPubmed.js"
import type { RecordedRequest, Reply } from "../wire/types.js"

const handedOut = new Map<string, FakeResult>()

const idOf = (result: FakeResult): number => {
  const id = 10_000_000 + (hash(result.url) % 89_999_999)
  handedOut.set(String(id), result)
  return id
}

/** The words searched for, without the grammar of arXiv's `search_query` or PubMed's `term`. */
const queryOf = (request: RecordedRequest): string => {
  const { query } = request
  const words = (text: string) =>
    text
      .replace(/\s+AND\s+submittedDate:\[[^\]]*\]/, "")
      .replace(/\ball:|\[tw\]|\b(AND|OR)\b|[()"]/g, " ")
      .replace(/\s+/g, " ")
      .trim()
  if (query["term"] !== undefined) return words(query["term"])
  if (query["search_query"] !== undefined) return words(query["search_query"])
  return query["srsearch"] ?? query["search"] ?? query["q"] ?? ""
}

const wanted = (request: RecordedRequest, parameter: string, count: number): number =>
  Math.max(1, Math.min(count, Number(request.query[parameter] ?? count) || count))

const authorsOf = (result: FakeResult): ReadonlyArray<string> => {
  const h = hash(result.url)
  return ["Ada Moreau", "Kenji Sato", "Lena Fischer", "Omar Haddad"].slice(0, 1 + (h % 3))
}

const wikipedia = (baseUrl: string, request: RecordedRequest, count: number): Reply => {
  if (request.query["list"] === "search") {
    const results = resultsFor(baseUrl, queryOf(request), wanted(request, "srlimit", count))
    return wikipediaApi(results.map((r) => ({ title: r.title, extract: r.text, pageid: idOf(r), url: r.url })))(request)
  }
  const articles = (request.query["pageids"] ?? "").split("|").flatMap((id) => {
    const result = handedOut.get(id)
    return result === undefined
      ? []
      : [{ title: result.title, extract: result.text, pageid: Number(id), url: result.url }]
  })
  return wikipediaApi(articles)(request)
}

const arxiv = (baseUrl: string, request: RecordedRequest, count: number): Reply => {
  const results = resultsFor(baseUrl, queryOf(request), wanted(request, "max_results", count))
  return arxivFeed(
    results.map((r, i) => ({
      id: `${2400 + (hash(r.url) % 100)}.${String(hash(r.title) % 100_000).padStart(5, "0")}v1`,
      absUrl: r.url,
      pdfUrl: r.url,
      title: r.title,
      summary: r.text,
      authors: authorsOf(r),
      published: `${r.publishedDate}T12:00:00Z`,
      primaryCategory: i % 2 === 0 ? "cs.CL" : "physics.soc-ph"
    }))
  )
}

const openalex = (baseUrl: string, request: RecordedRequest, count: number): Reply => {
  const results = resultsFor(baseUrl, queryOf(request), wanted(request, "per_page", count))
  return openalexWorks(
    results.map((r, i) =>
      openalexWork({
        id: `W${idOf(r)}`,
        title: r.title,
        abstract: r.text,
        authors: authorsOf(r),
        year: Number(r.publishedDate.slice(0, 4)),
        venue: i === 1 ? "Simulated Preprint Server" : "Journal of Simulated Studies",
        type: i === 1 ? "preprint" : "article",
        landingPage: r.url
      })
    )
  )
}

const pubmed = (baseUrl: string, request: RecordedRequest, count: number): Reply => {
  if (request.endpoint === "pubmed.esearch") {
    const results = resultsFor(baseUrl, queryOf(request), wanted(request, "retmax", count))
    return pubmedSearch(results.map((r) => String(idOf(r))))
  }
  const ids = (request.query["id"] ?? "").split(",")
  return pubmedArticles(
    ids.flatMap((pmid): ReadonlyArray<PubmedArticle | PubmedBook> => {
      const result = handedOut.get(pmid)
      if (result === undefined) return []
      const [background, ...rest] = result.text.split("\n\n")
      const authors = authorsOf(result).map((name) => {
        const [fore = "", last = ""] = name.split(" ")
        return { fore, last }
      })
      // Every third record a Bookshelf chapter, as clinical questions meet StatPearls and GeneReviews.
      if (hash(result.url) % 3 === 0) {
        return [
          {
            kind: "book" as const,
            pmid,
            accession: `NBK${400_000 + (hash(result.url) % 200_000)}`,
            bookTitle: "StatPearls",
            bookId: "statpearls",
            publisher: "StatPearls Publishing",
            chapterTitle: result.title,
            abstract: [{ text: result.text.replace(/\s+/g, " ") }],
            authors,
            editors: [{ fore: "Simulated", last: "Editor" }],
            year: Number(result.publishedDate.slice(0, 4))
          }
        ]
      }
      return [
        {
          pmid,
          title: result.title,
          abstract: [
            { label: "BACKGROUND", text: background ?? "" },
            { label: "RESULTS", text: rest.join(" ") }
          ],
          authors,
          journal: "Journal of Simulated Medicine",
          year: Number(result.publishedDate.slice(0, 4))
        }
      ]
    })
  )
}

const searxng = (baseUrl: string, request: RecordedRequest, count: number): Reply => {
  const results = resultsFor(baseUrl, queryOf(request), count)
  return searxngResults(
    results.map((r) => ({
      url: r.url,
      title: r.title,
      content: r.snippet,
      publishedDate: `${r.publishedDate}T00:00:00`
    })),
    { query: queryOf(request) }
  )
}

/** The simulated answer of a keyless endpoint; undefined for any other endpoint. */
export const keylessSearchReply = (
  baseUrl: string,
  request: RecordedRequest,
  resultsPerQuery: number
): Reply | undefined => {
  switch (request.endpoint) {
    case "wikipedia.api":
      return wikipedia(baseUrl, request, resultsPerQuery)
    case "arxiv.query":
      return arxiv(baseUrl, request, resultsPerQuery)
    case "openalex.works":
      return openalex(baseUrl, request, resultsPerQuery)
    case "pubmed.esearch":
    case "pubmed.efetch":
      return pubmed(baseUrl, request, resultsPerQuery)
    case "searxng.search":
      return searxng(baseUrl, request, resultsPerQuery)
    default:
      return undefined
  }
}
