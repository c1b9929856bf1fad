/**
 * Maps what the `openai` SDK throws (for OpenAI and every OpenAI-compatible server) to the error union of core, by
 * status, body code and type, and message text (see the wire-format notes for the texts).
 */
import { Errors } from "@deep-research/core"
import * as Duration from "effect/Duration"
import * as Predicate from "effect/Predicate"
import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from "openai"
import * as HttpTransport from "./httpTransport.js"

/** Who was called, for the error's fields. */
export interface ErrorContext {
  readonly provider: string
  readonly model: string
  /** The time limit the SDK was given, reported by `ProviderTimeout`. */
  readonly timeout: Duration.Duration
}

const field = (value: unknown, key: string): unknown =>
  Predicate.isRecord(value) && key in value ? value[key] : undefined

const stringField = (value: unknown, key: string): string | undefined => {
  const found = field(value, key)
  return typeof found === "string" ? found : undefined
}

// =============================================================================
// Error bodies
// =============================================================================

/**
 * The SDK keeps only the `error` object of an error body, so a compatible server that answers
 * `{"object":"error","message":...}` (vLLM) or `[{"error":...}]` (some gateways) would lose its text. The client's
 * fetch records each error body under its response's headers, which the SDK hands on to the error.
 */
const errorBodies = new WeakMap<Headers, string>()

/** A fetch that remembers the body of every error response for `toProviderError`. */
export const fetchKeepingErrorBodies =
  (inner: typeof fetch = HttpTransport.fetch): typeof fetch =>
  async (input, init) => {
    const response = await inner(input, init)
    if (!response.ok) {
      const text = await response
        .clone()
        .text()
        .catch(() => "")
      errorBodies.set(response.headers, text.slice(0, 8_000))
    }
    return response
  }

const messageInBody = (text: string): string | undefined => {
  try {
    const parsed: unknown = JSON.parse(text)
    const first = Array.isArray(parsed) ? parsed[0] : parsed
    return (
      stringField(field(first, "error"), "message") ?? stringField(first, "message") ?? stringField(first, "detail")
    )
  } catch {
    return text.trim() === "" ? undefined : text.trim().slice(0, 500)
  }
}

// =============================================================================
// Durations in headers and messages
// =============================================================================

const unitMillis: Readonly<Record<string, number>> = { h: 3_600_000, m: 60_000, s: 1_000, ms: 1 }

/** Parses OpenAI's duration strings: `12ms`, `1s`, `0.5s`, `6m0s`, `1h2m3s`. */
export const parseResetDuration = (text: string): number | undefined => {
  const trimmed = text.trim()
  if (!/^(\d+(\.\d+)?(ms|h|m|s))+$/.test(trimmed)) return undefined
  let total = 0
  for (const match of trimmed.matchAll(/(\d+(?:\.\d+)?)(ms|h|m|s)/g)) {
    total += Number(match[1]) * (unitMillis[match[2] ?? "s"] ?? 1_000)
  }
  return total
}

const retryAfterHeader = (headers: Headers, now: number): number | undefined => {
  const ms = headers.get("retry-after-ms")
  if (ms !== null && Number.isFinite(Number(ms)) && ms.trim() !== "") return Math.max(0, Number(ms))
  const after = headers.get("retry-after")
  if (after !== null && after.trim() !== "") {
    const seconds = Number(after)
    if (Number.isFinite(seconds)) return Math.max(0, seconds * 1_000)
    const date = Date.parse(after)
    if (Number.isFinite(date)) return Math.max(0, date - now)
  }
  return undefined
}

const rateLimitReset = (headers: Headers, kind: string | undefined): number | undefined => {
  const requests = headers.get("x-ratelimit-reset-requests")
  const tokens = headers.get("x-ratelimit-reset-tokens")
  const requestsMs = requests === null ? undefined : parseResetDuration(requests)
  const tokensMs = tokens === null ? undefined : parseResetDuration(tokens)
  if (kind === "requests" && requestsMs !== undefined) return requestsMs
  if (kind === "tokens" && tokensMs !== undefined) return tokensMs
  if (headers.get("x-ratelimit-remaining-requests") === "0" && requestsMs !== undefined) return requestsMs
  if (headers.get("x-ratelimit-remaining-tokens") === "0" && tokensMs !== undefined) return tokensMs
  const known = [requestsMs, tokensMs].filter((x): x is number => x !== undefined)
  return known.length === 0 ? undefined : Math.max(...known)
}

