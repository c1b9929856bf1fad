/**
 * Token arithmetic without a tokenizer: counts are estimated at 4 characters a token, and context windows come from
 * a table kept as JSON (longest name match wins, unknown models get 128k), so new models need no code change.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import defaultTableJson from "./data/context-windows.json" with { type: "json" }
import { longestMatch } from "./internal/text/longestMatch.js"
import type { GenerateRequest, Message } from "./LanguageModel.js"

// =============================================================================
// Schemas
// =============================================================================

/** The context window of the models whose name contains `match`. */
export class ContextWindow extends Schema.Class<ContextWindow>("@deep-research/core/ContextWindow")({
  match: Schema.String.pipe(Schema.minLength(1)),
  tokens: Schema.Int.pipe(Schema.positive())
}) {}

/** A table of context windows. */
export class ContextWindows extends Schema.Class<ContextWindows>("@deep-research/core/ContextWindows")({
  /** The window assumed for models that match no entry. */
  defaultTokens: Schema.optionalWith(Schema.Int.pipe(Schema.positive()), { default: () => 128_000 }),
  windows: Schema.Array(ContextWindow)
}) {}

/** The table shipped with the library (`data/context-windows.json`). */
export const defaultTable: ContextWindows = Schema.decodeUnknownSync(ContextWindows)(defaultTableJson)

// =============================================================================
// Service
// =============================================================================

/** The context window table in use; without one in context, the shipped table applies. */
export class ContextWindowTable extends Context.Tag("@deep-research/core/Tokens/ContextWindowTable")<
  ContextWindowTable,
  ContextWindows
>() {}

/** Uses the given table instead of the shipped one. */
export const layer = (table: ContextWindows): Layer.Layer<ContextWindowTable> =>
  Layer.succeed(ContextWindowTable, table)

/** Uses the table shipped with the library. */
export const layerDefault: Layer.Layer<ContextWindowTable> = layer(defaultTable)

/** Decodes a table from JSON text (e.g. a user's own file). */
export const decodeTable = Schema.decodeUnknown(Schema.parseJson(ContextWindows))

// =============================================================================
// Estimates
// =============================================================================

/** Characters per token assumed by every estimate. */
export const charactersPerToken = 4

/** Estimated tokens of a text: 4 characters a token, rounded up. */
export const estimateTokens = (text: string): number => Math.ceil(text.length / charactersPerToken)

/** The most characters that fit in `tokens` under the estimate. */
export const charactersFor = (tokens: number): number => Math.max(0, Math.floor(tokens)) * charactersPerToken

/** The length of a message's text (`messageText`), without writing it out. */
const messageLength = (message: Message): number => {
  switch (message._tag) {
    case "user":
      return message.content.length
    case "tool":
      return message.name.length + message.content.length
    case "assistant": {
      let length = message.content.length
      for (const call of message.toolCalls) {
        length +=
          call.name.length +
          (typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments)).length
      }
      return length
    }
  }
}

// The length of a schema written out as JSON, by schema: tool and answer schemas are made once and sent at every call.
const jsonLengths = new WeakMap<object, number>()

const jsonLength = (schema: object): number => {
  const known = jsonLengths.get(schema)
  if (known !== undefined) return known
  const length = JSON.stringify(schema).length
  jsonLengths.set(schema, length)
  return length
}

/** The text of one message as the model reads it (tool call arguments included). */
export const messageText = (message: Message): string => {
  switch (message._tag) {
    case "user":
      return message.content
    case "tool":
      return message.name + message.content
    case "assistant":
      return (
        message.content +
        message.toolCalls
          .map(
            (call) => call.name + (typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments))
          )
          .join("")
      )
  }
}

/** Tokens of a text of `length` characters: 4 characters a token, rounded up. */
const tokensOfLength = (length: number): number => Math.ceil(length / charactersPerToken)

/** Estimated tokens of one message. */
export const estimateMessageTokens = (message: Message): number => tokensOfLength(messageLength(message))

/**
 * Estimated input tokens of a request: system prompt, messages, tool definitions and response format. Counted from
 * the parts' lengths (the schemas' measured once each), as run at every model call.
 */
export const estimateRequestTokens = (request: GenerateRequest): number => {
  let tokens = estimateTokens(request.system ?? "")
  for (const message of request.messages) tokens += estimateMessageTokens(message)
  for (const tool of request.tools ?? []) {
    tokens += tokensOfLength(tool.name.length + tool.description.length + jsonLength(tool.parameters))
  }
  const format = request.responseFormat
  if (format !== undefined) tokens += tokensOfLength(format.name.length + jsonLength(format.schema))
  return tokens
}

// =============================================================================
// Context windows
// =============================================================================

/** The context window of a model: the longest matching entry of `table`, else the table's default (128k). */
export const contextWindowOf = (model: string, table: ContextWindows = defaultTable): number =>
  longestMatch(table.windows, model)?.tokens ?? table.defaultTokens

/** The context window of a model under the table in context, or the shipped one. */
export const contextWindow = (model: string): Effect.Effect<number> =>
  Effect.map(Effect.serviceOption(ContextWindowTable), (table) =>
    contextWindowOf(
      model,
      Option.getOrElse(table, () => defaultTable)
    )
  )

/** Tokens left for the input once `reservedOutputTokens` are set aside for the answer (never below 0). */
export const inputBudget = (contextWindowTokens: number, reservedOutputTokens: number): number =>
  Math.max(0, contextWindowTokens - reservedOutputTokens)
