/**
 * The keyless search APIs as the emulator serves them: their routes and base URLs, and builders of the answers of
 * the two web searches in the shapes their documentation gives (each section names its pages), for tests to script
 * and the simulated world to use: the MediaWiki Action API (`formatversion=2`) with its error answer, and SearXNG's
 * JSON, an answer no engine gave included. The scholarly APIs' answers are in `keylessPapers.ts` and `keylessPubmed.ts`, the faults of all
 * five in `keylessFaults.ts`.
 */
import type { Endpoint, KeylessEndpoint, RecordedRequest, Reply, Vendor } from "./types.js"

// =============================================================================
// Routes
// =============================================================================

/** The routes of the keyless APIs, each under its vendor's prefix. */
export const keylessRoutes: ReadonlyArray<{
  readonly method: string
  readonly path: RegExp
  readonly endpoint: Endpoint
}> = [
  { method: "GET", path: /^\/wikipedia\/[a-z0-9-]+\/w\/api\.php$/, endpoint: "wikipedia.api" },
  { method: "GET", path: /^\/arxiv\/api\/query$/, endpoint: "arxiv.query" },
  { method: "GET", path: /^\/openalex\/works$/, endpoint: "openalex.works" },
  { method: "GET", path: /^\/pubmed\/entrez\/eutils\/esearch\.fcgi$/, endpoint: "pubmed.esearch" },
  { method: "GET", path: /^\/pubmed\/entrez\/eutils\/efetch\.fcgi$/, endpoint: "pubmed.efetch" },
  { method: "GET", path: /^\/searxng\/search$/, endpoint: "searxng.search" }
]

/** The base URL of each keyless vendor under the emulator (Wikipedia's with its `{language}` placeholder). */
export const keylessVendorPaths: Readonly<
  Record<Extract<Vendor, "wikipedia" | "arxiv" | "openalex" | "pubmed" | "searxng">, string>
> = {
  wikipedia: "/wikipedia/{language}",
  arxiv: "/arxiv/api",
  openalex: "/openalex",
  pubmed: "/pubmed/entrez/eutils",
  searxng: "/searxng"
}

const keylessEndpoints: ReadonlySet<string> = new Set(keylessRoutes.map((route) => route.endpoint))

/** Whether an endpoint is one of the keyless APIs'. */
export const isKeylessEndpoint = (endpoint: Endpoint): endpoint is KeylessEndpoint => keylessEndpoints.has(endpoint)

/** A JSON answer. */
export const json = (body: unknown, status = 200, headers: Readonly<Record<string, string>> = {}): Reply => ({
  kind: "json",
  status,
  headers,
  body
})

/** An XML answer with its content type. */
export const xml = (body: string, contentType: string, status = 200): Reply => ({
  kind: "raw",
  status,
  headers: { "content-type": contentType },
  body
})

/** Text as XML character data or attribute value. */
export const escapeXml = (text: string): string =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;")

// =============================================================================
// Wikipedia (MediaWiki Action API: API:Search, Extension:TextExtracts, API:Info, API:Errors and warnings)
// =============================================================================

/** An article the scripted wiki holds. */
export interface WikiArticle {
  readonly title: string
  /** The lead section, plain text. */
  readonly extract: string
  readonly pageid?: number | undefined
  /** Its canonical URL; `https://{edition}.wikipedia.org/wiki/{title}` by default. */
  readonly url?: string | undefined
}

/** The edition a request went to (`/wikipedia/{language}/w/api.php`). */
export const editionOf = (request: RecordedRequest): string => /^\/wikipedia\/([^/]+)\//.exec(request.path)?.[1] ?? "en"

const pageIdOf = (article: WikiArticle, index: number): number => article.pageid ?? 1000 + index

/**
 * A wiki holding `articles`: `list=search` finds those whose title or text has a word of `srsearch` (all of them when
 * none does), `prop=extracts|info` answers the page ids asked, with canonical URLs on the edition asked.
 */