const retryAfterInMessage = (message: string): number | undefined => {
  const match = /try again in ((?:\d+(?:\.\d+)?(?:ms|h|m|s))+)/i.exec(message)
  return match?.[1] === undefined ? undefined : parseResetDuration(match[1])
}

/**
 * How long the server asked us to wait: `retry-after-ms`, `retry-after` (seconds or a date), the relevant
 * `x-ratelimit-reset-*` header, or the "try again in ..." of the message.
 */
export const retryAfterOf = (
  headers: Headers | undefined,
  kind: string | undefined,
  message: string,
  now: number
): Duration.Duration | undefined => {
  const ms =
    (headers === undefined ? undefined : (retryAfterHeader(headers, now) ?? rateLimitReset(headers, kind))) ??
    retryAfterInMessage(message)
  return ms === undefined ? undefined : Duration.millis(ms)
}

// =============================================================================
// Context length
// =============================================================================

const contextLengthText =
  /context[ _](length|window|size)|maximum context|too many tokens|prompt is too long|input is too long|exceeds? the (available )?context/i

/** The limit and requested token counts a context-length message states, when it states them. */
export const contextNumbers = (text: string): { readonly limit?: number; readonly requested?: number } => {
  const patterns: ReadonlyArray<RegExp> = [
    /maximum context length is (\d+) tokens\. However, (?:your messages resulted in|you requested) (\d+) tokens/i,
    /Limit (\d+), Requested (\d+)/,
    /"n_ctx":\s*(\d+)[\s\S]*?"n_prompt_tokens":\s*(\d+)/
  ]
  for (const pattern of patterns) {
    const match = pattern.exec(text)
    if (match?.[1] !== undefined && match[2] !== undefined) {
      return { limit: Number(match[1]), requested: Number(match[2]) }
    }
  }
  const prompt = /"n_prompt_tokens":\s*(\d+)[\s\S]*?"n_ctx":\s*(\d+)/.exec(text)
  if (prompt?.[1] !== undefined && prompt[2] !== undefined) {
    return { limit: Number(prompt[2]), requested: Number(prompt[1]) }
  }
  const limitOnly = /maximum context length is (\d+)/i.exec(text)
  return limitOnly?.[1] === undefined ? {} : { limit: Number(limitOnly[1]) }
}

const contextWindowExceeded = (model: string, text: string): Errors.ContextWindowExceeded => {
  const { limit, requested } = contextNumbers(text)
  return new Errors.ContextWindowExceeded({
    model,
    ...(limit === undefined ? {} : { limit }),
    ...(requested === undefined ? {} : { requested })
  })
}

// =============================================================================
// Mapping
// =============================================================================

const describe = (error: unknown): string => {
  if (error instanceof Error) {
    const cause = error.cause instanceof Error ? `: ${error.cause.message}` : ""
    return `${error.message}${cause}`
  }
  return String(error)
}

