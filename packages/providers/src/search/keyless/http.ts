/**
 * The HTTP of the keyless search APIs (Wikipedia, arXiv, OpenAlex, PubMed, SearXNG): one GET with a time limit and the
 * identifying headers. An upstream is an operator's choice, but a broken proxy or a compromised instance must cost
 * that source only, so the answer is read with a size limit counted as the body streams; a redirect is followed only
 * to the host and port first asked or to an address the page extractor would fetch (`extract/addressPolicy.ts`, the
 * same checks), at most five; and a rate limit whose `Retry-After` is longer than a run waits is no rate limit to
 * retry but the provider out of reach until then (`ProviderQuotaExhausted` with `until`), which the fan-out skips. An answer
 * that cannot be used (too large, a refused redirect, XML nested too deep) is not retried either: the provider is
 * skipped for `unusableFor`, the sentence saying why in the fan-out's line. A non-2xx
 * answer is handed to the provider's own reading of its API's errors (each documents them differently) before the
 * common mapping of `searchHttp.ts`; JSON bodies are decoded here, an unreadable one being the provider's fault of
 * the moment (`ProviderUnavailable`).
 */
import { Errors } from "@deep-research/core"
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import type * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as dns from "node:dns"
import { resolveTarget } from "../../extract/pinnedRequest.js"
import { defaultClient, type HeaderRecord, statusError } from "../searchHttp.js"

/**
 * The largest answer read: 4 MB of XML (parsed a slice at a time), 1 MB of JSON (whose parse is one synchronous call);
 * the keyless APIs' answers to a search are well under 1 MB. BENCHMARKS.md, "Keyless answers", has the figures.
 */
export const defaultMaxBytes = 4 * 1024 * 1024

/** The largest JSON answer read. */
export const jsonMaxBytes = 1024 * 1024

/** Redirects followed per request, as the page extractor follows. */
export const maxRedirects = 5

/** The longest `Retry-After` treated as a rate limit to retry; a longer one skips the provider until then. */
export const longestWait = Duration.seconds(60)

/**
 * How long a provider whose answer could not be used (too large, nested too deep, redirected where it may not go) is
 * skipped: the same question would get the same answer, so it is not asked again at once.
 */
export const unusableFor = Duration.minutes(10)

/** An answer that could not be used: the provider skipped for `unusableFor`, with the sentence saying why. */
export const unusable = (provider: string, detail: string): Effect.Effect<never, Errors.ProviderQuotaExhausted> =>
  Effect.flatMap(Clock.currentTimeMillis, (now) =>
    Effect.fail(new Errors.ProviderQuotaExhausted({ provider, until: now + Duration.toMillis(unusableFor), detail }))
  )

/** A GET to send. */
export interface Request {
  readonly provider: string
  readonly url: string
  /** The identifying headers (`user-agent`) and any other. */
  readonly headers: Readonly<Record<string, string>>
  readonly accept: string
  readonly timeout: Duration.Duration
  /** The largest body read; `jsonMaxBytes` for JSON, else `defaultMaxBytes`, unless given. */
  readonly maxBytes?: number | undefined
}

/** An answer as it came. */
export interface Answer {
  readonly status: number
  readonly headers: HeaderRecord
  readonly text: string
}

/** A provider's reading of an error answer; `undefined` leaves it to the common mapping. */
export type ErrorReading = (answer: Answer, now: number) => Errors.ProviderError | undefined

const describe = (error: unknown): string => {
  if (error instanceof Error) {
    const cause = error.cause instanceof Error ? `: ${error.cause.message}` : ""
    return `${error.message}${cause}`
  }
  return String(error)
}

const megabytes = (bytes: number): string => `${Math.round((bytes / (1024 * 1024)) * 10) / 10} MB`

/** The sentence of an answer over the limit. */
export const tooLarge = (provider: string, maxBytes: number): string =>
  `${provider}'s answer was larger than the ${megabytes(maxBytes)} a keyless search answer may be; it was not read`

const systemLookup = (hostname: string) => dns.promises.lookup(hostname, { all: true, verbatim: true })

/**
 * Where a redirect may go: back to the host and port first asked (the operator's), else only where the page extractor
 * would fetch. The next URL, or why not.
 */
const redirectTarget = (provider: string, from: URL, first: URL, location: string) =>
  Effect.gen(function* () {
    const next = yield* Effect.try({
      try: () => new URL(location, from),
      catch: () => new Errors.ProviderUnavailable({ provider, detail: `${provider} redirected to "${location}"` })
    })
    const allowedHosts = new Set([first.host.toLowerCase()])
    yield* resolveTarget(next, { allowedHosts, lookup: systemLookup }).pipe(
      Effect.catchAll((error) =>
        unusable(
          provider,
          error._tag === "UrlBlocked"
            ? `${provider} redirected to ${next.href}, which is not followed: ${error.reason}`
            : `${provider} redirected to ${next.href}, which could not be checked: ${error.reason}`
        )
      )
    )
    return next
  })

