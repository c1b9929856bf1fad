/**
 * A `LanguageModel` over OpenAI chat completions (the `openai` SDK), for OpenAI itself and any OpenAI-compatible
 * server (Ollama, vLLM, LM Studio, OpenRouter, Azure-style gateways) through a base URL and extra headers: tools and
 * parallel tool calls, tool choice, `json_schema` structured output with strict-mode-safe schemas, usage with cached
 * and reasoning tokens, `<think>` blocks stripped, and every vendor error mapped onto the error union. The SDK never
 * retries; resilience is core's.
 */
import { Errors, LanguageModel, StructuredOutput, Tokens, Usage } from "@deep-research/core"
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Predicate from "effect/Predicate"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import OpenAI from "openai"
import type {
  ChatCompletionChunk,
  ChatCompletionCreateParamsBase,
  ChatCompletionMessageParam,
  ChatCompletionTool,
  ChatCompletionToolChoiceOption
} from "openai/resources/chat/completions"
import { fetchKeepingErrorBodies, toProviderError } from "./internal/openaiErrors.js"

// =============================================================================
// Options
// =============================================================================

/** How to reach an OpenAI-compatible server. */
export interface ClientOptions {
  /** Optional when `baseUrl` points at a server that needs none (Ollama, vLLM, LM Studio). */
  readonly apiKey?: Redacted.Redacted | string | undefined
  /** Including `/v1` where the server has it. Defaults to OpenAI's own API. */
  readonly baseUrl?: string | undefined
  /** Sent with every request (gateway keys, OpenRouter's `HTTP-Referer`, Azure's `api-key`). */
  readonly headers?: Readonly<Record<string, string>> | undefined
  /** Query parameters sent with every request (Azure-style `api-version`). */
  readonly query?: Readonly<Record<string, string>> | undefined
  readonly organization?: string | undefined
  readonly project?: string | undefined
  /** The client's limit on one request. Default 10 minutes. */
  readonly timeout?: Duration.DurationInput | undefined
}

/** How to build a model. */
export interface Options extends ClientOptions {
  /** e.g. `gpt-4.1`, or the compatible server's model name. */
  readonly model: string
  /** The name recorded on errors and used for resilience limits. Default `openai`. */
  readonly provider?: string | undefined
  /**
   * What the server can do. Default: tool calling and structured output on, web search off. Without structured
   * output core's `generateObject` prompts for JSON; without tool calling core uses its JSON action protocol.
   */
  readonly capabilities?: Partial<LanguageModel.Capabilities> | undefined
  /** Tokens of input plus output. Default: core's context-window table. */
  readonly contextWindow?: number | undefined
  /** The field that carries the output limit; older compatible servers only know `max_tokens`. */
  readonly maxTokensField?: "max_completion_tokens" | "max_tokens" | undefined
  /** Let the model call several tools in one turn (sent only when tools are). Default true. */
  readonly parallelToolCalls?: boolean | undefined
  /** Send tools in strict mode when their schemas allow it. Default false: arguments are decoded by core anyway. */
  readonly strictTools?: boolean | undefined
  readonly temperature?: number | undefined
  readonly reasoningEffort?: "minimal" | "low" | "medium" | "high" | undefined
  /** The role of the system prompt; reasoning models accept `developer`. Default `system`. */
  readonly systemRole?: "system" | "developer" | undefined
  /** Stream the answer and accumulate it (with `stream_options.include_usage`); helps behind gateways with idle limits. */
  readonly stream?: boolean | undefined
  /** An existing client, instead of one built from the client options. */
  readonly client?: OpenAI | undefined
}

const defaultTimeout = Duration.minutes(10)

// =============================================================================
// Constructors
// =============================================================================

/** An SDK client with its own retries off: resilience is core's. */
export const makeClient = (options: ClientOptions): OpenAI => {
  const apiKey =
    options.apiKey === undefined
      ? // The SDK refuses to start without a key; the header is then left out (below), so none is sent.
        "no-key"
      : typeof options.apiKey === "string"
        ? options.apiKey
        : Redacted.value(options.apiKey)
  return new OpenAI({
    apiKey,
    // Given explicitly so that the SDK reads no environment variable behind the configuration's back.
    baseURL: options.baseUrl ?? "https://api.openai.com/v1",
    organization: options.organization ?? null,
    project: options.project ?? null,
    maxRetries: 0,
    fetch: fetchKeepingErrorBodies(),
    timeout: Duration.toMillis(Duration.decode(options.timeout ?? defaultTimeout)),
    defaultHeaders: { ...(options.apiKey === undefined ? { Authorization: null } : {}), ...options.headers },
    ...(options.query === undefined ? {} : { defaultQuery: { ...options.query } })
  })
}

