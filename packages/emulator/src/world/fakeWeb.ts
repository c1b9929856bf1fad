/**
 * The simulated world's web: deterministic pages under `/web/sim/`, made from a query's slug, and the answers of the
 * search and extraction endpoints (Tavily, Exa, Semantic Scholar) and of the pages themselves.
 */
import { get, getArray, getNumber, getString } from "../wire/json.js"
import type { RecordedRequest, Reply } from "../wire/types.js"

export const hash = (text: string): number => {
  let h = 2166136261
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i)
    h = Math.imul(h, 16777619)
  }
  return h >>> 0
}

const stopWords = new Set(
  (
    "the a an of and or in on for to is are was were be what how much many did does do which why when who whom " +
    "whose where there their this that these those with from by about into than as at it its"
  ).split(" ")
)

/** A URL-safe slug of a query: its first meaningful words. */
export const slugOf = (text: string): string =>
  text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s-]/gu, " ")
    .split(/\s+/)
    .filter((word) => word.length > 1 && !stopWords.has(word))
    .slice(0, 6)
    .join("-") || "topic"

const angles = [
  "an overview of the evidence",
  "key figures and recent data",
  "arguments for and against",
  "a review of the literature",
  "what practitioners report",
  "open questions and outlook"
]
const publishers = ["Research Institute", "University Press", "Policy Review", "Data Journal", "Science Weekly"]

/** One fake page: deterministic title and paragraphs from its slug and number. */
export const fakePage = (slug: string, index: number) => {
  const subject = slug.replace(/-/g, " ")
  const h = hash(`${slug}#${index}`)
  const share = 20 + (h % 60)
  const year = 2019 + (h % 6)
  const growth = 2 + (h % 17)
  const publisher = publishers[h % publishers.length] ?? "Research Institute"
  const angle = angles[index % angles.length] ?? "an overview"
  const title = `${subject.charAt(0).toUpperCase()}${subject.slice(1)}: ${angle}`
  const paragraphs = [
    `This article from the ${publisher} gives ${angle} on ${subject}.`,
    `A ${year} survey found that ${share}% of the organisations studied had direct experience with ${subject}, ` +
      `up ${growth} points on the previous survey.`,
    `Analysts attribute the change to lower costs, better tooling and clearer regulation, while noting that ` +
      `evidence on long-term effects of ${subject} remains limited.`,
    `Critics argue that the benefits of ${subject} are unevenly distributed and that independent replication ` +
      `is still scarce; the authors recommend further study before drawing firm conclusions.`
  ]
  return { title, paragraphs, publishedDate: `${year}-0${1 + (h % 9)}-1${h % 10}` }
}

export const pageHtml = (slug: string, index: number): string => {
  const page = fakePage(slug, index)
  return [
    "<!doctype html>",
    `<html><head><meta charset="utf-8"><title>${page.title}</title></head>`,
    `<body><article><h1>${page.title}</h1>`,
    ...page.paragraphs.map((p) => `<p>${p}</p>`),
    `<p>Published ${page.publishedDate}.</p>`,
    "</article></body></html>"
  ].join("\n")
}

export interface FakeResult {
  readonly url: string
  readonly title: string
  readonly snippet: string
  readonly text: string
  readonly publishedDate: string
}

export const resultsFor = (baseUrl: string, query: string, count: number): ReadonlyArray<FakeResult> => {
  const slug = slugOf(query)
  return Array.from({ length: count }, (_, i) => {
    const page = fakePage(slug, i + 1)
    return {
      url: `${baseUrl}/web/sim/${slug}-${i + 1}`,
      title: page.title,
      snippet: page.paragraphs.slice(0, 2).join(" "),
      text: page.paragraphs.join("\n\n"),
      publishedDate: page.publishedDate
    }
  })
}

