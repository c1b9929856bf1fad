/**
 * Reply builders of the model vendors: OpenAI chat completions and responses (web search included) and Anthropic
 * messages, with text, JSON or tool calls, and usage and ids as the vendors give them. Public through `replies.ts`.
 */
import type { Reply } from "./types.js"
import { estimate, json, nextId, now, openaiUsage, type UsageInput } from "./replyParts.js"

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
