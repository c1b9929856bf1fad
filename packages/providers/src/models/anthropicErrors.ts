/**
 * Maps what the Anthropic SDK throws onto the error union of deep-research: status first, then the body's error
 * type, then the message text where the API gives no code (prompt too long).
 */
import {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIError,
  APIUserAbortError,
  AnthropicError
} from "@anthropic-ai/sdk"
import { Errors } from "@deep-research/core"
import * as Duration from "effect/Duration"

/** What the mapping needs to know about the call that failed. */
export interface ErrorContext {
  /** The provider name recorded on the error (`anthropic`). */
  readonly provider: string
  readonly model: string
  /** Epoch milliseconds, to turn an HTTP-date `retry-after` into a delay. */
  readonly now: number
  /** The client's time limit of one request, reported by `ProviderTimeout`. */
  readonly timeout: Duration.Duration
}

const promptTooLong = /prompt is too long:\s*(\d+)\s*tokens\s*>\s*(\d+)\s*maximum/i
const inputAndMaxTokens = /input length and `?max_tokens`? exceed context limit:\s*(\d+)\s*\+\s*(\d+)\s*>\s*(\d+)/i

/** The numbers of a context-window error message, or `undefined` when the text is no such error. */
export const parseContextWindowMessage = (
  message: string
): { readonly requested?: number | undefined; readonly limit?: number | undefined } | undefined => {
  const tooLong = promptTooLong.exec(message)
  if (tooLong !== null) return { requested: Number(tooLong[1]), limit: Number(tooLong[2]) }
  const withOutput = inputAndMaxTokens.exec(message)
  if (withOutput !== null) {
    return { requested: Number(withOutput[1]) + Number(withOutput[2]), limit: Number(withOutput[3]) }
  }
  if (/prompt is too long/i.test(message)) return {}
  return undefined
}

/**
 * The delay a 429 asks for: `retry-after-ms`, else `retry-after` as seconds or as an HTTP date. Nothing when the
 * headers say nothing usable (the retry schedule then picks the delay).
 */
export const retryAfterOf = (headers: Headers | undefined, now: number): Duration.Duration | undefined => {
  if (headers === undefined) return undefined
  const millis = headers.get("retry-after-ms")
  if (millis !== null) {
    const value = Number.parseFloat(millis)
    if (Number.isFinite(value) && value >= 0) return Duration.millis(value)
  }
  const after = headers.get("retry-after")
  if (after === null || after.trim() === "") return undefined
  const seconds = Number(after)
  if (Number.isFinite(seconds)) return seconds >= 0 ? Duration.millis(seconds * 1000) : undefined
  const date = Date.parse(after)
  if (Number.isNaN(date)) return undefined
  return Duration.millis(Math.max(0, date - now))
}

const contextWindowExceeded = (
  model: string,
  numbers: { readonly requested?: number | undefined; readonly limit?: number | undefined }
): Errors.ContextWindowExceeded =>
  new Errors.ContextWindowExceeded({
    model,
    ...(numbers.limit !== undefined ? { limit: numbers.limit } : {}),
    ...(numbers.requested !== undefined ? { requested: numbers.requested } : {})
  })

const describe = (error: APIError): string => error.apiMessage ?? error.message