/** Builds the model. */
export const make = (options: Options): Effect.Effect<LanguageModel.Service> =>
  Effect.gen(function* () {
    const provider = options.provider ?? "openai"
    const client = options.client ?? makeClient(options)
    const errorContext = {
      provider,
      model: options.model,
      timeout: Duration.decode(options.timeout ?? defaultTimeout)
    }
    const capabilities: LanguageModel.Capabilities = {
      toolCalling: options.capabilities?.toolCalling ?? true,
      structuredOutput: options.capabilities?.structuredOutput ?? true,
      webSearch: options.capabilities?.webSearch ?? false
    }
    const contextWindow = options.contextWindow ?? (yield* Tokens.contextWindow(options.model))
    const generate = Effect.fn("OpenAiLanguageModel.generate")(function* (request: LanguageModel.GenerateRequest) {
      const prepared = toChatRequest(options, capabilities, request)
      const raw = yield* Effect.tryPromise({
        try: (signal) =>
          options.stream === true
            ? client.chat.completions
                .create({ ...prepared.body, stream: true, stream_options: { include_usage: true } }, { signal })
                .then(accumulate)
            : client.chat.completions.create({ ...prepared.body, stream: false }, { signal }),
        catch: (error) => toProviderError(error, errorContext)
      })
      const completion = yield* decodeCompletion(raw, provider)
      return toCompletion(completion, options.model, prepared.responseSchema)
    })
    return LanguageModel.make({ provider, model: options.model, capabilities, contextWindow, generate })
  })

/** The model as the `LanguageModel` in context. */
export const layer = (options: Options): Layer.Layer<LanguageModel.LanguageModel> =>
  Layer.effect(LanguageModel.LanguageModel, make(options))

/**
 * The key from `OPENAI_API_KEY` and the base URL from `OPENAI_BASE_URL`. The key may be missing only when a base URL
 * is set (a local server that needs none).
 */
export const config: Config.Config<{
  readonly apiKey: Redacted.Redacted | undefined
  readonly baseUrl: string | undefined
}> = Config.all({
  apiKey: Config.option(Config.redacted("OPENAI_API_KEY")),
  baseUrl: Config.option(Config.nonEmptyString("OPENAI_BASE_URL"))
}).pipe(
  Config.mapOrFail(({ apiKey, baseUrl }) =>
    Option.isNone(apiKey) && Option.isNone(baseUrl)
      ? Either.left(
          ConfigError.MissingData(
            ["OPENAI_API_KEY"],
            "Expected OPENAI_API_KEY to be set (it may be left out only when OPENAI_BASE_URL points at a server that needs no key)"
          )
        )
      : Either.right({ apiKey: Option.getOrUndefined(apiKey), baseUrl: Option.getOrUndefined(baseUrl) })
  )
)

/** The model with its key and base URL from the configuration (see `config`). */
export const layerConfig = (
  options: Omit<Options, "apiKey" | "baseUrl">
): Layer.Layer<LanguageModel.LanguageModel, ConfigError.ConfigError> =>
  Layer.effect(
    LanguageModel.LanguageModel,
    Effect.flatMap(config, (fromConfig) => make({ ...options, ...fromConfig }))
  )

// =============================================================================
// Strict-mode schemas
// =============================================================================

const unsupportedKeywords: ReadonlySet<string> = new Set([
  "$schema",
  "$id",
  "default",
  "examples",
  "minLength",
  "maxLength",
  "minProperties",
  "maxProperties",
  "uniqueItems",
  "contentMediaType",
  "contentEncoding"
])

const supportedFormats: ReadonlySet<string> = new Set([
  "date-time",
  "time",
  "date",
  "duration",
  "email",
  "hostname",
  "ipv4",
  "ipv6",
  "uuid"
])