/** The error of an API answer (status known, or a mid-stream error event with no status). */
const fromApiError = (error: APIError, context: ErrorContext, now: number): Errors.ProviderError => {
  const { provider, model } = context
  const status = error.status
  const code = error.code ?? stringField(error.error, "code") ?? undefined
  const type = error.type ?? stringField(error.error, "type")
  const rawBody = error.headers === undefined ? undefined : errorBodies.get(error.headers)
  const apiMessage =
    stringField(error.error, "message") ?? (rawBody === undefined ? undefined : messageInBody(rawBody)) ?? error.message
  const bodyText = `${apiMessage} ${rawBody ?? JSON.stringify(error.error ?? null)}`
  const isContext = code === "context_length_exceeded" || contextLengthText.test(bodyText)
  const isQuota = code === "insufficient_quota" || type === "insufficient_quota"
  // A TPM "Request too large" can never pass by waiting; only a smaller input helps.
  const isTooLargeForLimit = /Request too large/i.test(apiMessage) && /Limit \d+, Requested \d+/.test(apiMessage)
  if (isContext || isTooLargeForLimit) return contextWindowExceeded(model, bodyText)
  if (isQuota) return new Errors.ProviderQuotaExhausted({ provider })
  if (status === 429 || code === "rate_limit_exceeded" || type === "rate_limit_error") {
    const retryAfter = retryAfterOf(error.headers, type, apiMessage, now)
    return new Errors.ProviderRateLimited({ provider, ...(retryAfter === undefined ? {} : { retryAfter }) })
  }
  if (status === undefined) {
    // A mid-stream error event carries no status: judge by its code.
    if (code === "invalid_api_key") return new Errors.ProviderAuthenticationFailed({ provider, detail: apiMessage })
    if (type === "invalid_request_error") return new Errors.ProviderInvalidRequest({ provider, detail: apiMessage })
    return new Errors.ProviderUnavailable({ provider, detail: apiMessage })
  }
  if (status === 401 || status === 403) return new Errors.ProviderAuthenticationFailed({ provider, detail: apiMessage })
  if (status === 413) return contextWindowExceeded(model, bodyText)
  if (status === 408 || status === 409 || status >= 500) {
    return new Errors.ProviderUnavailable({ provider, status, detail: apiMessage })
  }
  return new Errors.ProviderInvalidRequest({ provider, detail: `${status} ${apiMessage}` })
}

/** Maps anything the SDK (or the stream reading around it) threw to a provider error. */
export const toProviderError = (
  error: unknown,
  context: ErrorContext,
  now: number = Date.now()
): Errors.ProviderError => {
  const { provider } = context
  if (error instanceof APIConnectionTimeoutError)
    return new Errors.ProviderTimeout({ provider, after: context.timeout })
  if (error instanceof APIUserAbortError) return new Errors.ProviderUnavailable({ provider, detail: "aborted" })
  if (error instanceof APIConnectionError) {
    return new Errors.ProviderUnavailable({ provider, detail: describe(error) })
  }
  if (error instanceof APIError) return fromApiError(error, context, now)
  if (error instanceof SyntaxError) {
    return new Errors.ProviderUnavailable({ provider, detail: `the answer was not valid JSON: ${error.message}` })
  }
  return new Errors.ProviderUnavailable({ provider, detail: describe(error) })
}

// =============================================================================
// Refusals of compatible servers
// =============================================================================

/**
 * How OpenAI-compatible servers refuse tools: Ollama (`<model> does not support tools`), vLLM without auto tool choice
 * (`"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set`), llama.cpp's server
 * (`tools param requires --jinja flag`, or `Unsupported param: tools`, as a 500) and LM Studio-style wordings.
 */
const toolsRefusal =
  /does not support tools|unsupported param(?:eter)?:? ['"]?tools|tools param requires|tool choice requires|enable-auto-tool-choice|(?:tools|tool calling|function calling|tool use) (?:is |are )?not supported|does not support (?:tool|function)(?: calling| calls| use)/i

/** How they refuse `response_format` with a JSON schema (OpenAI's own "Invalid schema for ..." is not one). */
const formatRefusal =
  /(?:response_format|json_schema)[^.]*(?:not supported|unsupported|must be one of|is not available)|(?:not supported|unsupported|does not support)[^.]*(?:response_format|json_schema|structured output)/i

/** What a refusal says the server cannot do, by its status and words; `undefined` for any other error. */
export const refusedCapability = (error: unknown): "toolCalling" | "structuredOutput" | undefined => {
  if (!(error instanceof APIError) || error.status === undefined) return undefined
  if (![400, 404, 422, 500, 501].includes(error.status)) return undefined
  const rawBody = error.headers === undefined ? undefined : errorBodies.get(error.headers)
  const text = `${stringField(error.error, "message") ?? ""} ${rawBody ?? ""} ${error.message}`
  if (toolsRefusal.test(text)) return "toolCalling"
  if (formatRefusal.test(text)) return "structuredOutput"
  return undefined
}
