/**
 * Server-sent event framing of complete answers, as each vendor streams them: OpenAI chat chunks (data-only, ending
 * with `data: [DONE]`), Anthropic message events (each with an `event:` line), and OpenAI Responses events.
 */
import {
  get,
  getArray,
  getNumber,
  getObjects,
  getOptionalString,
  getString,
  isObject,
  type JsonObject,
  pieces
} from "./json.js"

const PIECE = 24

/** One data-only SSE message. */
export const data = (payload: unknown): string => `data: ${JSON.stringify(payload)}\n\n`

/** One SSE message with an event name. */
export const event = (name: string, payload: unknown): string => `event: ${name}\ndata: ${JSON.stringify(payload)}\n\n`

// =============================================================================
// OpenAI chat completions
// =============================================================================

/**
 * The chunks of a chat completion: a role chunk, content deltas, per tool call a first delta with id and name then
 * argument fragments, a finish chunk, and with `includeUsage` a final chunk with no choices and the usage.
 */
export const openaiChatStream = (completion: unknown, includeUsage: boolean): string => {
  const id = getString(completion, "id", "chatcmpl-emulator")
  const created = getNumber(completion, "created", Math.floor(Date.now() / 1000))
  const model = getString(completion, "model", "emulator")
  const base = (choices: ReadonlyArray<unknown>): JsonObject => ({
    id,
    object: "chat.completion.chunk",
    created,
    model,
    choices,
    ...(includeUsage ? { usage: null } : {})
  })
  let out = ""
  for (const choice of getObjects(completion, "choices")) {
    const index = getNumber(choice, "index", 0)
    const message = get(choice, "message")
    const chunk = (delta: JsonObject, finishReason: string | null = null) =>
      data(base([{ index, delta, logprobs: null, finish_reason: finishReason }]))
    out += chunk({ role: "assistant", content: "" })
    const content = getOptionalString(message, "content") ?? ""
    for (const piece of pieces(content, PIECE)) out += chunk({ content: piece })
    getObjects(message, "tool_calls").forEach((call, callIndex) => {
      const fn = get(call, "function")
      out += chunk({
        tool_calls: [
          {
            index: callIndex,
            id: getString(call, "id", `call_${callIndex}`),
            type: "function",
            function: { name: getString(fn, "name", ""), arguments: "" }
          }
        ]
      })
      for (const piece of pieces(getString(fn, "arguments", ""), PIECE)) {
        out += chunk({ tool_calls: [{ index: callIndex, function: { arguments: piece } }] })
      }
    })
    out += chunk({}, getString(choice, "finish_reason", "stop"))
  }
  if (includeUsage) {
    out += data({ ...base([]), usage: get(completion, "usage") ?? null })
  }
  return out + "data: [DONE]\n\n"
}

// =============================================================================
// Anthropic messages
// =============================================================================

/**
 * The events of a message: message_start (empty content), per block content_block_start / deltas /
 * content_block_stop (text_delta, input_json_delta starting with an empty fragment, thinking and signature deltas),
 * message_delta with the stop reason and cumulative output tokens, then message_stop.
 */