/** The body as text, read no further than `maxBytes` (counted as it streams, after any decompression). */
const readBody = (
  provider: string,
  response: HttpClientResponse.HttpClientResponse,
  maxBytes: number
): Effect.Effect<string, Errors.ProviderUnavailable | Errors.ProviderQuotaExhausted> => {
  const declared = Number(response.headers["content-length"] ?? "")
  const over = unusable(provider, tooLarge(provider, maxBytes))
  if (Number.isFinite(declared) && declared > maxBytes) return over
  return response.stream.pipe(
    Stream.mapError(
      (error): Errors.ProviderUnavailable | Errors.ProviderQuotaExhausted =>
        new Errors.ProviderUnavailable({ provider, detail: describe(error) })
    ),
    Stream.runFoldEffect({ chunks: [] as Array<Uint8Array>, size: 0 }, (read, chunk) => {
      const size = read.size + chunk.length
      if (size > maxBytes) return over
      read.chunks.push(chunk)
      return Effect.succeed({ chunks: read.chunks, size })
    }),
    Effect.map(({ chunks }) => Buffer.concat(chunks).toString("utf8"))
  )
}

/**
 * A rate limit that asks for a longer wait than a run gives a retry: the provider is out of reach until then, said in
 * one line rather than asked again every minute.
 */
const outOfReach = (error: Errors.ProviderError, now: number): Errors.ProviderError => {
  if (error._tag !== "ProviderRateLimited" || error.retryAfter === undefined) return error
  if (!Duration.greaterThan(error.retryAfter, longestWait)) return error
  return new Errors.ProviderQuotaExhausted({
    provider: error.provider,
    until: now + Duration.toMillis(error.retryAfter),
    detail: `it asked to be called again in ${Duration.format(error.retryAfter)} (Retry-After)`
  })
}

/** Sends the request; a 2xx answer is returned, any other is failed with the provider's error. */
export const get = (
  request: Request,
  readError: ErrorReading = () => undefined,
  client: HttpClient.HttpClient = defaultClient
): Effect.Effect<Answer, Errors.ProviderError> =>
  Effect.gen(function* () {
    const { provider } = request
    const maxBytes = request.maxBytes ?? (request.accept.includes("json") ? jsonMaxBytes : defaultMaxBytes)
    const unavailable = (error: unknown) => new Errors.ProviderUnavailable({ provider, detail: describe(error) })
    const first = yield* Effect.try({
      try: () => new URL(request.url),
      catch: () => new Errors.ProviderInvalidRequest({ provider, detail: `not a URL: ${request.url}` })
    })
    let url = first
    for (let redirects = 0; ; redirects++) {
      const outgoing = HttpClientRequest.get(url.href).pipe(
        HttpClientRequest.setHeaders({ accept: request.accept, ...request.headers })
      )
      const response = yield* client
        .execute(outgoing)
        .pipe(Effect.mapError(unavailable), Effect.provideService(FetchHttpClient.RequestInit, { redirect: "manual" }))
      const location = response.headers["location"]
      if (response.status >= 300 && response.status < 400 && location !== undefined) {
        if (redirects >= maxRedirects) {
          return yield* new Errors.ProviderUnavailable({ provider, detail: `more than ${maxRedirects} redirects` })
        }
        url = yield* redirectTarget(provider, url, first, location)
        continue
      }
      const text = yield* readBody(provider, response, maxBytes)
      const answer: Answer = { status: response.status, headers: response.headers, text }
      if (answer.status >= 200 && answer.status < 300) return answer
      const now = yield* Clock.currentTimeMillis
      const error = readError(answer, now) ?? statusError(provider, answer.status, answer.headers, text, now)
      return yield* Effect.fail(outOfReach(error, now))
    }
  }).pipe(
    Effect.timeoutFail({
      duration: request.timeout,
      onTimeout: () => new Errors.ProviderTimeout({ provider: request.provider, after: request.timeout })
    })
  )

/** The body of an answer decoded as JSON by a schema. */
export const decodeJson = <A, I>(
  schema: Schema.Schema<A, I>,
  provider: string,
  answer: Answer
): Effect.Effect<A, Errors.ProviderUnavailable> =>
  Schema.decodeUnknown(Schema.parseJson(schema))(answer.text).pipe(
    Effect.mapError(
      (error) =>
        new Errors.ProviderUnavailable({
          provider,
          status: answer.status,
          detail: `unreadable answer: ${ParseResult.TreeFormatter.formatErrorSync(error).slice(0, 500)}`
        })
    )
  )

/** Items decoded between two yields to the event loop by `decodeItems`. */
export const itemsPerTurn = 10

/**
 * The items of a list each decoded on its own, the event loop served every `itemsPerTurn` items: an item that does not
 * decode costs that item (counted in `dropped`), never the answer, and a large answer never holds the loop in one go.
 */
export const decodeItems = <A, I>(
  schema: Schema.Schema<A, I>,
  items: ReadonlyArray<unknown>
): Effect.Effect<{ readonly decoded: ReadonlyArray<A>; readonly dropped: number }> =>
  Effect.gen(function* () {
    const decode = Schema.decodeUnknownOption(schema)
    const decoded: Array<A> = []
    for (let i = 0; i < items.length; i++) {
      if (i > 0 && i % itemsPerTurn === 0)
        yield* Effect.async<void>((resume) => {
          const handle = setImmediate(() => resume(Effect.void))
          return Effect.sync(() => clearImmediate(handle))
        })
      const item = decode(items[i])
      if (item._tag === "Some") decoded.push(item.value)
    }
    return { decoded, dropped: items.length - decoded.length }
  })
