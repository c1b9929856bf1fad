/**
 * The emulator's reply builders: answers in each vendor's documented shape (OpenAI chat completions and responses,
 * Anthropic messages, Tavily, Exa, Perplexity, Semantic Scholar, plain pages) for tests to script, with usage and
 * ids as the vendors give them. Public through `@deep-research/emulator`'s `Emulator`.
 */
import type { Fault, Reply, Responder } from "./types.js"

/** Token counts of a scripted answer; output defaults to the text's length / 4, input to 10. */
export interface UsageInput {
  readonly input?: number | undefined
  readonly output?: number | undefined
  readonly cached?: number | undefined
  readonly reasoning?: number | undefined
}

/** Options of the chat reply builders. */
export interface ChatOptions {
  readonly model?: string | undefined
  readonly usage?: UsageInput | undefined
  readonly finishReason?: string | undefined
}

/** A tool call to script; `arguments` is sent as JSON unless it is already a string. */
export interface ScriptedToolCall {
  readonly id?: string | undefined
  readonly name: string
  readonly arguments: unknown
}

let idCounter = 0
const nextId = (prefix: string): string => `${prefix}${(++idCounter).toString(36).padStart(8, "0")}`
const now = (): number => Math.floor(Date.now() / 1000)
const estimate = (text: string): number => Math.max(1, Math.ceil(text.length / 4))

/** A reply with a JSON body. */
export const json = (
  body: unknown,
  options?: { readonly status?: number; readonly headers?: Record<string, string> }
): Reply => ({
  kind: "json",
  status: options?.status ?? 200,
  headers: options?.headers ?? {},
  body
})

/** A fault to play in the endpoint's vendor shape. */
export const fault = (value: Fault): Reply => ({ kind: "fault", fault: value })

/** Raw event-stream text. */
export const sse = (text: string): Reply => ({ kind: "sse", text })

const openaiUsage = (usage: UsageInput | undefined, outputText: string) => {
  const input = usage?.input ?? 10
  const output = usage?.output ?? estimate(outputText)
  return {
    prompt_tokens: input,
    completion_tokens: output,
    total_tokens: input + output,
    prompt_tokens_details: { cached_tokens: usage?.cached ?? 0, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: usage?.reasoning ?? 0,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0
    }
  }
}

const openaiCompletion = (
  message: object,
  finishReason: string,
  options: ChatOptions | undefined,
  outputText: string
) =>
  json({
    id: nextId("chatcmpl-emu"),
    object: "chat.completion",
    created: now(),
    model: options?.model ?? "gpt-4o-mini",
    choices: [{ index: 0, message, logprobs: null, finish_reason: options?.finishReason ?? finishReason }],
    usage: openaiUsage(options?.usage, outputText),
    service_tier: "default",
    system_fingerprint: "fp_emulator"
  })

/** An OpenAI chat completion answering with text. */
export const openaiText = (text: string, options?: ChatOptions): Reply =>
  openaiCompletion({ role: "assistant", content: text, refusal: null, annotations: [] }, "stop", options, text)

/** An OpenAI chat completion answering with a JSON value as its text (what `json_schema` output looks like). */
export const openaiJson = (value: unknown, options?: ChatOptions): Reply => openaiText(JSON.stringify(value), options)

/** An OpenAI chat completion calling tools (several at once when given several). */
export const openaiToolCalls = (
  calls: ReadonlyArray<ScriptedToolCall>,
  options?: ChatOptions & { readonly text?: string | undefined }
): Reply => {
  const toolCalls = calls.map((call) => ({
    id: call.id ?? nextId("call_emu"),
    type: "function",
    function: {
      name: call.name,
      arguments: typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments)
    }
  }))
  return openaiCompletion(
    { role: "assistant", content: options?.text ?? null, tool_calls: toolCalls, refusal: null, annotations: [] },
    "tool_calls",
    options,
    (options?.text ?? "") + toolCalls.map((call) => call.function.arguments).join("")
  )
}

