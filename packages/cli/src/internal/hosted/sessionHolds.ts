/**
 * How a runner of the cluster waits for a session another run holds, and when it says that its own run has started:
 * once its run holds the session (its lease taken), not before, so that a runner's log never shows a run that was
 * only trying to begin.
 */
import { SessionStore } from "@deep-research/core"
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"

/**
 * Until the session is free: a message whose shard has just moved here may find the session still held by the runner
 * it moved from (alive, stopping the run since it lost the shard) or by a runner that died (its lease not yet lapsed,
 * 15 s at most by default). Answering the message then would leave the session unrun, so the work is tried again, each
 * second, until the hold ends, said once; the message's interruption (its shard moving on, a cancel) still stops it.
 */
export const whenFree = <A, E extends { readonly _tag: string }, R>(sessionId: string, work: Effect.Effect<A, E, R>) =>
  Effect.suspend(() => {
    let said = false
    return Effect.tapError(work, (error) =>
      error._tag === "ResearchSessionBusy" && !said
        ? Effect.zipRight(
            Effect.sync(() => (said = true)),
            Effect.logInfo(`cluster: session ${sessionId} still held by another run; trying again each second`)
          )
        : Effect.void
    ).pipe(
      Effect.retry({
        while: (error) => error._tag === "ResearchSessionBusy",
        schedule: Schedule.spaced(Duration.seconds(1))
      })
    )
  })

/** `work` with `line` logged once its run has taken the session's lock (a run that finds it held says nothing). */
export const saidWhenHeld =
  (sessionId: string, line: string) =>
  <A, E, R>(work: Effect.Effect<A, E, R>): Effect.Effect<A, E, R | SessionStore.SessionStore> =>
    Effect.updateService(work, SessionStore.SessionStore, (store) => ({
      ...store,
      lock: (id: string) => (id === sessionId ? Effect.tap(store.lock(id), () => Effect.logInfo(line)) : store.lock(id))
    }))

/** Says that the run stopped: its shard moved, its runner stopping, or a defect ended it (the entity runs it again). */
export const saidWhenStopped =
  (sessionId: string) =>
  <A, E, R>(work: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.onError(work, (cause) =>
      Cause.isInterruptedOnly(cause) || Cause.isDie(cause)
        ? Effect.logInfo(`cluster: session ${sessionId} stopped${Cause.isDie(cause) ? " by a defect" : ""}`)
        : Effect.void
    )
