/**
 * The language model port: one model, one `generate` call. Providers implement it over a vendor API; the pipeline
 * reaches models through the `ModelRouter`, one per role.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { ProviderError } from "./Errors.js"
import type { ObjectJsonSchema, ToolDefinition } from "./Tool.js"
import { Usage } from "./Usage.js"

// =============================================================================
// Messages
// =============================================================================

/** A tool call the model made. `arguments` is the parsed JSON, or the raw text when it was not valid JSON. */
export class ToolCall extends Schema.Class<ToolCall>("@deep-research/core/ToolCall")({
  id: Schema.String,
  name: Schema.String,
  arguments: Schema.Unknown
}) {}

/** A message from the user (or the program speaking for it). */
export class UserMessage extends Schema.TaggedClass<UserMessage>("@deep-research/core/UserMessage")("user", {
  content: Schema.String
}) {}

/** A message of the model: text, tool calls, or both. */
export class AssistantMessage extends Schema.TaggedClass<AssistantMessage>("@deep-research/core/AssistantMessage")(
  "assistant",
  {
    content: Schema.String,
    toolCalls: Schema.Array(ToolCall)
  }
) {}

/** The result of one tool call, answered to the model. */
export class ToolResultMessage extends Schema.TaggedClass<ToolResultMessage>("@deep-research/core/ToolResultMessage")(
  "tool",
  {
    toolCallId: Schema.String,
    name: Schema.String,
    content: Schema.String,
    isError: Schema.optionalWith(Schema.Boolean, { default: () => false })
  }
) {}

/** A message of a conversation. */
export const Message = Schema.Union(UserMessage, AssistantMessage, ToolResultMessage)
export type Message = typeof Message.Type

// =============================================================================
// Requests and completions
// =============================================================================

/** Which tool the model must call: any or none at its choice, at least one, none, or the named one. */
export type ToolChoice = "auto" | "required" | "none" | { readonly tool: string }

/** Ask for a JSON answer matching a schema; the provider uses the vendor's native mechanism. */
export interface ResponseFormat {
  readonly name: string
  readonly description?: string | undefined
  /** A JSON schema with an object at its root (see `Tool.jsonSchemaOf`). */
  readonly schema: ObjectJsonSchema
}

/** One call to a model. */
export interface GenerateRequest {
  readonly system?: string | undefined
  readonly messages: ReadonlyArray<Message>
  readonly tools?: ReadonlyArray<ToolDefinition> | undefined
  readonly toolChoice?: ToolChoice | undefined
  readonly maxOutputTokens?: number | undefined
  /** Only when `capabilities.structuredOutput`: the answer's text is then JSON of this schema. */
  readonly responseFormat?: ResponseFormat | undefined
}

/** Why the model stopped. */
export const FinishReason = Schema.Literal("stop", "length", "tool_calls", "content_filter", "other")
export type FinishReason = typeof FinishReason.Type

/** A model's answer. */
export class Completion extends Schema.Class<Completion>("@deep-research/core/Completion")({
  text: Schema.String,
  toolCalls: Schema.Array(ToolCall),
  finishReason: FinishReason,
  usage: Usage,
  model: Schema.String
}) {}

/** What a model can do natively. */
export interface Capabilities {
  readonly toolCalling: boolean
  readonly structuredOutput: boolean
  readonly webSearch: boolean
}

// =============================================================================
// Service
// =============================================================================

/** One language model. */
export interface Service {
  /** The vendor or server behind it, e.g. `openai`; resilience limits are kept per provider. */
  readonly provider: string
  readonly model: string
  readonly capabilities: Capabilities
  /** Tokens of input plus output the model accepts. */
  readonly contextWindow: number
  readonly generate: (request: GenerateRequest) => Effect.Effect<Completion, ProviderError>
  /**
   * The input tokens of a request by the vendor's own tokenizer, for models whose vendor publishes it; without it, the
   * script-aware estimate of `Tokens` stands in.
   */
  readonly countTokens?: ((request: GenerateRequest) => Effect.Effect<number>) | undefined
  /** The output limit the model sends with a call that sets none, when it has one of its own. */
  readonly maxOutputTokens?: number | undefined
}

/** The language model in context. The pipeline uses `ModelRouter` instead, which holds one per role. */
export class LanguageModel extends Context.Tag("@deep-research/core/LanguageModel")<LanguageModel, Service>() {}

/**
 * Where the text of an answer goes while it is written, for a caller that can use it before the answer ends (the
 * citation check of a report being written). A provider that streams calls `start` once for each request it sends (a
 * retry starts again) and gives the sink the whole text so far each time it grows; a provider that does not stream
 * never calls it, and the caller has the text when the call returns. Put in context with `withTextProgress`.
 */
export class TextProgress extends Context.Tag("@deep-research/core/LanguageModel/TextProgress")<
  TextProgress,
  { readonly start: Effect.Effect<(textSoFar: string) => Effect.Effect<void>> }
>() {}

/** Runs `effect` with its model calls' text given to `progress` as it is written (see `TextProgress`). */
export const withTextProgress =
  (progress: TextProgress["Type"]) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, Exclude<R, TextProgress>> =>
    Effect.provideService(effect, TextProgress, progress)

/** Builds a service, filling in the capabilities not given (all off) and the context window (128k). */
export const make = (options: {
  readonly provider: string
  readonly model: string
  readonly capabilities?: Partial<Capabilities> | undefined
  readonly contextWindow?: number | undefined
  readonly generate: (request: GenerateRequest) => Effect.Effect<Completion, ProviderError>
  readonly countTokens?: ((request: GenerateRequest) => Effect.Effect<number>) | undefined
  readonly maxOutputTokens?: number | undefined
}): Service => ({
  provider: options.provider,
  model: options.model,
  capabilities: {
    toolCalling: options.capabilities?.toolCalling ?? false,
    structuredOutput: options.capabilities?.structuredOutput ?? false,
    webSearch: options.capabilities?.webSearch ?? false
  },
  contextWindow: options.contextWindow ?? 128_000,
  generate: options.generate,
  ...(options.countTokens === undefined ? {} : { countTokens: options.countTokens }),
  ...(options.maxOutputTokens === undefined ? {} : { maxOutputTokens: options.maxOutputTokens })
})

/** Shorthand for a user message. Its field is typed, so the class does not validate it again. */
export const user = (content: string): UserMessage => new UserMessage({ content }, true)

/** Shorthand for a model message. Its fields are typed, so the class does not validate them again. */
export const assistant = (content: string, toolCalls: ReadonlyArray<ToolCall> = []): AssistantMessage =>
  new AssistantMessage({ content, toolCalls }, true)

/** Shorthand for a tool result. Its fields are typed, so the class does not validate them again. */
export const toolResult = (call: ToolCall, content: string, isError = false): ToolResultMessage =>
  new ToolResultMessage({ toolCallId: call.id, name: call.name, content, isError }, true)