/** A cited span of a web-search answer. */
export interface CitedSpan {
  readonly text: string
  readonly url: string
  readonly title: string
}

/**
 * An OpenAI Responses answer with web search: a `web_search_call` (with its sources) and a message whose cited spans
 * are followed by an inline markdown link covered by a `url_citation` annotation, as the real API writes them.
 */
export const openaiWebSearch = (options: {
  readonly segments: ReadonlyArray<string | CitedSpan>
  readonly sources?: ReadonlyArray<string> | undefined
  readonly query?: string | undefined
  readonly model?: string | undefined
  readonly usage?: UsageInput | undefined
}): Reply => {
  let text = ""
  const annotations: Array<object> = []
  for (const segment of options.segments) {
    if (typeof segment === "string") {
      text += segment
      continue
    }
    text += segment.text
    const host = new URL(segment.url).hostname.replace(/^www\./, "")
    const link = ` ([${host}](${segment.url}))`
    const start = text.length + 1
    text += link
    annotations.push({
      type: "url_citation",
      start_index: start,
      end_index: text.length,
      title: segment.title,
      url: segment.url
    })
  }
  const sources = options.sources ?? options.segments.flatMap((s) => (typeof s === "string" ? [] : [s.url]))
  const input = options.usage?.input ?? 1_000
  const output = options.usage?.output ?? estimate(text)
  return json({
    id: nextId("resp_emu"),
    object: "response",
    created_at: now(),
    status: "completed",
    error: null,
    incomplete_details: null,
    model: options.model ?? "gpt-4.1",
    output: [
      {
        id: nextId("ws_emu"),
        type: "web_search_call",
        status: "completed",
        action: {
          type: "search",
          query: options.query ?? "",
          queries: options.query === undefined ? [] : [options.query],
          sources: sources.map((url) => ({ type: "url", url }))
        }
      },
      {
        id: nextId("msg_emu"),
        type: "message",
        status: "completed",
        role: "assistant",
        content: [{ type: "output_text", text, annotations, logprobs: [] }]
      }
    ],
    usage: {
      input_tokens: input,
      input_tokens_details: { cached_tokens: options.usage?.cached ?? 0 },
      output_tokens: output,
      output_tokens_details: { reasoning_tokens: options.usage?.reasoning ?? 0 },
      total_tokens: input + output
    }
  })
}

const anthropicUsage = (usage: UsageInput | undefined, outputText: string) => ({
  input_tokens: usage?.input ?? 10,
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: usage?.cached ?? 0,
  output_tokens: usage?.output ?? estimate(outputText)
})

const anthropicMessage = (
  content: ReadonlyArray<object>,
  stopReason: string,
  options: ChatOptions | undefined,
  outputText: string
) =>
  json({
    id: nextId("msg_emu"),
    type: "message",
    role: "assistant",
    model: options?.model ?? "claude-sonnet-4-6",
    content,
    stop_reason: options?.finishReason ?? stopReason,
    stop_sequence: null,
    usage: anthropicUsage(options?.usage, outputText)
  })

/** An Anthropic message answering with text. */
export const anthropicText = (text: string, options?: ChatOptions): Reply =>
  anthropicMessage([{ type: "text", text }], "end_turn", options, text)

/** An Anthropic message calling tools (`tool_use` blocks), optionally after some text. */
export const anthropicToolUse = (
  calls: ReadonlyArray<ScriptedToolCall>,
  options?: ChatOptions & { readonly text?: string | undefined }
): Reply => {
  const blocks: Array<object> = options?.text === undefined ? [] : [{ type: "text", text: options.text }]
  for (const call of calls) {
    blocks.push({ type: "tool_use", id: call.id ?? nextId("toolu_emu"), name: call.name, input: call.arguments ?? {} })
  }
  return anthropicMessage(blocks, "tool_use", options, (options?.text ?? "") + JSON.stringify(calls))
}

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
