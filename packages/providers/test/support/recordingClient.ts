/**
 * An HTTP client for pacing tests: it answers every request at once with a fixed body and records, on the Clock (so
 * `TestClock` drives it), when each request was sent and how many were in flight; no socket is opened.
 */
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import { Clock, Effect, Ref } from "effect"

/** What the client saw. */
export interface Recording {
  readonly client: HttpClient.HttpClient
  /** When each request was sent (Clock milliseconds), and its URL. */
  readonly sent: Effect.Effect<ReadonlyArray<{ readonly at: number; readonly url: string }>>
  /** The most requests in flight at once. */
  readonly mostInFlight: Effect.Effect<number>
}

/** A client answering `body` (of `contentType`) after `latencyMillis` of Clock time. */
export const recordingClient = (body: string, contentType: string, latencyMillis = 0): Effect.Effect<Recording> =>
  Effect.gen(function* () {
    const sent = yield* Ref.make<ReadonlyArray<{ readonly at: number; readonly url: string }>>([])
    const inFlight = yield* Ref.make(0)
    const most = yield* Ref.make(0)
    const client = HttpClient.make((request) =>
      Effect.gen(function* () {
        const at = yield* Clock.currentTimeMillis
        yield* Ref.update(sent, (all) => [...all, { at, url: request.url }])
        const now = yield* Ref.updateAndGet(inFlight, (n) => n + 1)
        yield* Ref.update(most, (m) => Math.max(m, now))
        if (latencyMillis > 0) yield* Effect.sleep(latencyMillis)
        yield* Ref.update(inFlight, (n) => n - 1)
        return HttpClientResponse.fromWeb(
          request,
          new Response(body, { status: 200, headers: { "content-type": contentType } })
        )
      })
    )
    return { client, sent: Ref.get(sent), mostInFlight: Ref.get(most) }
  })