const nullable = (schema: Readonly<Record<string, unknown>>): Readonly<Record<string, unknown>> => {
  const type = schema["type"]
  if (typeof type === "string") {
    const values = schema["enum"]
    return {
      ...schema,
      type: [type, "null"],
      ...(Array.isArray(values) && !values.includes(null) ? { enum: [...values, null] } : {})
    }
  }
  if (Array.isArray(type)) return type.includes("null") ? schema : { ...schema, type: [...type, "null"] }
  const anyOf = schema["anyOf"]
  if (Array.isArray(anyOf)) {
    const hasNull = anyOf.some((member) => Predicate.isRecord(member) && member["type"] === "null")
    return hasNull ? schema : { ...schema, anyOf: [...anyOf, { type: "null" }] }
  }
  return { anyOf: [schema, { type: "null" }] }
}

/** The node a local JSON pointer (`#/$defs/a~1b`) names. */
const resolvePointer = (root: unknown, pointer: string): unknown =>
  pointer
    .slice(2)
    .split("/")
    .map((key) => key.replace(/~1/g, "/").replace(/~0/g, "~"))
    .reduce<unknown>((node, key) => (Predicate.isRecord(node) ? node[key] : undefined), root)

/**
 * A schema whose root is a `$ref` (what Effect makes of a `Schema.Class`) with the target brought up to the root,
 * the definitions kept: OpenAI wants an object schema at the root.
 */
export const inlineRootRef = (schema: object): Readonly<Record<string, unknown>> => {
  const record: Readonly<Record<string, unknown>> = { ...schema }
  const ref = record["$ref"]
  if (typeof ref !== "string" || !ref.startsWith("#/")) return record
  const target = resolvePointer(record, ref)
  if (!Predicate.isRecord(target)) return record
  const { $ref: _ref, ...rest } = record
  return { ...target, ...rest }
}

class NotStrict {
  readonly _tag = "NotStrict"
}

const strictNode = (node: unknown): Readonly<Record<string, unknown>> => {
  if (!Predicate.isRecord(node)) throw new NotStrict()
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(node)) {
    if (unsupportedKeywords.has(key)) continue
    if (key === "format" && !(typeof value === "string" && supportedFormats.has(value))) continue
    if (key === "patternProperties" || key === "propertyNames" || key === "prefixItems") throw new NotStrict()
    out[key] = value
  }
  if (Array.isArray(out["anyOf"])) out["anyOf"] = out["anyOf"].map(strictNode)
  if (Array.isArray(out["oneOf"])) {
    // Strict mode knows anyOf, not oneOf; for decoding they mean the same here.
    out["anyOf"] = out["oneOf"].map(strictNode)
    delete out["oneOf"]
  }
  for (const defsKey of ["$defs", "definitions"]) {
    const defs = out[defsKey]
    if (Predicate.isRecord(defs)) {
      out[defsKey] = Object.fromEntries(Object.entries(defs).map(([name, def]) => [name, strictNode(def)]))
    }
  }
  const type = out["type"]
  const isObject = type === "object" || (Array.isArray(type) && type.includes("object")) || "properties" in out
  if (isObject) {
    const properties = Predicate.isRecord(out["properties"]) ? out["properties"] : {}
    const additional = out["additionalProperties"]
    if (Object.keys(properties).length === 0 && additional !== false && additional !== undefined) {
      throw new NotStrict()
    }
    if (Predicate.isRecord(additional)) throw new NotStrict()
    const required = new Set(Array.isArray(out["required"]) ? out["required"] : [])
    out["properties"] = Object.fromEntries(
      Object.entries(properties).map(([name, property]) => {
        const strict = strictNode(property)
        return [name, required.has(name) ? strict : nullable(strict)]
      })
    )
    out["required"] = Object.keys(properties)
    out["additionalProperties"] = false
  }
  if (type === "array" || (Array.isArray(type) && type.includes("array"))) {
    const items = out["items"]
    if (Array.isArray(items)) throw new NotStrict()
    if (items !== undefined) out["items"] = strictNode(items)
  }
  const hasShape =
    type !== undefined || "anyOf" in out || "$ref" in out || "enum" in out || "const" in out || "properties" in out
  if (!hasShape) throw new NotStrict()
  return out
}

