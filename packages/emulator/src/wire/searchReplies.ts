/**
 * Reply builders of the search vendors and the web: Tavily search and extract, Exa search and contents, Perplexity
 * answers, Semantic Scholar paper searches, and plain pages served under `/web`. Public through `replies.ts`.
 */
import type { Reply, Responder } from "./types.js"
import { json, nextId, now, openaiUsage, type UsageInput } from "./replyParts.js"

/** A Tavily search result to script. */
export interface TavilyResult {
  readonly url: string
  readonly title: string
  readonly content: string
  readonly score?: number | undefined
  readonly rawContent?: string | undefined
  readonly publishedDate?: string | undefined
}

/** A Tavily `/search` answer. */
export const tavilyResults = (
  results: ReadonlyArray<TavilyResult>,
  options?: { readonly query?: string | undefined; readonly answer?: string | undefined }
): Reply =>
  json({
    query: options?.query ?? "",
    follow_up_questions: null,
    answer: options?.answer ?? null,
    images: [],
    results: results.map((result, index) => ({
      url: result.url,
      title: result.title,
      content: result.content,
      score: result.score ?? Math.round((0.9 - index * 0.05) * 100) / 100,
      raw_content: result.rawContent ?? null,
      ...(result.publishedDate === undefined ? {} : { published_date: result.publishedDate })
    })),
    response_time: 0.01,
    request_id: nextId("emu-")
  })

/** A Tavily `/extract` answer. */
export const tavilyExtract = (
  results: ReadonlyArray<{ readonly url: string; readonly rawContent: string; readonly title?: string | undefined }>,
  failed: ReadonlyArray<{ readonly url: string; readonly error: string }> = []
): Reply =>
  json({
    results: results.map((result) => ({
      url: result.url,
      ...(result.title === undefined ? {} : { title: result.title }),
      raw_content: result.rawContent,
      images: []
    })),
    failed_results: failed,
    response_time: 0.01,
    request_id: nextId("emu-")
  })

/** An Exa result to script. */
export interface ExaResult {
  readonly url: string
  readonly title: string
  readonly text?: string | undefined
  readonly highlights?: ReadonlyArray<string> | undefined
  readonly summary?: string | undefined
  readonly publishedDate?: string | undefined
  readonly author?: string | undefined
  readonly score?: number | undefined
}

const exaResult = (result: ExaResult) => ({
  id: result.url,
  url: result.url,
  title: result.title,
  publishedDate: result.publishedDate ?? null,
  author: result.author ?? null,
  ...(result.score === undefined ? {} : { score: result.score }),
  ...(result.text === undefined ? {} : { text: result.text }),
  ...(result.highlights === undefined
    ? {}
    : { highlights: result.highlights, highlightScores: result.highlights.map(() => 0.5) }),
  ...(result.summary === undefined ? {} : { summary: result.summary })
})

/** An Exa `/search` answer. */
export const exaResults = (results: ReadonlyArray<ExaResult>): Reply =>
  json({
    requestId: nextId("emu"),
    resolvedSearchType: "neural",
    results: results.map(exaResult),
    costDollars: { total: 0.005 }
  })

/** An Exa `/contents` answer; failed URLs are reported in `statuses`. */
export const exaContents = (
  results: ReadonlyArray<ExaResult>,
  failed: ReadonlyArray<{ readonly url: string; readonly tag?: string | undefined }> = []
): Reply =>
  json({
    requestId: nextId("emu"),
    results: results.map(exaResult),
    statuses: [
      ...results.map((result) => ({ id: result.url, status: "success" })),
      ...failed.map((failure) => ({
        id: failure.url,
        status: "error",
        error: { tag: failure.tag ?? "CRAWL_NOT_FOUND", httpStatusCode: 404 }
      }))
    ],
    costDollars: { total: 0.001 }
  })

/** A Perplexity chat answer: a chat completion plus `citations` and `search_results`. */
export const perplexityAnswer = (
  text: string,
  options?: {
    readonly searchResults?:
      | ReadonlyArray<{
          readonly url: string
          readonly title: string
          readonly snippet?: string
          readonly date?: string
        }>
      | undefined
    readonly model?: string | undefined
    readonly usage?: UsageInput | undefined
  }
): Reply => {
  const searchResults = options?.searchResults ?? []
  return json({
    id: nextId("pplx-emu"),
    object: "chat.completion",
    created: now(),
    model: options?.model ?? "sonar",
    choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop" }],
    citations: searchResults.map((result) => result.url),
    search_results: searchResults.map((result) => ({
      title: result.title,
      url: result.url,
      date: result.date ?? null,
      snippet: result.snippet ?? "",
      source: "web"
    })),
    usage: {
      ...openaiUsage(options?.usage, text),
      search_context_size: "low",
      citation_tokens: 0,
      num_search_queries: 1
    }
  })
}

/** A Semantic Scholar paper-search answer. */
export const semanticScholarPapers = (
  papers: ReadonlyArray<Readonly<Record<string, unknown>> & { readonly paperId: string; readonly title: string }>,
  options?: { readonly total?: number | undefined; readonly offset?: number | undefined }
): Reply => {
  const offset = options?.offset ?? 0
  const total = options?.total ?? papers.length
  return json({
    total,
    offset,
    ...(offset + papers.length < total ? { next: offset + papers.length } : {}),
    data: papers
  })
}

/** A web page with a content type (HTML by default). */
export const page = (body: string, options?: { readonly contentType?: string; readonly status?: number }): Reply => ({
  kind: "raw",
  status: options?.status ?? 200,
  headers: { "content-type": options?.contentType ?? "text/html; charset=utf-8" },
  body
})

/**
 * Serves a set of pages under `/web`, keyed by the path after `/web` (`"/article.html"`); other paths get a 404 page.
 * A value is a reply, or HTML text.
 */
export const webPages =
  (pages: Readonly<Record<string, Reply | string>>): Responder =>
  (request) => {
    const path = request.path.replace(/^\/web/, "") || "/"
    const found = pages[path]
    if (found === undefined) return page("<html><body><h1>404 Not Found</h1></body></html>", { status: 404 })
    return typeof found === "string" ? page(found) : found
  }
