/**
 * A hosted session's events as a stream: its stored log from a position on, then what it publishes while this process
 * runs it. SSE and MCP clients follow a session through it.
 */
import { ResearchEvents } from "@deep-research/core"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import { type Host, storeOf } from "./host.js"

/** An event of a session's log with its position there (1 for the first), which SSE sends as the event id. */
export interface NumberedEvent {
  readonly id: number
  readonly event: ResearchEvents.ResearchEvent
}

/**
 * The log after `after`, then on: subscribed before the log is read, so nothing published in between is missed. The
 * store appends each event before it is published, so the log is the order of record and a published event of the
 * session only says "read on"; every event keeps its position in the log as its id, however it was reached.
 */
export const events = (host: Host, sessionId: string, after: number): Stream.Stream<NumberedEvent> =>
  Stream.asyncScoped<NumberedEvent>((emit) =>
    Effect.gen(function* () {
      const wake = yield* Effect.flatMap(host.onRuntime(ResearchEvents.ResearchEvents), (e) => e.subscribe)
      let sent = after
      const readOn = Effect.gen(function* () {
        const log = yield* Effect.flatMap(storeOf(host), (store) => store.events(sessionId)).pipe(
          Effect.orElseSucceed((): ReadonlyArray<ResearchEvents.ResearchEvent> => [])
        )
        const fresh = log.slice(sent).map((event, i) => ({ id: sent + i + 1, event }))
        sent = Math.max(sent, log.length)
        if (fresh.length > 0) yield* Effect.promise(() => emit.chunk(Chunk.unsafeFromArray(fresh)))
      })
      const follow = Effect.gen(function* () {
        yield* readOn
        const run = host.runs.get(sessionId)
        if (run === undefined) return
        while (true) {
          const next = yield* Effect.raceFirst(
            Effect.as(Fiber.await(run.fiber), "ended" as const),
            Effect.as(
              Effect.repeat(Queue.take(wake), { until: (event) => event.sessionId === sessionId }),
              "event" as const
            )
          )
          // Whatever else arrived meanwhile is in the log too; one read takes it all.
          yield* Queue.takeAll(wake)
          yield* readOn
          if (next === "ended") return
        }
      })
      yield* Effect.forkScoped(
        Effect.ensuring(
          follow,
          Effect.promise(() => emit.end())
        )
      )
    })
  )
