/**
 * How a runner of the cluster waits for a session another run holds, and for a session database out of reach, and
 * when it says that its own run has started: once its run holds the session (its lease taken), not before, so that a
 * runner's log never shows a run that was only trying to begin.
 */
import { SessionStore } from "@deep-research/core"
import * as SqlSessionStore from "@deep-research/providers/SqlSessionStore"
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

/**
 * Until the database answers: work on the session that the session database's outage stopped (a read that cannot
 * wait, made before the run holds the session, or a run whose hold could lapse before the database came back) is tried
 * again each second, from the session's last checkpoint, until the database answers; said once. Let through, such a
 * stop would be a defect of the session's entity, which the cluster logs as an error, with its stack, and restarts with
 * every message the entity holds (an `Ask` being answered beside the run included), again and again while the database
 * stays away. The message's interruption (its shard moving on, a cancel) still stops it.
 */
export const whenDatabaseAnswers = <A, E, R>(sessionId: string, work: Effect.Effect<A, E, R>) =>
  Effect.suspend(() => {
    let said = false
    const stoppedByOutage = (cause: Cause.Cause<E>) =>
      Cause.isDie(cause) && !Cause.isInterrupted(cause) && SqlSessionStore.isUnreachable(Cause.squash(cause))
    return Effect.sandbox(work).pipe(
      Effect.tapError((cause) => {
        if (said || !stoppedByOutage(cause)) return Effect.void
        said = true
        return Effect.logWarning(
          `cluster: session ${sessionId} waits for the session database, which cannot be reached; it goes on from ` +
            "its last checkpoint once the database answers"
        )
      }),
      Effect.retry({ while: stoppedByOutage, schedule: Schedule.spaced(Duration.seconds(1)) }),
      Effect.unsandbox
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

/**
 * Says that the run stopped: its shard moved, its runner stopping, the session database out of reach for longer than
 * its hold lasts (its shard moving on meanwhile), or a defect ended it (the entity runs it again).
 */
export const saidWhenStopped =
  (sessionId: string) =>
  <A, E, R>(work: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.onError(work, (cause) => {
      if (!Cause.isInterruptedOnly(cause) && !Cause.isDie(cause)) return Effect.void
      const why = !Cause.isDie(cause)
        ? ""
        : SqlSessionStore.isUnreachable(Cause.squash(cause))
          ? " while the session database could not be reached; it goes on from its last checkpoint once it answers"
          : " by a defect"
      return Effect.logInfo(`cluster: session ${sessionId} stopped${why}`)
    })
