/**
 * Maps what `@tavily/core` throws onto the error union. The SDK drops the HTTP status of an error whose body carries
 * `detail.error` and throws a plain `Error` with that text, so errors are told apart by Tavily's documented texts;
 * a body without it becomes `"<status> Error: <json>"`, and transport failures are wrapped in "An unexpected error
 * occurred while making the request".
 */
import { TavilyKeylessLimitError } from "@tavily/core"
import { Errors } from "@deep-research/core"
import * as Duration from "effect/Duration"

/** What the mapping needs to know about the call that failed. */
export interface ErrorContext {
  readonly provider: string
}

const statusNames: ReadonlyArray<readonly [text: string, status: number]> = [
  ["internal server error", 500],
  ["bad gateway", 502],
  ["service unavailable", 503],
  ["gateway timeout", 504]
]

const fromStatus = (status: number, message: string, context: ErrorContext): Errors.ProviderError => {
  const provider = context.provider
  if (status === 401 || status === 403) return new Errors.ProviderAuthenticationFailed({ provider, detail: message })
  if (status === 429) return new Errors.ProviderRateLimited({ provider })
  // 432: the plan's usage limit; 433: the pay-as-you-go spending limit. Waiting does not help either.
  if (status === 432 || status === 433) return new Errors.ProviderQuotaExhausted({ provider })
  if (status >= 500 || status === 408) return new Errors.ProviderUnavailable({ provider, status, detail: message })
  return new Errors.ProviderInvalidRequest({ provider, detail: message })
}

/** The tagged error for anything a Tavily SDK call threw. */
export const fromError = (error: unknown, context: ErrorContext): Errors.ProviderError => {
  const provider = context.provider
  if (error instanceof TavilyKeylessLimitError) {
    return new Errors.ProviderRateLimited({
      provider,
      ...(error.retryAfter !== null ? { retryAfter: Duration.seconds(error.retryAfter) } : {})
    })
  }
  const message = error instanceof Error ? error.message : String(error)
  const text = message.toLowerCase()
  const timedOut = /^Request timed out after ([\d.]+) seconds/.exec(message)
  if (timedOut !== null) return new Errors.ProviderTimeout({ provider, after: Duration.seconds(Number(timedOut[1])) })
  const withStatus = /^(\d{3}) Error: ?([\s\S]*)$/.exec(message)
  if (withStatus !== null) return fromStatus(Number(withStatus[1]), withStatus[2] ?? message, context)
  if (text.startsWith("an unexpected error occurred while making the request")) {
    // Connection refused or reset, or a 200 whose body was not the JSON the SDK expects.
    return new Errors.ProviderUnavailable({ provider, detail: message })
  }
  if (text.includes("missing or invalid api key") || text.startsWith("unauthorized")) {
    return new Errors.ProviderAuthenticationFailed({ provider, detail: message })
  }
  if (text.includes("excessive requests")) return new Errors.ProviderRateLimited({ provider })
  if (text.includes("exceeds your plan's set usage limit") || text.includes("pay-as-you-go limit")) {
    return new Errors.ProviderQuotaExhausted({ provider })
  }
  const named = statusNames.find(([name]) => text.startsWith(name))
  if (named !== undefined) return new Errors.ProviderUnavailable({ provider, status: named[1], detail: message })
  // Any other `detail.error` is Tavily refusing the request itself (an unsupported topic, too many URLs).
  return new Errors.ProviderInvalidRequest({ provider, detail: message })
}
