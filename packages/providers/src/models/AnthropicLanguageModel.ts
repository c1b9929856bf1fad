/**
 * A `LanguageModel` over Anthropic's Messages API (`@anthropic-ai/sdk`): system prompt, tool_use / tool_result,
 * tool choice, structured output by a forced tool, usage with the prompt-cache fields, and every vendor error mapped
 * onto the error union. The SDK never retries; resilience is core's.
 */
import type Anthropic from "@anthropic-ai/sdk"
import { Errors, LanguageModel, Tokens, Usage } from "@deep-research/core"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Predicate from "effect/Predicate"
import * as Runtime from "effect/Runtime"
import type * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { makeClient, send } from "./anthropicClient.js"
import * as Environment from "../Environment.js"

// =============================================================================
// Options
// =============================================================================

/** How to build an Anthropic model. */
export interface Options {
  readonly apiKey: Redacted.Redacted
  /** e.g. `claude-sonnet-4-5`. */
  readonly model: string
  /** Without `/v1`. Defaults to Anthropic's own API. */
  readonly baseUrl?: string | undefined
  readonly headers?: Readonly<Record<string, string>> | undefined
  /** `max_tokens` when a request does not say (the API requires one). Default: `defaultMaxTokens(model)`. */
  readonly maxTokens?: number | undefined
  /** Tokens of input plus output the model accepts. Default: core's context-window table. */
  readonly contextWindow?: number | undefined
  /** Stream the answer and accumulate it: needed for long outputs, which the API will not hold open unstreamed. */
  readonly stream?: boolean | undefined
  /** The client's limit on one request. Default 10 minutes. */
  readonly timeout?: Duration.DurationInput | undefined
  /** The provider name recorded on errors and used for resilience limits. Default `anthropic`. */
  readonly provider?: string | undefined
}

/** The largest outputs of the older models; newer ones accept far more, so 16k is a sensible ceiling by default. */
const maxTokensByModel: ReadonlyArray<readonly [prefix: string, maxTokens: number]> = [
  ["claude-3-haiku", 4_096],
  ["claude-3-opus", 4_096],
  ["claude-3-sonnet", 4_096],
  ["claude-3-5", 8_192]
]

/** The `max_tokens` sent when neither the request nor the options give one. */
export const defaultMaxTokens = (model: string): number =>
  maxTokensByModel.find(([prefix]) => model.startsWith(prefix))?.[1] ?? 16_384

// =============================================================================
// Constructors
// =============================================================================

/** Builds the model. */
export const make = (options: Options): Effect.Effect<LanguageModel.Service> =>
  Effect.gen(function* () {
    const provider = options.provider ?? "anthropic"
    const client = makeClient(options)
    const stream = options.stream ?? false
    const maxTokens = options.maxTokens ?? defaultMaxTokens(options.model)
    const generate = Effect.fn("AnthropicLanguageModel.generate")(function* (request: LanguageModel.GenerateRequest) {
      const prepared = toMessagesRequest(options.model, maxTokens, request)
      // A caller that reads the text as it is written (`TextProgress`) gets the answer streamed.
      const progress = yield* Effect.serviceOption(LanguageModel.TextProgress)
      const sink = Option.isSome(progress) ? yield* progress.value.start : undefined
      const runtime = yield* Effect.runtime<never>()
      const onText = sink === undefined ? undefined : (text: string) => Runtime.runFork(runtime)(sink(text))
      const raw = yield* send(client, prepared.body, { provider, stream, onText })
      const message = yield* decodeMessage(raw, provider)
      return toCompletion(message, prepared.format)
    })
    return LanguageModel.make({
      provider,
      model: options.model,
      capabilities: { toolCalling: true, structuredOutput: true, webSearch: true },
      contextWindow: options.contextWindow ?? (yield* Tokens.contextWindow(options.model)),
      generate
    })
  })

/** The model as the `LanguageModel` in context. */
export const layer = (options: Options): Layer.Layer<LanguageModel.LanguageModel> =>
  Layer.effect(LanguageModel.LanguageModel, make(options))

/** The model with the key from `ANTHROPIC_API_KEY` and the base URL from `ANTHROPIC_BASE_URL` (if set). */
export const layerConfig = (
  options: Omit<Options, "apiKey" | "baseUrl">
): Layer.Layer<LanguageModel.LanguageModel, ConfigError.ConfigError> =>
  Layer.effect(
    LanguageModel.LanguageModel,
    Effect.flatMap(config, (fromConfig) => make({ ...options, ...fromConfig }))
  )