export const wikipediaApi =
  (articles: ReadonlyArray<WikiArticle>) =>
  (request: RecordedRequest): Reply => {
    const language = editionOf(request)
    if (request.query["list"] === "search") {
      const words = (request.query["srsearch"] ?? "")
        .toLowerCase()
        .split(/\s+/)
        .filter((w) => w.length > 2)
      const matching = articles
        .map((article, i) => ({ article, pageid: pageIdOf(article, i) }))
        .filter(({ article }) => words.some((w) => `${article.title} ${article.extract}`.toLowerCase().includes(w)))
      const hits = (
        matching.length > 0 ? matching : articles.map((article, i) => ({ article, pageid: pageIdOf(article, i) }))
      ).slice(0, Number(request.query["srlimit"] ?? "10"))
      return json({
        batchcomplete: true,
        continue: { sroffset: hits.length, continue: "-||" },
        query: {
          searchinfo: { totalhits: hits.length },
          search: hits.map(({ article, pageid }) => ({
            ns: 0,
            title: article.title,
            pageid,
            snippet: `${escapeXml(article.extract.slice(0, 80))} <span class="searchmatch">…</span>`,
            timestamp: "2025-11-02T09:14:27Z"
          }))
        }
      })
    }
    const ids = (request.query["pageids"] ?? "").split("|").map(Number)
    return json({
      batchcomplete: true,
      query: {
        pages: ids.map((pageid) => {
          const index = articles.findIndex((article, i) => pageIdOf(article, i) === pageid)
          const article = articles[index]
          if (article === undefined) return { pageid, missing: true }
          const path = encodeURIComponent(article.title.replace(/ /g, "_"))
          const url = article.url ?? `https://${language}.wikipedia.org/wiki/${path}`
          return {
            pageid,
            ns: 0,
            title: article.title,
            extract: article.extract,
            contentmodel: "wikitext",
            pagelanguage: language,
            touched: "2025-11-02T09:14:27Z",
            lastrevid: 1_250_000_000 + pageid,
            length: article.extract.length * 6,
            fullurl: url,
            editurl: `https://${language}.wikipedia.org/w/index.php?title=${path}&action=edit`,
            canonicalurl: url
          }
        })
      }
    })
  }

/** An Action API error, sent with HTTP 200 and the `MediaWiki-API-Error` header as the API sends it. */
export const wikipediaError = (code: string, info: string, headers: Readonly<Record<string, string>> = {}): Reply =>
  json(
    {
      error: { code, info, docref: "See https://en.wikipedia.org/w/api.php for API usage." },
      servedby: "mw-api-ext.eqiad.main-7d5c8c9f4b-x2x9z"
    },
    200,
    { "mediawiki-api-error": code, ...headers }
  )

// =============================================================================
// SearXNG (docs.searxng.org: Search API)
// =============================================================================

/** A SearXNG result as scripted. */
export interface SearxngResult {
  readonly url: string
  readonly title: string
  readonly content: string
  readonly engine?: string | undefined
  readonly publishedDate?: string | undefined
}

/** A search answer; `unresponsive` lists engines that did not answer, each with its reason. */
export const searxngResults = (
  results: ReadonlyArray<SearxngResult>,
  options?: { readonly query?: string; readonly unresponsive?: ReadonlyArray<readonly [string, string]> }
): Reply =>
  json({
    query: options?.query ?? "",
    number_of_results: 0,
    results: results.map((result, i) => {
      const engine = result.engine ?? "duckduckgo"
      return {
        url: result.url,
        title: result.title,
        content: result.content,
        publishedDate: result.publishedDate ?? null,
        thumbnail: "",
        engine,
        template: "default.html",
        parsed_url: ["https", new URL(result.url).host, new URL(result.url).pathname, "", "", ""],
        img_src: "",
        priority: "",
        engines: [engine],
        positions: [i + 1],
        score: Math.round((1 / (i + 1)) * 1000) / 1000,
        category: "general"
      }
    }),
    answers: [],
    corrections: [],
    infoboxes: [],
    suggestions: [],
    unresponsive_engines: (options?.unresponsive ?? []).map(([engine, reason]) => [engine, reason])
  })