export const anthropicMessageStream = (message: unknown): string => {
  const usage = get(message, "usage")
  const inputTokens = getNumber(usage, "input_tokens", 0)
  const outputTokens = getNumber(usage, "output_tokens", 0)
  const startUsage: JsonObject = {
    ...(isObject(usage) ? usage : {}),
    input_tokens: inputTokens,
    output_tokens: Math.min(1, outputTokens)
  }
  let out = event("message_start", {
    type: "message_start",
    message: {
      id: getString(message, "id", "msg_emulator"),
      type: "message",
      role: "assistant",
      model: getString(message, "model", "emulator"),
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: startUsage
    }
  })
  getObjects(message, "content").forEach((block, index) => {
    const type = getString(block, "type", "text")
    const delta = (payload: JsonObject) => {
      out += event("content_block_delta", { type: "content_block_delta", index, delta: payload })
    }
    if (type === "text") {
      const citations = getArray(block, "citations")
      out += event("content_block_start", {
        type: "content_block_start",
        index,
        content_block: citations.length > 0 ? { citations: [], type: "text", text: "" } : { type: "text", text: "" }
      })
      if (index === 0) out += event("ping", { type: "ping" })
      for (const citation of citations) delta({ type: "citations_delta", citation })
      for (const piece of pieces(getString(block, "text", ""), PIECE)) delta({ type: "text_delta", text: piece })
    } else if (type === "tool_use" || type === "server_tool_use") {
      out += event("content_block_start", {
        type: "content_block_start",
        index,
        content_block: { ...block, input: {} }
      })
      delta({ type: "input_json_delta", partial_json: "" })
      for (const piece of pieces(JSON.stringify(get(block, "input") ?? {}), PIECE)) {
        delta({ type: "input_json_delta", partial_json: piece })
      }
    } else if (type === "thinking") {
      out += event("content_block_start", {
        type: "content_block_start",
        index,
        content_block: { type: "thinking", thinking: "", signature: "" }
      })
      for (const piece of pieces(getString(block, "thinking", ""), PIECE)) {
        delta({ type: "thinking_delta", thinking: piece })
      }
      delta({ type: "signature_delta", signature: getString(block, "signature", "") })
    } else {
      // Blocks without deltas (web_search_tool_result, redacted_thinking) arrive whole at their start.
      out += event("content_block_start", { type: "content_block_start", index, content_block: block })
    }
    out += event("content_block_stop", { type: "content_block_stop", index })
  })
  out += event("message_delta", {
    type: "message_delta",
    delta: { stop_reason: getString(message, "stop_reason", "end_turn"), stop_sequence: null },
    usage: { output_tokens: outputTokens }
  })
  return out + event("message_stop", { type: "message_stop" })
}

// =============================================================================
// OpenAI responses
// =============================================================================

/**
 * The events of a response: created, in_progress, per output item added / (text parts: content_part.added, text
 * deltas, annotation.added, output_text.done, content_part.done) / done, then completed with the full response.
 */
export const openaiResponsesStream = (response: unknown): string => {
  let sequence = 0
  let out = ""
  const emit = (type: string, payload: JsonObject) => {
    out += event(type, { type, ...payload, sequence_number: sequence++ })
  }
  const base = isObject(response) ? response : {}
  emit("response.created", { response: { ...base, status: "in_progress", output: [], usage: null } })
  emit("response.in_progress", { response: { ...base, status: "in_progress", output: [], usage: null } })
  getObjects(response, "output").forEach((item, outputIndex) => {
    const itemId = getString(item, "id", `item_${outputIndex}`)
    const type = getString(item, "type", "message")
    if (type === "message") {
      emit("response.output_item.added", {
        output_index: outputIndex,
        item: { ...item, status: "in_progress", content: [] }
      })
      getObjects(item, "content").forEach((part, contentIndex) => {
        const text = getString(part, "text", "")
        emit("response.content_part.added", {
          item_id: itemId,
          output_index: outputIndex,
          content_index: contentIndex,
          part: { type: "output_text", annotations: [], logprobs: [], text: "" }
        })
        for (const piece of pieces(text, PIECE)) {
          emit("response.output_text.delta", {
            item_id: itemId,
            output_index: outputIndex,
            content_index: contentIndex,
            delta: piece,
            logprobs: []
          })
        }
        getArray(part, "annotations").forEach((annotation, annotationIndex) => {
          emit("response.output_text.annotation.added", {
            item_id: itemId,
            output_index: outputIndex,
            content_index: contentIndex,
            annotation_index: annotationIndex,
            annotation
          })
        })
        emit("response.output_text.done", {
          item_id: itemId,
          output_index: outputIndex,
          content_index: contentIndex,
          text,
          logprobs: []
        })
        emit("response.content_part.done", {
          item_id: itemId,
          output_index: outputIndex,
          content_index: contentIndex,
          part
        })
      })
    } else {
      emit("response.output_item.added", { output_index: outputIndex, item: { ...item, status: "in_progress" } })
      if (type === "web_search_call") {
        for (const phase of ["in_progress", "searching", "completed"]) {
          emit(`response.web_search_call.${phase}`, { item_id: itemId, output_index: outputIndex })
        }
      }
    }
    emit("response.output_item.done", { output_index: outputIndex, item })
  })
  emit("response.completed", { response: { ...base, status: getString(response, "status", "completed") } })
  return out
}