/**
 * The strict-mode form of a JSON schema (every property required, no additional properties, optional properties
 * made nullable, unsupported keywords dropped), or `undefined` when it has parts strict mode cannot express
 * (free-form objects, maps, tuples, untyped values).
 */
export const strictJsonSchema = (schema: object): Readonly<Record<string, unknown>> | undefined => {
  try {
    return strictNode(inlineRootRef(schema))
  } catch (error) {
    if (error instanceof NotStrict) return undefined
    throw error
  }
}

/** Removes the `null`s strict mode made the model write for properties the original schema had as optional. */
const dropOptionalNulls = (value: unknown, schema: unknown, root: unknown): unknown => {
  if (!Predicate.isRecord(schema)) return value
  const ref = schema["$ref"]
  if (typeof ref === "string" && ref.startsWith("#/")) {
    return dropOptionalNulls(value, resolvePointer(root, ref), root)
  }
  const anyOf = schema["anyOf"]
  if (Array.isArray(anyOf) && value !== null && typeof value === "object") {
    const objectMember = anyOf.find(
      (member) =>
        Predicate.isRecord(member) && (member["type"] === "object" || "properties" in member || "$ref" in member)
    )
    return objectMember === undefined ? value : dropOptionalNulls(value, objectMember, root)
  }
  if (Array.isArray(value)) {
    return value.map((item) => dropOptionalNulls(item, schema["items"], root))
  }
  if (Predicate.isRecord(value) && Predicate.isRecord(schema["properties"])) {
    const properties = schema["properties"]
    const required = new Set(Array.isArray(schema["required"]) ? schema["required"] : [])
    const out: Record<string, unknown> = {}
    for (const [key, field] of Object.entries(value)) {
      if (field === null && !required.has(key) && key in properties) continue
      out[key] = dropOptionalNulls(field, properties[key], root)
    }
    return out
  }
  return value
}

// =============================================================================
// Requests
// =============================================================================

type ChatBody = Omit<ChatCompletionCreateParamsBase, "stream" | "stream_options">

/** A request body, and the caller's schema when structured output was asked for (to tidy the answer). */
export interface PreparedRequest {
  readonly body: ChatBody
  readonly responseSchema: object | undefined
}

const argumentsText = (args: unknown): string => (typeof args === "string" ? args : JSON.stringify(args ?? {}))

const toMessages = (request: LanguageModel.GenerateRequest, systemRole: "system" | "developer") => {
  const messages: Array<ChatCompletionMessageParam> = []
  if (request.system !== undefined && request.system !== "") {
    messages.push(
      systemRole === "developer"
        ? { role: "developer", content: request.system }
        : { role: "system", content: request.system }
    )
  }
  for (const message of request.messages) {
    switch (message._tag) {
      case "user":
        messages.push({ role: "user", content: message.content })
        break
      case "assistant":
        messages.push({
          role: "assistant",
          content: message.content === "" && message.toolCalls.length > 0 ? null : message.content,
          ...(message.toolCalls.length > 0
            ? {
                tool_calls: message.toolCalls.map((call) => ({
                  id: call.id,
                  type: "function" as const,
                  function: { name: call.name, arguments: argumentsText(call.arguments) }
                }))
              }
            : {})
        })
        break
      case "tool":
        messages.push({
          role: "tool",
          tool_call_id: message.toolCallId,
          content: message.isError ? `Error: ${message.content}` : message.content
        })
        break
    }
  }
  return messages
}

const toToolChoice = (choice: LanguageModel.ToolChoice): ChatCompletionToolChoiceOption =>
  typeof choice === "string" ? choice : { type: "function", function: { name: choice.tool } }

/** JSON schema names may hold letters, digits, `_` and `-`, at most 64. */
const schemaName = (name: string): string => name.replace(/[^a-zA-Z0-9_-]/g, "_").slice(0, 64) || "answer"

