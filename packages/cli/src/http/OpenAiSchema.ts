/**
 * The OpenAI chat completions wire format, the part of it `deep-research serve` speaks: requests as the official SDK
 * sends them (fields this server has no use for are accepted and ignored), completions and stream chunks as it reads
 * them.
 */
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import { Research } from "@deep-research/core"
import * as Schema from "effect/Schema"

/** The one model this server offers. */
export const modelId = "deep-research"

const ContentPart = Schema.Struct({ type: Schema.String, text: Schema.optional(Schema.String) })

/** A message of the conversation; content may be text or a list of parts (only text parts are read). */
export const ChatMessage = Schema.Struct({
  role: Schema.String,
  content: Schema.optional(Schema.NullOr(Schema.Union(Schema.String, Schema.Array(ContentPart))))
}).annotations({ identifier: "ChatMessage" })
export type ChatMessage = typeof ChatMessage.Type

/** A chat completion request. */
export const ChatRequest = Schema.Struct({
  model: Schema.String,
  messages: Schema.NonEmptyArray(ChatMessage),
  /** One research run makes one answer: a client asking for several is refused rather than given one. */
  n: Schema.optional(
    Schema.NullOr(
      Schema.Literal(1).annotations({
        message: () => "this server makes one choice a request (n: 1): a research run has one report"
      })
    )
  ),
  /** The answer is a Markdown report: a client asking for JSON is refused rather than given Markdown. */
  response_format: Schema.optional(
    Schema.NullOr(
      Schema.Struct({
        type: Schema.Literal("text").annotations({
          message: () => "this server answers with a Markdown report, not JSON (response_format may be text only)"
        })
      })
    )
  ),
  /** The server calls no tools: a client that requires a tool call is refused rather than answered without one. */
  tool_choice: Schema.optional(
    Schema.NullOr(
      Schema.Literal("none", "auto").annotations({
        message: () => "this server answers without calling tools (tool_choice may be none or auto)"
      })
    )
  ),
  stream: Schema.optional(Schema.NullOr(Schema.Boolean)),
  stream_options: Schema.optional(Schema.NullOr(Schema.Struct({ include_usage: Schema.optional(Schema.Boolean) })))
}).annotations({ identifier: "ChatCompletionRequest" })
export type ChatRequest = typeof ChatRequest.Type

/** Tokens of a completion: the run's input and output tokens over every model call. */
export const CompletionUsage = Schema.Struct({
  prompt_tokens: Schema.Int,
  completion_tokens: Schema.Int,
  total_tokens: Schema.Int
})

/** A non-streamed completion. */
export const ChatCompletion = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("chat.completion"),
  created: Schema.Int,
  model: Schema.String,
  choices: Schema.Array(
    Schema.Struct({
      index: Schema.Int,
      message: Schema.Struct({ role: Schema.Literal("assistant"), content: Schema.String, refusal: Schema.Null }),
      finish_reason: Schema.Literal("stop", "length"),
      logprobs: Schema.Null
    })
  ),
  usage: CompletionUsage,
  /**
   * Not OpenAI's: what the report stands on (its sources, and why there are none when there are none); clients that
   * do not know the field ignore it.
   */
  grounding: Schema.optional(Research.Grounding)
}).annotations({ identifier: "ChatCompletion" })
export type ChatCompletion = typeof ChatCompletion.Type

/** One chunk of a streamed completion. */
export const ChatCompletionChunk = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("chat.completion.chunk"),
  created: Schema.Int,
  model: Schema.String,
  choices: Schema.Array(
    Schema.Struct({
      index: Schema.Int,
      delta: Schema.Struct({
        role: Schema.optional(Schema.Literal("assistant")),
        content: Schema.optional(Schema.String),
        reasoning_content: Schema.optional(Schema.String)
      }),
      finish_reason: Schema.NullOr(Schema.Literal("stop", "length")),
      logprobs: Schema.Null
    })
  ),
  usage: Schema.optional(Schema.NullOr(CompletionUsage)),
  /** Not OpenAI's: on the closing chunk, what the report stands on (see `ChatCompletion`). */
  grounding: Schema.optional(Research.Grounding)
})
export type ChatCompletionChunk = typeof ChatCompletionChunk.Type

/** A model, as `GET /v1/models/{model}` and the list give it. */
export const Model = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("model"),
  created: Schema.Int,
  owned_by: Schema.String
}).annotations({ identifier: "Model" })

/** The models list. */
export const ModelList = Schema.Struct({
  object: Schema.Literal("list"),
  data: Schema.Array(Model)
})

/** The one model this server offers. */
export const theModel: typeof Model.Type = { id: modelId, object: "model", created: 0, owned_by: "deep-research" }

/** The `error` object of an error body, as OpenAI's API sends it. */
export const ErrorBody = Schema.Struct({
  message: Schema.String,
  type: Schema.String,
  param: Schema.NullOr(Schema.String),
  code: Schema.NullOr(Schema.String)
})

/** An error as OpenAI clients read it: the `error` object of the body. */
export const openAiError = (
  message: string,
  type: string,
  param: string | null = null,
  code: string | null = null
) => ({
  error: { message, type, param, code }
})

/** No such model (404), as OpenAI says it. */
export class ModelNotFound extends Schema.TaggedError<ModelNotFound>()(
  "ModelNotFound",
  { error: ErrorBody },
  HttpApiSchema.annotations({ status: 404 })
) {
  static of(model: string): ModelNotFound {
    return new ModelNotFound(
      openAiError(
        `The model ${model} does not exist; this server offers ${modelId}.`,
        "invalid_request_error",
        "model",
        "model_not_found"
      )
    )
  }
}

/** A request this server cannot research (400), as OpenAI says it. */
export class InvalidRequest extends Schema.TaggedError<InvalidRequest>()(
  "InvalidRequest",
  { error: ErrorBody },
  HttpApiSchema.annotations({ status: 400 })
) {
  static of(message: string, param: string | null): InvalidRequest {
    return new InvalidRequest(openAiError(message, "invalid_request_error", param))
  }
}

/** The research failed (500), as OpenAI says it. */
export class ResearchFailed extends Schema.TaggedError<ResearchFailed>()(
  "ResearchFailed",
  { error: ErrorBody },
  HttpApiSchema.annotations({ status: 500 })
) {
  static of(message: string): ResearchFailed {
    return new ResearchFailed(openAiError(message, "server_error"))
  }
}

/** The text of a message: its string content, or its text parts joined. */
export const textOf = (message: ChatMessage): string => {
  const content = message.content
  if (content === undefined || content === null) return ""
  if (typeof content === "string") return content
  return content.flatMap((part) => (part.type === "text" && part.text !== undefined ? [part.text] : [])).join("\n")
}

/** The question of a conversation: its last user message with text, if any. */
export const questionOf = (messages: ReadonlyArray<ChatMessage>): string | undefined => {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i]
    if (message === undefined || message.role !== "user") continue
    const text = textOf(message).trim()
    if (text !== "") return text
  }
  return undefined
}

/**
 * A chunk of a streamed completion (`id`, its creation time, whether the client asked for `usage` in the last one):
 * every chunk before the last carries `usage: null` when it did, as OpenAI's stream does.
 */
export const chunkOf =
  (id: string, created: number, includeUsage: boolean) =>
  (delta: ChatCompletionChunk["choices"][number]["delta"], finish: "stop" | null = null): ChatCompletionChunk => ({
    id,
    object: "chat.completion.chunk",
    created,
    model: modelId,
    choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }],
    ...(includeUsage ? { usage: null } : {})
  })
