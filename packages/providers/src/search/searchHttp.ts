/**
 * JSON over HTTP for the search APIs that have no SDK here (Exa, Semantic Scholar), through `@effect/platform`'s
 * `HttpClient` (a span per request, interruption cancels it, and tests can hand in a client of their own): one request
 * with a time limit, and the answer's status, headers and body mapped to the error union of core.
 */
import { Errors } from "@deep-research/core"
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"

/** The client of a provider that was given none: the platform's, over the runtime's `fetch`. */
export const defaultClient: HttpClient.HttpClient = Effect.runSync(
  Effect.provide(HttpClient.HttpClient, FetchHttpClient.layer)
)

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

/** The answer's headers, by lower-case name. */
export type HeaderRecord = Readonly<Record<string, string | undefined>>

/** How long the server asked us to wait: `retry-after-ms`, or `retry-after` in seconds or as a date. */
export const retryAfterOf = (headers: HeaderRecord, now: number): Duration.Duration | undefined => {
  const ms = headers["retry-after-ms"]
  if (ms !== undefined && ms.trim() !== "" && Number.isFinite(Number(ms)))
    return Duration.millis(Math.max(0, Number(ms)))
  const after = headers["retry-after"]
  if (after === undefined || after.trim() === "") return undefined
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
  headers: HeaderRecord,
  text: string,
  now: number
): Errors.ProviderError => {
  const detail = errorDetail(text)
  const tag = errorTag(text)
  if (status === 402 || tag === "NO_MORE_CREDITS" || (status !== 401 && quotaText.test(detail))) {
    return new Errors.ProviderQuotaExhausted({ provider })
  }
  if (status === 401 || status === 403) {
    return new Errors.ProviderAuthenticationFailed({ provider, ...(detail !== "" ? { detail } : {}) })
  }
  if (status === 429) {
    const retryAfter = retryAfterOf(headers, now)
    return new Errors.ProviderRateLimited({ provider, ...(retryAfter !== undefined ? { retryAfter } : {}) })
  }
  if (status === 408 || status === 409 || status === 425 || status >= 500) {
    return new Errors.ProviderUnavailable({ provider, status, ...(detail !== "" ? { detail } : {}) })
  }
  return new Errors.ProviderInvalidRequest({
    provider,
    detail: `${status} ${detail !== "" ? detail : "request refused"}`
  })
}

const describe = (error: unknown): string => {
  if (error instanceof Error) {
    const cause = error.cause instanceof Error ? `: ${error.cause.message}` : ""
    return `${error.message}${cause}`
  }
  return String(error)
}

/** Sends the request and returns the parsed JSON body of a 2xx answer. */
export const requestJson = (
  request: JsonRequest,
  client: HttpClient.HttpClient = defaultClient
): Effect.Effect<unknown, Errors.ProviderError> =>
  Effect.gen(function* () {
    const { provider } = request
    const unavailable = (error: unknown) => new Errors.ProviderUnavailable({ provider, detail: describe(error) })
    const base = request.method === "GET" ? HttpClientRequest.get(request.url) : HttpClientRequest.post(request.url)
    const outgoing = base.pipe(HttpClientRequest.setHeaders({ accept: "application/json", ...request.headers }), (r) =>
      request.body === undefined ? r : HttpClientRequest.bodyUnsafeJson(r, request.body)
    )
    const response = yield* Effect.mapError(client.execute(outgoing), unavailable)
    const text = yield* Effect.mapError(response.text, unavailable)
    if (response.status < 200 || response.status >= 300) {
      const now = yield* Clock.currentTimeMillis
      return yield* Effect.fail(statusError(provider, response.status, response.headers, text, now))
    }
    return yield* Effect.try({
      try: (): unknown => JSON.parse(text),
      catch: () =>
        new Errors.ProviderUnavailable({
          provider,
          status: response.status,
          detail: `the answer was not valid JSON: ${text.slice(0, 200)}`
        })
    })
  }).pipe(
    Effect.timeoutFail({
      duration: request.timeout,
      onTimeout: () => new Errors.ProviderTimeout({ provider: request.provider, after: request.timeout })
    })
  )