/** The chat-completions body for a request. */
export const toChatRequest = (
  options: Options,
  capabilities: LanguageModel.Capabilities,
  request: LanguageModel.GenerateRequest
): PreparedRequest => {
  const tools = capabilities.toolCalling ? (request.tools ?? []) : []
  const chatTools: Array<ChatCompletionTool> = tools.map((tool) => {
    const strict = options.strictTools === true ? strictJsonSchema(tool.parameters) : undefined
    return {
      type: "function",
      function: {
        name: tool.name,
        description: tool.description,
        parameters: strict ?? { ...tool.parameters },
        ...(strict === undefined ? {} : { strict: true })
      }
    }
  })
  const format = capabilities.structuredOutput ? request.responseFormat : undefined
  const strictFormat = format === undefined ? undefined : strictJsonSchema(format.schema)
  const body: ChatBody = {
    model: options.model,
    messages: toMessages(request, options.systemRole ?? "system"),
    ...(chatTools.length > 0
      ? {
          tools: chatTools,
          ...(request.toolChoice === undefined ? {} : { tool_choice: toToolChoice(request.toolChoice) }),
          parallel_tool_calls: options.parallelToolCalls ?? true
        }
      : {}),
    ...(format === undefined
      ? {}
      : {
          response_format: {
            type: "json_schema",
            json_schema: {
              name: schemaName(format.name),
              ...(format.description === undefined ? {} : { description: format.description }),
              schema: strictFormat ?? inlineRootRef(format.schema),
              strict: strictFormat !== undefined
            }
          }
        }),
    ...(request.maxOutputTokens === undefined
      ? {}
      : (options.maxTokensField ?? "max_completion_tokens") === "max_tokens"
        ? { max_tokens: request.maxOutputTokens }
        : { max_completion_tokens: request.maxOutputTokens }),
    ...(options.temperature === undefined ? {} : { temperature: options.temperature }),
    ...(options.reasoningEffort === undefined ? {} : { reasoning_effort: options.reasoningEffort })
  }
  return { body, responseSchema: strictFormat === undefined ? undefined : format?.schema }
}

// =============================================================================
// Answers
// =============================================================================

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

const decodeCompletion = (raw: unknown, provider: string): Effect.Effect<WireCompletion, Errors.ProviderError> =>
  Schema.decodeUnknown(WireCompletion)(raw).pipe(
    Effect.mapError(
      (error) =>
        new Errors.ProviderUnavailable({
          provider,
          detail: `unexpected answer shape: ${ParseResult.TreeFormatter.formatErrorSync(error)}`
        })
    )
  )

/** Folds a stream of chunks into the shape of a non-streamed completion. */
const accumulate = async (stream: AsyncIterable<ChatCompletionChunk>): Promise<unknown> => {
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
      content += choice.delta?.content ?? ""
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
    return JSON.stringify(dropOptionalNulls(JSON.parse(text), schema, schema))
  } catch {
    return text
  }
}

const toCompletion = (
  wire: WireCompletion,
  model: string,
  responseSchema: object | undefined
): LanguageModel.Completion => {
  const choice = wire.choices[0]
  const message = choice?.message
  const toolCalls = (message?.tool_calls ?? []).flatMap((call, index) =>
    call.function?.name === undefined || call.function.name === null
      ? []
      : [
          new LanguageModel.ToolCall({
            id: call.id ?? `call_${index}`,
            name: call.function.name,
            arguments: parseArguments(call.function.arguments ?? "")
          })
        ]
  )
  const content = message?.content ?? ""
  const refused = content === "" && typeof message?.refusal === "string" && message.refusal !== ""
  const thought = hasThinking.test(content) ? StructuredOutput.stripThinking(content) : content
  const text = refused
    ? (message?.refusal ?? "")
    : responseSchema === undefined
      ? thought
      : tidyStructured(thought, responseSchema)
  const usage = wire.usage
  return new LanguageModel.Completion({
    text,
    toolCalls,
    finishReason: refused ? "content_filter" : toFinishReason(choice?.finish_reason, toolCalls.length > 0),
    usage: new Usage.Usage({
      inputTokens: usage?.prompt_tokens ?? 0,
      outputTokens: usage?.completion_tokens ?? 0,
      cachedInputTokens: usage?.prompt_tokens_details?.cached_tokens ?? 0,
      reasoningTokens: usage?.completion_tokens_details?.reasoning_tokens ?? 0
    }),
    model: wire.model ?? model
  })
}
