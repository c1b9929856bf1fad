/**
 * A session's record in the store around a run: a new session made, the run's events appended to its log as they are
 * published, and a session marked cancelled when its run is stopped before its phases could mark it themselves (or,
 * queued, before it began).
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Checkpoint from "../../phases/Checkpoint.js"
import type * as ResearchConfig from "../../ResearchConfig.js"
import * as ResearchEvents from "../../ResearchEvents.js"
import * as Session from "../../Session.js"
import { SessionStore } from "../../SessionStore.js"

/**
 * The run's progress stream: every event is appended to the session's log in the store as it is published (so the
 * log holds every event even when nobody listens), then published to the `ResearchEvents` in context, if any.
 */
export const recordingEvents = (sessionId: string) =>
  Effect.gen(function* () {
    const store = yield* SessionStore
    const outer = yield* Effect.serviceOption(ResearchEvents.ResearchEvents)
    const stream = Option.isSome(outer) ? outer.value : yield* ResearchEvents.make
    const service: ResearchEvents.Service = {
      // Every event of the run passes here: one runtime step to read the session and the time, not a decoding of
      // the event (it is typed, and the stores encode it by its schema).
      publish: (input) =>
        Effect.withFiberRuntime((fiber) => {
          const id = fiber.getFiberRef(ResearchEvents.currentSessionId)
          if (Option.isNone(id) || id.value !== sessionId) return stream.publish(input)
          const timestamp = Context.get(fiber.currentDefaultServices, Clock.Clock).unsafeCurrentTimeMillis()
          const event: ResearchEvents.ResearchEvent = { ...input, sessionId, timestamp }
          // Published whether the log took it or not (a store refuses an event it cannot encode); one step either way.
          const published = stream.publish(input)
          return Effect.matchEffect(store.appendEvents(sessionId, [event]), {
            onFailure: () => published,
            onSuccess: () => published
          })
        }),
      subscribe: stream.subscribe
    }
    return service
  })

/**
 * Marks a stored session cancelled when it is still marked running (a run stopped before `drive` could mark it
 * itself), and says so; one the run marked already is left as it is.
 */
export const cancelledIfRunning = (id: string) =>
  Effect.gen(function* () {
    const store = yield* SessionStore
    const stored = yield* store.load(id)
    if (stored.status !== "running") return
    yield* store.save(Checkpoint.patch(stored, { status: "cancelled" }))
    yield* ResearchEvents.publish({ _tag: "SessionCancelled" })
  }).pipe(Effect.catchAllCause((cause) => Effect.logWarning(`session ${id} could not be marked cancelled`, cause)))

/** A new session of `query`, not researched yet. */
export const newSession = (
  id: string,
  query: string,
  config: ResearchConfig.ResearchConfig,
  createdAt: number | undefined,
  status: "queued" | "running" | "cancelled"
) =>
  Effect.map(
    Clock.currentTimeMillis,
    (now) =>
      new Session.Session({
        version: Session.currentVersion,
        id,
        query: query.trim(),
        createdAt: Math.min(createdAt ?? now, now),
        updatedAt: now,
        config,
        status,
        rounds: [],
        sources: [],
        metrics: [],
        usage: []
      })
  )

/**
 * Stores a session that was stopped before any run of it began (while it waited for a `SessionLimit` slot, or in a
 * queue of the caller's) as cancelled, with its question and settings and nothing researched, so that the id its
 * caller was given can be resumed rather than being unknown. One stored queued under that id is marked cancelled; one
 * stored otherwise (it began) is left as it is.
 */
export const storedCancelled = (session: Effect.Effect<Session.Session>) =>
  Effect.flatMap(session, (cancelled) => markCancelled(cancelled.id, Option.some(cancelled))).pipe(
    Effect.catchAllCause((cause) =>
      Effect.logWarning("a session cancelled before it ran could not be stored as cancelled", cause)
    )
  )

/**
 * Marks a stored session cancelled when it is still queued (its run stopped before it began), and says so in its log;
 * one that began, or that another process holds now, is left as it is.
 */
export const cancelledIfQueued = (id: string) =>
  markCancelled(id, Option.none()).pipe(
    Effect.catchAllCause((cause) => Effect.logWarning(`session ${id} could not be marked cancelled`, cause))
  )

/** Under the session's lock: the queued session marked cancelled, or `orNew` stored when none is. */
const markCancelled = (id: string, orNew: Option.Option<Session.Session>) =>
  Effect.scoped(
    Effect.gen(function* () {
      const store = yield* SessionStore
      yield* store.lock(id)
      const existing = yield* Effect.either(store.load(id))
      if (existing._tag === "Right") {
        if (existing.right.status !== "queued") return
        const now = yield* Clock.currentTimeMillis
        yield* store.save(Checkpoint.patch(existing.right, { status: "cancelled", updatedAt: now }))
      } else {
        if (existing.left._tag !== "ResearchSessionNotFound" || Option.isNone(orNew)) return yield* existing.left
        yield* store.save(orNew.value)
      }
      const events = yield* recordingEvents(id)
      yield* Effect.provideService(
        ResearchEvents.publish({ _tag: "SessionCancelled" }),
        ResearchEvents.ResearchEvents,
        events
      )
    })
  )