/** Classifies an error by the body's `error.type`, for errors that came without a status (mid-stream events). */
const fromErrorType = (error: APIError, context: ErrorContext): Errors.ProviderError => {
  const message = describe(error)
  // Compared as text: the SDK's ErrorType union lags behind the types the API sends.
  const type: string | null = error.type
  switch (type) {
    case "overloaded_error":
      return new Errors.ProviderUnavailable({ provider: context.provider, status: 529, detail: message })
    case "api_error":
      return new Errors.ProviderUnavailable({ provider: context.provider, status: 500, detail: message })
    case "timeout_error":
      return new Errors.ProviderUnavailable({ provider: context.provider, status: 504, detail: message })
    case "rate_limit_error":
      return new Errors.ProviderRateLimited({ provider: context.provider })
    case "authentication_error":
    case "permission_error":
      return new Errors.ProviderAuthenticationFailed({ provider: context.provider, detail: message })
    case "billing_error":
      return new Errors.ProviderQuotaExhausted({ provider: context.provider })
    case "invalid_request_error":
    case "not_found_error":
    case "request_too_large": {
      if (/credit balance is too low/i.test(message))
        return new Errors.ProviderQuotaExhausted({ provider: context.provider })
      const numbers = parseContextWindowMessage(message)
      if (numbers !== undefined) return contextWindowExceeded(context.model, numbers)
      return new Errors.ProviderInvalidRequest({ provider: context.provider, detail: message })
    }
    default:
      return new Errors.ProviderUnavailable({ provider: context.provider, detail: message })
  }
}

const fromStatus = (error: APIError, status: number, context: ErrorContext): Errors.ProviderError => {
  const message = describe(error)
  if (status === 400 || status === 413) {
    // The API reports an empty credit balance as a 400 invalid_request_error; only its text tells it apart.
    if (/credit balance is too low/i.test(message))
      return new Errors.ProviderQuotaExhausted({ provider: context.provider })
    const numbers = parseContextWindowMessage(message)
    if (numbers !== undefined) return contextWindowExceeded(context.model, numbers)
    // A body over the request size limit can only be fixed by sending less, like an overflowing prompt.
    if (status === 413) return contextWindowExceeded(context.model, {})
    return new Errors.ProviderInvalidRequest({ provider: context.provider, detail: message })
  }
  if (status === 401 || status === 403)
    return new Errors.ProviderAuthenticationFailed({ provider: context.provider, detail: message })
  if (status === 402) return new Errors.ProviderQuotaExhausted({ provider: context.provider })
  if (status === 429) {
    const retryAfter = retryAfterOf(error.headers, context.now)
    return new Errors.ProviderRateLimited({
      provider: context.provider,
      ...(retryAfter !== undefined ? { retryAfter } : {})
    })
  }
  // 408 and 409 are transient on Anthropic's side (the SDK itself would retry them).
  if (status >= 500 || status === 408 || status === 409) {
    return new Errors.ProviderUnavailable({ provider: context.provider, status, detail: message })
  }
  return new Errors.ProviderInvalidRequest({ provider: context.provider, detail: `${status}: ${message}` })
}

const causeText = (error: unknown): string => {
  if (!(error instanceof Error)) return String(error)
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : ""
  return `${error.message}${cause}`
}

/** The tagged error for anything an Anthropic SDK call threw. */
export const fromError = (error: unknown, context: ErrorContext): Errors.ProviderError => {
  if (error instanceof APIConnectionTimeoutError) {
    return new Errors.ProviderTimeout({ provider: context.provider, after: context.timeout })
  }
  if (error instanceof APIUserAbortError) {
    // Only our own interruption aborts a request; report it as a transient failure should it ever surface.
    return new Errors.ProviderUnavailable({ provider: context.provider, detail: "the request was aborted" })
  }
  if (error instanceof APIConnectionError) {
    return new Errors.ProviderUnavailable({
      provider: context.provider,
      detail: `connection failed: ${causeText(error)}`
    })
  }
  if (error instanceof APIError) {
    return error.status === undefined ? fromErrorType(error, context) : fromStatus(error, error.status, context)
  }
  if (error instanceof SyntaxError) {
    return new Errors.ProviderUnavailable({
      provider: context.provider,
      detail: `unreadable response: ${error.message}`
    })
  }
  if (error instanceof AnthropicError) {
    // Stream protocol failures ("request ended without sending any chunks", events out of order).
    return new Errors.ProviderUnavailable({ provider: context.provider, detail: error.message })
  }
  return new Errors.ProviderUnavailable({
    provider: context.provider,
    detail: `unexpected failure: ${causeText(error)}`
  })
}
