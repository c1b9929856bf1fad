/**
 * JSON over HTTP for the search APIs that have no SDK here (Exa, Semantic Scholar): one request with an AbortSignal
 * (interrupting the Effect cancels it), a time limit, and the answer's status, headers and body mapped to the error
 * union of core.
 */
import { Errors } from "@deep-research/core"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"

/** One request. */
export interface JsonRequest {
  readonly provider: string
  readonly method: "GET" | "POST"
  readonly url: string
  readonly headers?: Readonly<Record<string, string>> | undefined
  readonly body?: unknown
  readonly timeout: Duration.Duration
}

const field = (value: unknown, key: string): unknown =>
  Predicate.isRecord(value) && key in value ? value[key] : undefined

/** The human message of an error body: `error`, `message`, `detail` or `error.message`; else the text itself. */
export const errorDetail = (text: string): string => {
  try {
    const body: unknown = JSON.parse(text)
    for (const candidate of [
      field(body, "error"),
      field(body, "message"),
      field(body, "detail"),
      field(field(body, "error"), "message")
    ]) {
      if (typeof candidate === "string" && candidate.trim() !== "") return candidate.trim()
    }
  } catch {
    // not JSON: the text is the message
  }
  return text.trim().slice(0, 500)
}

const errorTag = (text: string): string | undefined => {
  try {
    const tag = field(JSON.parse(text), "tag")
    return typeof tag === "string" ? tag : undefined
  } catch {
    return undefined
  }
}

/** How long the server asked us to wait: `retry-after-ms`, or `retry-after` in seconds or as a date. */
export const retryAfterOf = (headers: Headers, now: number): Duration.Duration | undefined => {
  const ms = headers.get("retry-after-ms")
  if (ms !== null && ms.trim() !== "" && Number.isFinite(Number(ms))) return Duration.millis(Math.max(0, Number(ms)))
  const after = headers.get("retry-after")
  if (after === null || after.trim() === "") return undefined
  const seconds = Number(after)
  if (Number.isFinite(seconds)) return Duration.seconds(Math.max(0, seconds))
  const date = Date.parse(after)
  return Number.isFinite(date) ? Duration.millis(Math.max(0, date - now)) : undefined
}

const quotaText = /quota|credits? limit|no more credits|insufficient (credit|balance|funds)|billing|payment required/i

/** The error of a non-2xx answer. */
export const statusError = (
  provider: string,
  status: number,
  headers: Headers,
  text: string,
  now: number
): Errors.ProviderError => {
  const detail = errorDetail(text)
  const tag = errorTag(text)
  if (status === 402 || tag === "NO_MORE_CREDITS" || (status !== 401 && quotaText.test(detail))) {
    return new Errors.QuotaExhausted({ provider })
  }
  if (status === 401 || status === 403) {
    return new Errors.AuthenticationFailed({ provider, ...(detail !== "" ? { detail } : {}) })
  }
  if (status === 429) {
    const retryAfter = retryAfterOf(headers, now)
    return new Errors.RateLimited({ provider, ...(retryAfter !== undefined ? { retryAfter } : {}) })
  }
  if (status === 408 || status === 409 || status === 425 || status >= 500) {
    return new Errors.ProviderUnavailable({ provider, status, ...(detail !== "" ? { detail } : {}) })
  }
  return new Errors.InvalidRequest({ provider, detail: `${status} ${detail !== "" ? detail : "request refused"}` })
}

const describe = (error: unknown): string => {
  if (error instanceof Error) {
    const cause = error.cause instanceof Error ? `: ${error.cause.message}` : ""
    return `${error.message}${cause}`
  }
  return String(error)
}

/** Sends the request and returns the parsed JSON body of a 2xx answer. */
export const requestJson = (request: JsonRequest): Effect.Effect<unknown, Errors.ProviderError> =>
  Effect.gen(function* () {
    const { provider } = request
    const response = yield* Effect.tryPromise({
      try: async (signal) => {
        const answer = await fetch(request.url, {
          method: request.method,
          headers: {
            accept: "application/json",
            ...(request.body !== undefined ? { "content-type": "application/json" } : {}),
            ...request.headers
          },
          ...(request.body !== undefined ? { body: JSON.stringify(request.body) } : {}),
          signal
        })
        return { status: answer.status, headers: answer.headers, text: await answer.text() }
      },
      catch: (error) => new Errors.ProviderUnavailable({ provider, detail: describe(error) })
    })
    if (response.status < 200 || response.status >= 300) {
      const now = yield* Clock.currentTimeMillis
      return yield* Effect.fail(statusError(provider, response.status, response.headers, response.text, now))
    }
    return yield* Effect.try({
      try: (): unknown => JSON.parse(response.text),
      catch: () =>
        new Errors.ProviderUnavailable({
          provider,
          status: response.status,
          detail: `the answer was not valid JSON: ${response.text.slice(0, 200)}`
        })
    })
  }).pipe(
    Effect.timeoutFail({
      duration: request.timeout,
      onTimeout: () => new Errors.Timeout({ provider: request.provider, after: request.timeout })
    })
  )
