/**
 * The HTTP of the keyless search APIs (Wikipedia, arXiv, OpenAlex, PubMed, SearXNG): one GET with a time limit and the
 * identifying headers, its answer read whole. A non-2xx answer is handed to the provider's own reading of its API's
 * errors (each documents them differently) before the common mapping of `searchHttp.ts`; JSON and XML bodies are
 * decoded here, an unreadable one being the provider's fault of the moment (`ProviderUnavailable`).
 */
import { Errors } from "@deep-research/core"
import type * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Clock from "effect/Clock"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { defaultClient, type HeaderRecord, statusError } from "../searchHttp.js"

/** A GET to send. */
export interface Request {
  readonly provider: string
  readonly url: string
  /** The identifying headers (`user-agent`) and any other. */
  readonly headers: Readonly<Record<string, string>>
  readonly accept: string
  readonly timeout: Duration.Duration
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

/** Sends the request; a 2xx answer is returned, any other is failed with the provider's error. */
export const get = (
  request: Request,
  readError: ErrorReading = () => undefined,
  client: HttpClient.HttpClient = defaultClient
): Effect.Effect<Answer, Errors.ProviderError> =>
  Effect.gen(function* () {
    const { provider } = request
    const unavailable = (error: unknown) => new Errors.ProviderUnavailable({ provider, detail: describe(error) })
    const outgoing = HttpClientRequest.get(request.url).pipe(
      HttpClientRequest.setHeaders({ accept: request.accept, ...request.headers })
    )
    const response = yield* Effect.mapError(client.execute(outgoing), unavailable)
    const text = yield* Effect.mapError(response.text, unavailable)
    const answer: Answer = { status: response.status, headers: response.headers, text }
    if (answer.status >= 200 && answer.status < 300) return answer
    const now = yield* Clock.currentTimeMillis
    return yield* Effect.fail(readError(answer, now) ?? statusError(provider, answer.status, answer.headers, text, now))
  }).pipe(
    Effect.timeoutFail({
      duration: request.timeout,
      onTimeout: () => new Errors.Timeout({ provider: request.provider, after: request.timeout })
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
