/**
 * The answers of OpenAI-compatible chat completions, read the same way streamed or not: the fields this provider reads
 * (compatible servers leave out much of the rest), a stream folded into the shape of a whole answer, tool-call
 * arguments parsed, `<think>` blocks stripped, and the `null`s strict mode made the model write removed again.
 */
import { Errors, LanguageModel, StructuredOutput, Usage } from "@deep-research/core"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import type { ChatCompletionChunk } from "openai/resources/chat/completions"
import * as StrictSchema from "./openaiStrictSchema.js"

const NullableString = Schema.optional(Schema.NullOr(Schema.String))
const NullableNumber = Schema.optional(Schema.NullOr(Schema.Number))

const WireToolCall = Schema.Struct({
  id: NullableString,
  type: NullableString,
  function: Schema.optional(Schema.NullOr(Schema.Struct({ name: NullableString, arguments: NullableString })))
})

const WireUsage = Schema.Struct({
  prompt_tokens: NullableNumber,
  completion_tokens: NullableNumber,
  prompt_tokens_details: Schema.optional(Schema.NullOr(Schema.Struct({ cached_tokens: NullableNumber }))),
  completion_tokens_details: Schema.optional(Schema.NullOr(Schema.Struct({ reasoning_tokens: NullableNumber })))
})

/** The part of a chat completion this module reads; compatible servers leave out much of the rest. */
const WireCompletion = Schema.Struct({
  model: NullableString,
  choices: Schema.Array(
    Schema.Struct({
      message: Schema.optional(
        Schema.NullOr(
          Schema.Struct({
            content: NullableString,
            refusal: NullableString,
            tool_calls: Schema.optional(Schema.NullOr(Schema.Array(WireToolCall)))
          })
        )
      ),
      finish_reason: NullableString
    })
  ),
  usage: Schema.optional(Schema.NullOr(WireUsage))
})
type WireCompletion = typeof WireCompletion.Type

const decodeWire = Schema.decodeUnknownEither(WireCompletion)

/**
 * The completion in an answer: its fields this module reads decoded, then read (`toCompletion`), in one step (the
 * schema is synchronous).
 */
export const completionOf = (
  raw: unknown,
  provider: string,
  model: string,
  prepared: StrictSchema.SentSchemas
): Effect.Effect<LanguageModel.Completion, Errors.ProviderError> =>
  Either.match(decodeWire(raw), {
    onLeft: (error) =>
      Effect.fail(
        new Errors.ProviderUnavailable({
          provider,
          detail: `unexpected answer shape: ${ParseResult.TreeFormatter.formatErrorSync(error)}`
        })
      ),
    onRight: (wire) => Effect.succeed(toCompletion(wire, model, prepared))
  })

/** Folds a stream of chunks into the shape of a non-streamed completion, giving `onContent` the text as it grows. */
export const accumulate = async (
  stream: AsyncIterable<ChatCompletionChunk>,
  onContent?: (contentSoFar: string) => void
): Promise<unknown> => {
  let model: string | undefined
  let content = ""
  let refusal = ""
  let finishReason: string | null = null
  let usage: unknown = null
  const calls = new Map<number, { id: string; name: string; arguments: string }>()
  for await (const chunk of stream) {
    model = chunk.model ?? model
    if (chunk.usage) usage = chunk.usage
    for (const choice of chunk.choices ?? []) {
      if (choice.index !== 0) continue
      const piece = choice.delta?.content ?? ""
      content += piece
      if (piece !== "" && onContent !== undefined) onContent(content)
      refusal += choice.delta?.refusal ?? ""
      if (choice.finish_reason) finishReason = choice.finish_reason
      for (const delta of choice.delta?.tool_calls ?? []) {
        const call = calls.get(delta.index) ?? { id: "", name: "", arguments: "" }
        if (delta.id) call.id = delta.id
        if (delta.function?.name) call.name += delta.function.name
        call.arguments += delta.function?.arguments ?? ""
        calls.set(delta.index, call)
      }
    }
  }
  const toolCalls = [...calls.entries()]
    .sort(([a], [b]) => a - b)
    .map(([, call]) => ({ id: call.id, type: "function", function: { name: call.name, arguments: call.arguments } }))
  return {
    model,
    choices: [
      {
        message: { content, refusal: refusal === "" ? null : refusal, tool_calls: toolCalls },
        finish_reason: finishReason
      }
    ],
    usage
  }
}

const parseArguments = (text: string): unknown => {
  if (text.trim() === "") return {}
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

const toFinishReason = (reason: string | null | undefined, hasToolCalls: boolean): LanguageModel.FinishReason => {
  switch (reason) {
    case "stop":
      // Some compatible servers say "stop" for a turn that called tools.
      return hasToolCalls ? "tool_calls" : "stop"
    case "length":
      return "length"
    case "tool_calls":
    case "function_call":
      return "tool_calls"
    case "content_filter":
      return "content_filter"
    default:
      return hasToolCalls ? "tool_calls" : "other"
  }
}

const hasThinking = /<(think|thinking|reasoning)>/i

const tidyStructured = (text: string, schema: object): string => {
  try {
    return JSON.stringify(StrictSchema.dropOptionalNulls(JSON.parse(text), schema, schema))
  } catch {
    return text
  }
}

const tidyArguments = (args: unknown, schema: object | undefined): unknown =>
  schema === undefined || typeof args === "string" ? args : StrictSchema.dropOptionalNulls(args, schema, schema)

export const toCompletion = (
  wire: WireCompletion,
  model: string,
  prepared: StrictSchema.SentSchemas
): LanguageModel.Completion => {
  const choice = wire.choices[0]
  const message = choice?.message
  const toolCalls = (message?.tool_calls ?? []).flatMap((call, index) =>
    call.function?.name === undefined || call.function.name === null
      ? []
      : [
          new LanguageModel.ToolCall(
            {
              id: call.id ?? `call_${index}`,
              name: call.function.name,
              arguments: tidyArguments(
                parseArguments(call.function.arguments ?? ""),
                prepared.strictTools.get(call.function.name)
              )
            },
            true
          )
        ]
  )
  const content = message?.content ?? ""
  const refused = content === "" && typeof message?.refusal === "string" && message.refusal !== ""
  const thought = hasThinking.test(content) ? StructuredOutput.stripThinking(content) : content
  const text = refused
    ? (message?.refusal ?? "")
    : prepared.responseSchema === undefined
      ? thought
      : tidyStructured(thought, prepared.responseSchema)
  const usage = wire.usage
  // Made from the decoded answer, whose types the compiler has checked: the classes' own validation would check them
  // again.
  return new LanguageModel.Completion(
    {
      text,
      toolCalls,
      finishReason: refused ? "content_filter" : toFinishReason(choice?.finish_reason, toolCalls.length > 0),
      usage: new Usage.Usage(
        {
          inputTokens: usage?.prompt_tokens ?? 0,
          outputTokens: usage?.completion_tokens ?? 0,
          cachedInputTokens: usage?.prompt_tokens_details?.cached_tokens ?? 0,
          reasoningTokens: usage?.completion_tokens_details?.reasoning_tokens ?? 0
        },
        true
      ),
      model: wire.model ?? model
    },
    true
  )
}