/** The key and base URL from the environment (or whatever `ConfigProvider` is installed). */
export const config: Config.Config<{ readonly apiKey: Redacted.Redacted; readonly baseUrl: string | undefined }> =
  Config.all({
    apiKey: Config.redacted(Config.nonEmptyString(Environment.anthropicApiKey)),
    baseUrl: Config.option(Config.nonEmptyString(Environment.anthropicBaseUrl)).pipe(Config.map(Option.getOrUndefined))
  })

// =============================================================================
// Requests
// =============================================================================

/** A request body, and the name of the forced tool that carries the structured answer when one was asked for. */
export interface PreparedRequest {
  readonly body: Anthropic.MessageCreateParamsNonStreaming
  readonly format: string | undefined
}

/** Tool inputs must be objects; a call whose arguments were not valid JSON is replayed with an empty input. */
const toolInput = (args: unknown): Record<string, unknown> => {
  if (Predicate.isRecord(args)) return args
  if (typeof args === "string") {
    try {
      const parsed: unknown = JSON.parse(args)
      if (Predicate.isRecord(parsed)) return parsed
    } catch {
      // fall through: the tool result already told the model its arguments were unreadable
    }
  }
  return {}
}

type Block = Anthropic.ContentBlockParam

const contentOf = (message: LanguageModel.Message): { role: "user" | "assistant"; blocks: Array<Block> } => {
  switch (message._tag) {
    case "user":
      return { role: "user", blocks: message.content.trim() === "" ? [] : [{ type: "text", text: message.content }] }
    case "assistant":
      return {
        role: "assistant",
        blocks: [
          ...(message.content.trim() === "" ? [] : [{ type: "text" as const, text: message.content }]),
          ...message.toolCalls.map((call): Block => ({
            type: "tool_use",
            id: call.id,
            name: call.name,
            input: toolInput(call.arguments)
          }))
        ]
      }
    case "tool":
      return {
        role: "user",
        blocks: [
          {
            type: "tool_result",
            tool_use_id: message.toolCallId,
            content: message.content,
            ...(message.isError ? { is_error: true } : {})
          }
        ]
      }
  }
}

/**
 * The conversation as Messages API turns: consecutive messages of one role become one turn (so all the results of a
 * turn's tool calls travel in one user message, as the API requires), tool results before any text, and messages
 * with nothing in them dropped (the API refuses empty content).
 */
export const toMessages = (messages: ReadonlyArray<LanguageModel.Message>): Array<Anthropic.MessageParam> => {
  const turns: Array<{ role: "user" | "assistant"; blocks: Array<Block> }> = []
  for (const message of messages) {
    const { role, blocks } = contentOf(message)
    if (blocks.length === 0) continue
    const last = turns.at(-1)
    if (last !== undefined && last.role === role) last.blocks.push(...blocks)
    else turns.push({ role, blocks: [...blocks] })
  }
  return turns.map(({ role, blocks }) => ({
    role,
    content:
      role === "user"
        ? [...blocks.filter((b) => b.type === "tool_result"), ...blocks.filter((b) => b.type !== "tool_result")]
        : blocks
  }))
}

const toToolChoice = (choice: LanguageModel.ToolChoice): Anthropic.ToolChoice => {
  if (choice === "auto") return { type: "auto" }
  if (choice === "required") return { type: "any" }
  if (choice === "none") return { type: "none" }
  return { type: "tool", name: choice.tool }
}

/** The Messages API body of a request. */
export const toMessagesRequest = (
  model: string,
  defaultMaxTokens: number,
  request: LanguageModel.GenerateRequest
): PreparedRequest => {
  // Core sends every schema with an object at its root, as `input_schema` must be.
  const tools: Array<Anthropic.Tool> = (request.tools ?? []).map((tool) => ({
    name: tool.name,
    description: tool.description,
    input_schema: tool.parameters
  }))
  let format: string | undefined
  let toolChoice: Anthropic.ToolChoice | undefined =
    request.toolChoice !== undefined && tools.length > 0 ? toToolChoice(request.toolChoice) : undefined
  if (request.responseFormat !== undefined) {
    format = request.responseFormat.name
    tools.push({
      name: request.responseFormat.name,
      description: request.responseFormat.description ?? "Answer by calling this tool with the requested object.",
      input_schema: request.responseFormat.schema
    })
    toolChoice = { type: "tool", name: request.responseFormat.name }
  }
  const system = request.system ?? ""
  return {
    body: {
      model,
      max_tokens: request.maxOutputTokens ?? defaultMaxTokens,
      messages: toMessages(request.messages),
      ...(system.trim() !== "" ? { system } : {}),
      ...(tools.length > 0 ? { tools } : {}),
      ...(toolChoice !== undefined ? { tool_choice: toolChoice } : {})
    },
    format
  }
}

