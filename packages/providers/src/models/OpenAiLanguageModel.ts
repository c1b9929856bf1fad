/**
 * A `LanguageModel` over OpenAI chat completions (the `openai` SDK), for OpenAI itself and any OpenAI-compatible
 * server (Ollama, vLLM, LM Studio, OpenRouter, Azure-style gateways) through a base URL and extra headers: tools and
 * parallel tool calls, tool choice, `json_schema` structured output with strict-mode-safe schemas, usage with cached
 * and reasoning tokens, `<think>` blocks stripped, and every vendor error mapped onto the error union. The SDK never
 * retries; resilience is core's.
 */
import { Errors, LanguageModel, ResearchEvents, StructuredOutput, Tokens } from "@deep-research/core"
import * as ActionProtocol from "@deep-research/core/ActionProtocol"
import * as Data from "effect/Data"
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Runtime from "effect/Runtime"
import OpenAI from "openai"
import type {
  ChatCompletionCreateParamsBase,
  ChatCompletionMessageParam,
  ChatCompletionTool,
  ChatCompletionToolChoiceOption
} from "openai/resources/chat/completions"
import { fetchKeepingErrorBodies, refusedCapability, toProviderError } from "./openaiErrors.js"
import { accumulate, completionOf } from "./openaiChatAnswer.js"
import * as StrictSchema from "./openaiStrictSchema.js"
import * as Environment from "../Environment.js"
import * as OpenAiTokenizer from "./OpenAiTokenizer.js"

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

/** A refusal of a capability by the server, before it is retried without it. */
class CapabilityRefused extends Data.TaggedError("CapabilityRefused")<{
  readonly capability: "toolCalling" | "structuredOutput"
  readonly reason: string
}> {}

const fallbackWording = {
  toolCalling: "the server refused tools; its tool calls go through the JSON action protocol from now on",
  structuredOutput: "the server refused JSON schemas; structured answers are asked for in the prompt from now on"
} as const

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
    // What the server can do, as far as is known: a server that refuses tools or JSON schemas (a local model without
    // them) turns the capability off for every later call of this model, in every session of the process.
    const capabilities: { toolCalling: boolean; structuredOutput: boolean; webSearch: boolean } = {
      toolCalling: options.capabilities?.toolCalling ?? true,
      structuredOutput: options.capabilities?.structuredOutput ?? true,
      webSearch: options.capabilities?.webSearch ?? false
    }
    const contextWindow = options.contextWindow ?? (yield* Tokens.contextWindow(options.model))

    // No span of its own: the call is already the `chat {model}` span, and a second would say nothing more. Suspended,
    // so that each attempt is built from the capabilities known when it is sent.
    // A caller that reads the text as it is written (`TextProgress`) gets the answer streamed.
    const send = (request: LanguageModel.GenerateRequest) =>
      Effect.gen(function* () {
        const prepared = toChatRequest(options, capabilities, request)
        const progress = yield* Effect.serviceOption(LanguageModel.TextProgress)
        const sink = Option.isSome(progress) ? yield* progress.value.start : undefined
        const runtime = yield* Effect.runtime<never>()
        const onContent = sink === undefined ? undefined : (text: string) => Runtime.runFork(runtime)(sink(text))
        return yield* Effect.tryPromise({
          try: (signal) =>
            options.stream === true || onContent !== undefined
              ? client.chat.completions
                  .create({ ...prepared.body, stream: true, stream_options: { include_usage: true } }, { signal })
                  .then((stream) => accumulate(stream, onContent))
              : client.chat.completions.create({ ...prepared.body, stream: false }, { signal }),
          catch: (error): Errors.ProviderError | CapabilityRefused => {
            const refused = refusedCapability(error)
            const sent = refused === "toolCalling" ? prepared.body.tools !== undefined : prepared.body.response_format
            return refused !== undefined && sent !== undefined
              ? new CapabilityRefused({ capability: refused, reason: toProviderError(error, errorContext).message })
              : toProviderError(error, errorContext)
          }
        }).pipe(Effect.flatMap((raw) => completionOf(raw, provider, options.model, prepared)))
      })

    const fallBack = (refusal: CapabilityRefused) =>
      Effect.suspend(() => {
        // Calls in flight may all be refused; the first to come back says so, once.
        if (!capabilities[refusal.capability]) return Effect.void
        capabilities[refusal.capability] = false
        return Effect.zipRight(
          Effect.logWarning(`${provider} ${options.model}: ${fallbackWording[refusal.capability]}`, refusal.reason),
          ResearchEvents.publish({
            _tag: "ModelFallback",
            provider,
            model: options.model,
            capability: refusal.capability,
            reason: refusal.reason
          })
        )
      })

    const service: LanguageModel.Service = {
      provider,
      model: options.model,
      capabilities,
      contextWindow,
      // OpenAI's own models count in o200k; a model of another family served over the same API is estimated.
      ...(OpenAiTokenizer.usesO200k(options.model) ? { countTokens: OpenAiTokenizer.countRequest } : {}),
      generate: (request) => {
        if ((request.tools ?? []).length > 0 && !capabilities.toolCalling) {
          return ActionProtocol.wrap(service).generate(request)
        }
        if (request.responseFormat !== undefined && !capabilities.structuredOutput) {
          const { responseFormat, ...rest } = request
          return service.generate({
            ...rest,
            system: StructuredOutput.promptedSystem(request.system, responseFormat.schema)
          })
        }
        return send(request).pipe(
          Effect.catchTag("CapabilityRefused", (refusal) =>
            Effect.zipRight(fallBack(refusal), service.generate(request))
          )
        )
      }
    }
    return service
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
  apiKey: Config.option(Config.redacted(Environment.openaiApiKey)),
  baseUrl: Config.option(Config.nonEmptyString(Environment.openaiBaseUrl))
}).pipe(
  Config.mapOrFail(({ apiKey, baseUrl }) =>
    Option.isNone(apiKey) && Option.isNone(baseUrl)
      ? Either.left(
          ConfigError.MissingData(
            [Environment.openaiApiKey],
            `Expected ${Environment.openaiApiKey} to be set (it may be left out only when ${Environment.openaiBaseUrl} points at a server that needs no key)`
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

/**
 * The strict-mode form of a JSON schema, or `undefined` when strict mode cannot carry it without changing what
 * decodes (see `openaiStrictSchema.ts`).
 */
export const strictJsonSchema: (schema: object) => Readonly<Record<string, unknown>> | undefined =
  StrictSchema.strictJsonSchema

// =============================================================================
// Requests
// =============================================================================

type ChatBody = Omit<ChatCompletionCreateParamsBase, "stream" | "stream_options">

/** A request body, and the caller's schemas that went out with it in strict mode. */
export interface PreparedRequest extends StrictSchema.SentSchemas {
  readonly body: ChatBody
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
  const strictTools = new Map<string, object>()
  const chatTools: Array<ChatCompletionTool> = tools.map((tool) => {
    const strict = options.strictTools === true ? StrictSchema.sharedStrictJsonSchema(tool.parameters) : undefined
    if (strict !== undefined) strictTools.set(tool.name, tool.parameters)
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
  const strictFormat = format === undefined ? undefined : StrictSchema.sharedStrictJsonSchema(format.schema)
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
              schema: strictFormat ?? format.schema,
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
  return { body, responseSchema: strictFormat === undefined ? undefined : format?.schema, strictTools }
}