export const pageOfUrl = (url: string): { readonly slug: string; readonly index: number } | undefined => {
  const match = /\/web\/sim\/([a-z0-9\p{L}-]+)-(\d+)$/u.exec(url.replace(/[?#].*$/, ""))
  return match?.[1] === undefined || match[2] === undefined ? undefined : { slug: match[1], index: Number(match[2]) }
}

let counter = 0
const requestId = (): string => `sim${(++counter).toString(36).padStart(8, "0")}`

const tavilySearch = (baseUrl: string, body: unknown, resultsPerQuery: number): Reply => {
  const count = Math.min(getNumber(body, "max_results", resultsPerQuery), resultsPerQuery)
  const raw = get(body, "include_raw_content")
  const results = resultsFor(baseUrl, getString(body, "query", ""), count)
  return {
    kind: "json",
    body: {
      query: getString(body, "query", ""),
      answer: null,
      follow_up_questions: null,
      images: [],
      results: results.map((r, i) => ({
        url: r.url,
        title: r.title,
        content: r.snippet,
        score: Math.round((0.9 - i * 0.07) * 100) / 100,
        raw_content: raw === true || raw === "markdown" || raw === "text" ? r.text : null,
        published_date: r.publishedDate
      })),
      response_time: 0.01,
      request_id: requestId()
    }
  }
}

const tavilyExtract = (body: unknown): Reply => {
  const urls = getArray(body, "urls").filter((u): u is string => typeof u === "string")
  const pages = urls.map((url) => ({ url, page: pageOfUrl(url) }))
  return {
    kind: "json",
    body: {
      results: pages.flatMap(({ url, page }) =>
        page === undefined
          ? []
          : [{ url, raw_content: fakePage(page.slug, page.index).paragraphs.join("\n\n"), images: [] }]
      ),
      failed_results: pages.flatMap(({ url, page }) =>
        page === undefined ? [{ url, error: "Failed to fetch url" }] : []
      ),
      response_time: 0.01,
      request_id: requestId()
    }
  }
}

const exaSearch = (baseUrl: string, body: unknown, resultsPerQuery: number): Reply => {
  const results = resultsFor(
    baseUrl,
    getString(body, "query", ""),
    Math.min(getNumber(body, "numResults", 3), resultsPerQuery)
  )
  return {
    kind: "json",
    body: {
      requestId: requestId(),
      resolvedSearchType: "neural",
      results: results.map((r, i) => ({
        id: r.url,
        url: r.url,
        title: r.title,
        publishedDate: r.publishedDate,
        author: null,
        score: 0.9 - i * 0.05,
        text: r.text,
        highlights: [r.snippet]
      })),
      costDollars: { total: 0.005 }
    }
  }
}

const exaContents = (body: unknown): Reply => {
  const urls = [...getArray(body, "urls"), ...getArray(body, "ids")].filter((u): u is string => typeof u === "string")
  const pages = urls.map((url) => ({ url, page: pageOfUrl(url) }))
  return {
    kind: "json",
    body: {
      requestId: requestId(),
      results: pages.flatMap(({ url, page }) => {
        if (page === undefined) return []
        const fake = fakePage(page.slug, page.index)
        return [{ id: url, url, title: fake.title, text: fake.paragraphs.join("\n\n") }]
      }),
      statuses: pages.map(({ url, page }) =>
        page === undefined
          ? { id: url, status: "error", error: { tag: "CRAWL_NOT_FOUND", httpStatusCode: 404 } }
          : { id: url, status: "success" }
      )
    }
  }
}

const semanticScholarSearch = (baseUrl: string, request: RecordedRequest, resultsPerQuery: number): Reply => {
  const query = request.query["query"] ?? ""
  const limit = Math.min(Number(request.query["limit"] ?? "3") || 3, resultsPerQuery)
  const results = resultsFor(baseUrl, query, limit)
  return {
    kind: "json",
    body: {
      total: results.length,
      offset: 0,
      data: results.map((r, i) => ({
        paperId: `sim${hash(r.url).toString(16)}`,
        title: r.title,
        url: r.url,
        abstract: r.text,
        year: Number(r.publishedDate.slice(0, 4)),
        authors: [{ authorId: String(1000 + i), name: `Author ${String.fromCharCode(65 + i)}` }],
        citationCount: 10 + i,
        publicationDate: r.publishedDate,
        venue: "Simulated Journal",
        externalIds: {},
        openAccessPdf: null
      }))
    }
  }
}

const webPage = (request: RecordedRequest): Reply | undefined => {
  const page = pageOfUrl(request.path)
  if (page === undefined) return undefined
  return {
    kind: "raw",
    status: 200,
    headers: { "content-type": "text/html; charset=utf-8" },
    body: pageHtml(page.slug, page.index)
  }
}

/** The answer of a search, extraction or page endpoint of the simulated web; undefined for any other endpoint. */
export const searchReply = (baseUrl: string, request: RecordedRequest, resultsPerQuery: number): Reply | undefined => {
  const body = request.body
  switch (request.endpoint) {
    case "tavily.search":
      return tavilySearch(baseUrl, body, resultsPerQuery)
    case "tavily.extract":
      return tavilyExtract(body)
    case "exa.search":
      return exaSearch(baseUrl, body, resultsPerQuery)
    case "exa.contents":
      return exaContents(body)
    case "semanticScholar.search":
      return semanticScholarSearch(baseUrl, request, resultsPerQuery)
    case "web.page":
      return webPage(request)
    default:
      return undefined
  }
}
