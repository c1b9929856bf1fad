/**
 * The Anthropic SDK client as the Anthropic providers use it: the SDK's own retries off (policy lives in core), and
 * one way into Effect per call, with the AbortSignal passed on so that interruption cancels the HTTP request.
 */
import Anthropic from "@anthropic-ai/sdk"
import type { Errors } from "@deep-research/core"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import { fromError } from "./anthropicErrors.js"
import * as HttpTransport from "./httpTransport.js"

/** How to reach the API. */
export interface ClientOptions {
  readonly apiKey: Redacted.Redacted
  /** Without `/v1`, e.g. `http://127.0.0.1:8080/anthropic`. Defaults to Anthropic's own API. */
  readonly baseUrl?: string | undefined
  /** Extra headers on every request (a gateway's own auth, beta flags). */
  readonly headers?: Readonly<Record<string, string>> | undefined
  /** The client's limit on one request. Default 10 minutes; core's per-attempt timeout normally fires first. */
  readonly timeout?: Duration.DurationInput | undefined
}

/** A client and the settings the error mapping needs. */
export interface Client {
  readonly sdk: Anthropic
  readonly timeout: Duration.Duration
}

/** Builds a client. */
export const makeClient = (options: ClientOptions): Client => {
  const timeout = Duration.decode(options.timeout ?? "10 minutes")
  const sdk = new Anthropic({
    apiKey: Redacted.value(options.apiKey),
    // `null`, not `undefined`: the SDK would otherwise read ANTHROPIC_BASE_URL itself, behind the Config layer's back.
    baseURL: options.baseUrl ?? null,
    maxRetries: 0,
    fetch: HttpTransport.fetch,
    // An explicit timeout also keeps the SDK from refusing non-streaming calls with a large `max_tokens`.
    timeout: Duration.toMillis(timeout),
    ...(options.headers !== undefined ? { defaultHeaders: { ...options.headers } } : {})
  })
  return { sdk, timeout }
}

/**
 * One Messages API call, streamed (then accumulated) or not. The answer is the raw message, to be decoded. A streamed
 * call gives `onText` the text as it grows.
 */
export const send = (
  client: Client,
  body: Anthropic.MessageCreateParamsNonStreaming,
  options: {
    readonly provider: string
    readonly stream: boolean
    readonly onText?: ((textSoFar: string) => void) | undefined
  }
): Effect.Effect<unknown, Errors.ProviderError> =>
  Effect.tryPromise({
    try: (signal): Promise<unknown> => {
      const onText = options.onText
      if (!options.stream && onText === undefined) return client.sdk.messages.create(body, { signal })
      const stream = client.sdk.messages.stream(body, { signal })
      // Text blocks only (a tool call's JSON is not text), joined as the answer's text is: one after the other.
      if (onText !== undefined) {
        let text = ""
        stream.on("text", (delta) => {
          text += delta
          onText(text)
        })
      }
      return stream.finalMessage()
    },
    catch: (error) => error
  }).pipe(
    Effect.catchAll((error) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Effect.fail(fromError(error, { provider: options.provider, model: body.model, now, timeout: client.timeout }))
      )
    )
  )
