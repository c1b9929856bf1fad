/**
 * The content of a model call in the shapes of the OpenTelemetry GenAI conventions (`gen_ai.system_instructions`,
 * `gen_ai.input.messages`, `gen_ai.output.messages`): JSON text, exported only when content capture is on.
 */
import type * as LanguageModel from "../../LanguageModel.js"

type Part =
  | { readonly type: "text"; readonly content: string }
  | { readonly type: "tool_call"; readonly id: string; readonly name: string; readonly arguments: unknown }
  | { readonly type: "tool_call_response"; readonly id: string; readonly response: string }

interface ChatMessage {
  readonly role: "user" | "assistant" | "tool"
  readonly parts: ReadonlyArray<Part>
  readonly finish_reason?: string
}

const toolCallParts = (calls: ReadonlyArray<LanguageModel.ToolCall>): ReadonlyArray<Part> =>
  calls.map((call) => ({ type: "tool_call", id: call.id, name: call.name, arguments: call.arguments }))

const textParts = (text: string): ReadonlyArray<Part> => (text === "" ? [] : [{ type: "text", content: text }])

const chatMessage = (message: LanguageModel.Message): ChatMessage => {
  switch (message._tag) {
    case "user":
      return { role: "user", parts: textParts(message.content) }
    case "assistant":
      return { role: "assistant", parts: [...textParts(message.content), ...toolCallParts(message.toolCalls)] }
    case "tool":
      return {
        role: "tool",
        parts: [{ type: "tool_call_response", id: message.toolCallId, response: message.content }]
      }
  }
}

/** `gen_ai.system_instructions`, when the request has a system prompt. */
export const systemInstructions = (request: LanguageModel.GenerateRequest): string | undefined =>
  request.system === undefined ? undefined : JSON.stringify([{ type: "text", content: request.system }])

/** `gen_ai.input.messages`. */
export const inputMessages = (request: LanguageModel.GenerateRequest): string =>
  JSON.stringify(request.messages.map(chatMessage))

/** `gen_ai.output.messages`. */
export const outputMessages = (completion: LanguageModel.Completion): string =>
  JSON.stringify([
    {
      role: "assistant",
      parts: [...textParts(completion.text), ...toolCallParts(completion.toolCalls)],
      finish_reason: completion.finishReason
    } satisfies ChatMessage
  ])