// =============================================================================
// Responses
// =============================================================================

const TextBlock = Schema.Struct({ type: Schema.Literal("text"), text: Schema.String })
const ToolUseBlock = Schema.Struct({
  type: Schema.Literal("tool_use"),
  id: Schema.String,
  name: Schema.String,
  input: Schema.Unknown
})
/** Thinking, server tool calls and their results: not part of the completion's text or tool calls. */
const OtherBlock = Schema.Struct({ type: Schema.String })

const OptionalCount = Schema.optional(Schema.NullOr(Schema.Number))

/** The fields of a Messages API answer this provider reads. */
export const MessageResponse = Schema.Struct({
  model: Schema.String,
  content: Schema.Array(Schema.Union(TextBlock, ToolUseBlock, OtherBlock)),
  stop_reason: Schema.optional(Schema.NullOr(Schema.String)),
  usage: Schema.Struct({
    input_tokens: Schema.Number,
    output_tokens: Schema.Number,
    cache_read_input_tokens: OptionalCount,
    cache_creation_input_tokens: OptionalCount,
    output_tokens_details: Schema.optional(Schema.NullOr(Schema.Struct({ thinking_tokens: OptionalCount })))
  })
})
export type MessageResponse = typeof MessageResponse.Type

const decodeMessage = (raw: unknown, provider: string): Effect.Effect<MessageResponse, Errors.ProviderUnavailable> =>
  Schema.decodeUnknown(MessageResponse)(raw).pipe(
    Effect.mapError(
      (error) =>
        new Errors.ProviderUnavailable({
          provider,
          detail: `unreadable response: ${ParseResult.TreeFormatter.formatErrorSync(error)}`
        })
    )
  )

/** Maps `stop_reason` onto the port's finish reasons. */
export const finishReasonOf = (stopReason: string | null | undefined): LanguageModel.FinishReason => {
  switch (stopReason) {
    case "end_turn":
    case "stop_sequence":
      return "stop"
    case "max_tokens":
    case "model_context_window_exceeded":
      return "length"
    case "tool_use":
      return "tool_calls"
    case "refusal":
      return "content_filter"
    default:
      return "other"
  }
}

/**
 * Usage in the port's terms. Anthropic's `input_tokens` counts only the uncached part of the prompt; cache reads and
 * cache writes are reported beside it, so all three make the input, and the reads are what was cached.
 */
export const usageOf = (usage: MessageResponse["usage"]): Usage.Usage => {
  const cacheRead = usage.cache_read_input_tokens ?? 0
  const cacheCreation = usage.cache_creation_input_tokens ?? 0
  return new Usage.Usage({
    inputTokens: usage.input_tokens + cacheRead + cacheCreation,
    outputTokens: usage.output_tokens,
    cachedInputTokens: cacheRead,
    reasoningTokens: usage.output_tokens_details?.thinking_tokens ?? 0
  })
}

/** A decoded answer as a completion. With a structured-output tool, its input's JSON becomes the text. */
export const toCompletion = (message: MessageResponse, format: string | undefined): LanguageModel.Completion => {
  const texts: Array<string> = []
  const toolCalls: Array<LanguageModel.ToolCall> = []
  let structured: string | undefined
  for (const block of message.content) {
    if (block.type === "text" && "text" in block) texts.push(block.text)
    else if (block.type === "tool_use" && "input" in block) {
      if (format !== undefined && block.name === format && structured === undefined) {
        structured = JSON.stringify(block.input)
      } else {
        toolCalls.push(new LanguageModel.ToolCall({ id: block.id, name: block.name, arguments: block.input }))
      }
    }
  }
  const finishReason = finishReasonOf(message.stop_reason)
  return new LanguageModel.Completion({
    text: structured ?? texts.join(""),
    toolCalls,
    // The forced tool call is the answer itself, not a request to run a tool.
    finishReason: structured !== undefined && finishReason === "tool_calls" ? "stop" : finishReason,
    usage: usageOf(message.usage),
    model: message.model
  })
}
