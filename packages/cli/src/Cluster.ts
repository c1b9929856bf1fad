/**
 * Research sessions on `@effect/cluster`: a session is an entity addressed by its id, placed on one of the cluster's
 * shards; the runner that holds the shard runs it (see `Worker.ts`). Messages to a session (`Run`, `Resume`) are
 * persisted in PostgreSQL by the cluster's `SqlMessageStorage` before they are delivered, so when a runner dies its
 * shards move to the others and the new owner receives the unanswered messages again: it resumes each session from its
 * last checkpoint in the PostgreSQL session store, without redoing finished research units.
 *
 * The submitting side (`deep-research "<question>" --database URL`) joins as a client only: it sends `Run`, then
 * follows the session's events and report from the store.
 */
import { Pipeline, ResearchConfig, Review, type Session, SessionStore } from "@deep-research/core"
import * as SqlSessionStore from "@deep-research/providers/SqlSessionStore"
import * as ClusterSchema from "@effect/cluster/ClusterSchema"
import * as Entity from "@effect/cluster/Entity"
import * as EntityAddress from "@effect/cluster/EntityAddress"
import * as EntityId from "@effect/cluster/EntityId"
import * as MessageStorage from "@effect/cluster/MessageStorage"
import * as RunnerAddress from "@effect/cluster/RunnerAddress"
import type * as Sharding from "@effect/cluster/Sharding"
import type * as ShardingConfig from "@effect/cluster/ShardingConfig"
import * as NodeClusterSocket from "@effect/platform-node/NodeClusterSocket"
import * as Rpc from "@effect/rpc/Rpc"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as ClusterStorage from "./ClusterStorage.js"

/** Whether a plan to review waits for a decision sent later (`await`) or the run goes on as planned (`proceed`). */
const ReviewWait = Schema.Literal("await", "proceed")
type ReviewWait = typeof ReviewWait.Type

/** A research session as a cluster entity. */
export const ResearchSession = Entity.make("ResearchSession", [
  /** Researches the question, or continues the session when it was already started (after a runner died). */
  Rpc.make("Run", {
    payload: {
      question: Schema.String,
      config: ResearchConfig.ResearchConfig,
      clarification: Schema.Literal("await", "proceed"),
      /**
       * With `review`, whether the plan waits in the store for a decision sent later (`await`, the default) or the run
       * goes on as planned (`proceed`: the sender cannot answer, off a terminal).
       */
      review: Schema.optional(ReviewWait),
      /** When it was sent: the session's creation time, however late a runner starts it (absent in older messages). */
      sentAt: Schema.optional(Schema.Number)
    },
    // One `Run` per session: sent twice, it is stored once.
    primaryKey: () => "run"
  }),
  /**
   * Continues a stored session, with the answer to its clarifying question, or the decision about its plan, when it
   * waits for one.
   */
  Rpc.make("Resume", {
    payload: {
      answer: Schema.optional(Schema.String),
      decision: Schema.optional(Review.Decision),
      review: Schema.optional(ReviewWait),
      request: Schema.String
    },
    primaryKey: (payload) => payload.request
  }),
  /** Stops the session's research if it runs now; it is saved as cancelled, resumable. */
  Rpc.make("Cancel", {
    payload: { request: Schema.String },
    primaryKey: (payload) => payload.request
  })
]).annotateRpcs(ClusterSchema.Persisted, true)

/**
 * Timings for a research cluster: a runner that stops answering is noticed within seconds, and its shards are free
 * once its locks lapse (at once with advisory locks, which go with its connection).
 */
export const shardingConfig = (options: {
  readonly advisoryLocks: boolean
}): Partial<ShardingConfig.ShardingConfig["Type"]> => ({
  // With advisory locks a dead runner's shards are free as soon as its connection drops; the lock table's locks
  // lapse on expiry, and its slower writes (one backend shared by every runner) need the longer interval.
  shardLockRefreshInterval: Duration.seconds(options.advisoryLocks ? 2 : 5),
  shardLockExpiration: Duration.seconds(options.advisoryLocks ? 8 : 20),
  shardLockDisableAdvisory: !options.advisoryLocks,
  runnerHealthCheckInterval: Duration.seconds(2),
  refreshAssignmentsInterval: Duration.seconds(1),
  entityMessagePollInterval: Duration.seconds(1),
  entityReplyPollInterval: Duration.seconds(1),
  sendRetryInterval: Duration.millis(500),
  // A research session runs for minutes: it is not an idle entity.
  entityMaxIdleTime: Duration.minutes(10),
  entityTerminationTimeout: Duration.seconds(10)
})

/**
 * Whether shard locks are PostgreSQL advisory locks (the default). `DEEP_RESEARCH_SHARD_LOCKS=table` uses the
 * cluster's lock table with expiry instead, for a database that serves every connection from one backend (PGlite),
 * where advisory locks cannot tell connections apart.
 */
export const advisoryLocksFromEnv = (env: Record<string, string | undefined>): boolean =>
  env["DEEP_RESEARCH_SHARD_LOCKS"] !== "table"

/** The database client of a cluster member; `DatabaseUnavailable` when it cannot be reached. */
export const sqlLayer = (url: Redacted.Redacted<string>) => SqlSessionStore.pgClientLayer(url, { maxConnections: 10 })

/**
 * A member of the cluster that sends to sessions but runs none, over the database client in context; its message
 * storage is given too, so that a deleted session's messages can be removed (`forget`).
 */
const clientOver = (advisoryLocks: boolean) => {
  const config = shardingConfig({ advisoryLocks })
  return NodeClusterSocket.layer({ clientOnly: true, storage: "byo", shardingConfig: config }).pipe(
    Layer.provideMerge(ClusterStorage.layer(config))
  )
}

/** `clientOver` with a database client of its own, which it gives too (to read what waits for a runner). */
export const clientLayer = (url: Redacted.Redacted<string>, advisoryLocks: boolean) =>
  clientOver(advisoryLocks).pipe(Layer.provideMerge(sqlLayer(url)))

/** A runner at an address other runners and clients can reach. */
export const runnerShardingLayer = (
  url: Redacted.Redacted<string>,
  address: { readonly host: string; readonly port: number; readonly listenHost: string },
  advisoryLocks: boolean
) => {
  const config = {
    ...shardingConfig({ advisoryLocks }),
    runnerAddress: Option.some(RunnerAddress.make(address.host, address.port)),
    runnerListenAddress: Option.some(RunnerAddress.make(address.listenHost, address.port))
  }
  return NodeClusterSocket.layer({ storage: "byo", shardingConfig: config }).pipe(
    Layer.provide(ClusterStorage.layer(config)),
    Layer.provide(sqlLayer(url))
  )
}

/**
 * A session the cluster leaves alone. Not `cancelled`: on a cluster that is what a session interrupted by its runner's
 * shutdown or a shard's move is left as, and the shard's next owner resumes it.
 */
const terminal: ReadonlySet<Session.Session["status"]> = new Set([
  "completed",
  "awaiting_clarification",
  "awaiting_review",
  "failed"
])

/**
 * The events a run publishes last: when it completes, fails, is cancelled, or stops to wait for an answer. A run
 * saves its final status before it publishes one, so whoever follows a session from the store waits for it.
 */
const lastEvents: ReadonlySet<string> = new Set([
  "SessionCompleted",
  "SessionFailed",
  "SessionCancelled",
  "SessionAwaitingClarification",
  "SessionAwaitingReview"
])

/** Whether an event is the last a run publishes. */
export const isLastEvent = (event: { readonly _tag: string }): boolean => lastEvents.has(event._tag)

/** How many times a follower polling every 300 ms reads on, once the session has stopped, for the run's last event. */
export const pollsForLastEvent = 16

/** Whether a session has stopped: done, waiting for an answer or a review, or failed. */
export const isSettled = (session: Session.Session): boolean => terminal.has(session.status)

/**
 * Until the session is free: a message whose shard has just moved here may find the session still held by the runner
 * it moved from (alive, stopping the run since it lost the shard) or by a runner that died (its lease not yet lapsed,
 * 15 s at most by default). Answering the message then would leave the session unrun, so the work is tried again, each
 * second, until the hold ends; the message's interruption (its shard moving on, a cancel) still stops it.
 */
const whenFree = <A, E extends { readonly _tag: string }, R>(sessionId: string, work: Effect.Effect<A, E, R>) =>
  Effect.tapError(work, (error) =>
    error._tag === "ResearchSessionBusy"
      ? Effect.logInfo(`cluster: session ${sessionId} still held by another run; trying again each second`)
      : Effect.void
  ).pipe(
    Effect.retry({
      while: (error) => error._tag === "ResearchSessionBusy",
      schedule: Schedule.spaced(Duration.seconds(1))
    })
  )

/**
 * What a runner does with `Run`: a session not yet in the store is started; one that is there and still running (its
 * runner died) or cancelled (its runner stopped, or its shard moved) is resumed from its last checkpoint, once no other
 * run holds it; one that has settled (completed, waiting for an answer or a review, failed) is left as it is. A plan to
 * review (`review`) waits in the store, `awaiting_review`, for the decision a `Resume` brings, unless the sender said
 * nobody can answer.
 */
export const runSession = (
  sessionId: string,
  payload: {
    readonly question: string
    readonly config: ResearchConfig.ResearchConfig
    readonly clarification: "await" | "proceed"
    readonly review?: ReviewWait | undefined
    readonly sentAt?: number | undefined
  }
) =>
  Effect.gen(function* () {
    const store = yield* SessionStore.SessionStore
    const existing = yield* Effect.either(store.load(sessionId))
    if (Either.isRight(existing)) {
      if (isSettled(existing.right)) return existing.right
      yield* Effect.logInfo(`cluster: session ${sessionId} running (resumed from its last checkpoint)`)
      return yield* Pipeline.resume(sessionId)
    }
    if (existing.left._tag !== "ResearchSessionNotFound") return yield* existing.left
    yield* Effect.logInfo(`cluster: session ${sessionId} running`)
    return yield* Pipeline.research(payload.question, {
      sessionId,
      config: payload.config,
      clarification: payload.clarification,
      createdAt: payload.sentAt
    })
  }).pipe(
    (work) => whenFree(sessionId, work),
    Effect.provideService(Review.ReviewMode, payload.review ?? "await"),
    Effect.tap((session) => Effect.logInfo(`cluster: session ${sessionId} settled ${session.status}`)),
    Effect.onInterrupt(() => Effect.logInfo(`cluster: session ${sessionId} stopped`)),
    Effect.asVoid,
    // A session that fails is marked failed in the store by the pipeline; the message is answered all the same, so
    // that the cluster does not deliver it again.
    Effect.catchAll((error) => Effect.logWarning(`session ${sessionId}: ${error.message}`)),
    Effect.annotateLogs("session", sessionId)
  )

/**
 * What a runner does with `Resume`. A decision about a plan is applied to a session that waits for one; delivered again
 * (its runner died after storing it), it finds the session already decided: one left running goes on from its
 * checkpoint, any other is left as it is.
 */
export const resumeSession = (
  sessionId: string,
  payload: {
    readonly answer?: string | undefined
    readonly decision?: Review.Decision | undefined
    readonly review?: ReviewWait | undefined
  }
) =>
  Effect.gen(function* () {
    const { answer, decision } = payload
    if (decision !== undefined) {
      const stored = yield* Effect.flatMap(SessionStore.SessionStore, (store) => store.load(sessionId))
      if (stored.status !== "awaiting_review") {
        if (stored.status !== "running") return stored
        yield* Effect.logInfo(`cluster: session ${sessionId} was reviewed already; resumed from its last checkpoint`)
        return yield* Pipeline.resume(sessionId)
      }
      yield* Effect.logInfo(`cluster: session ${sessionId} plan ${Review.decisionWord(decision)}`)
    }
    return yield* Pipeline.resume(sessionId, { answer, review: decision })
  }).pipe(
    (work) => whenFree(sessionId, work),
    Effect.provideService(Review.ReviewMode, payload.review ?? "await"),
    Effect.asVoid,
    Effect.catchAll((error) => Effect.logWarning(`session ${sessionId}: ${error.message}`)),
    Effect.annotateLogs("session", sessionId)
  )

/**
 * The entity's handlers, over the research services in context. `Run` and `Resume` take turns; `Cancel` is handled
 * beside them (the entity takes messages side by side) and interrupts the message running, as a client's interrupt
 * would: the session is saved as cancelled and the message is answered, so the cluster does not deliver it again.
 * A message interrupted because its runner stops or its shard moves is left unanswered, and the shard's next owner
 * receives it again.
 */
export const entityLayer = ResearchSession.toLayer(
  Effect.gen(function* () {
    const context = yield* Effect.context<Pipeline.Requirements>()
    const turn = yield* Effect.makeSemaphore(1)
    let current: Fiber.RuntimeFiber<unknown, unknown> | undefined
    const inTurn = (work: Effect.Effect<void, never, Pipeline.Requirements>) =>
      turn.withPermits(1)(
        Effect.withFiberRuntime<void>((fiber) => {
          current = fiber
          return Effect.ensuring(
            Effect.provide(work, context),
            Effect.sync(() => {
              if (current === fiber) current = undefined
            })
          )
        })
      )
    return ResearchSession.of({
      Run: (envelope) => inTurn(runSession(envelope.address.entityId, envelope.payload)),
      Resume: (envelope) => inTurn(resumeSession(envelope.address.entityId, envelope.payload)),
      Cancel: (envelope) =>
        Effect.suspend(() => {
          const running = current
          if (running === undefined) {
            return Effect.logInfo(`cluster: session ${envelope.address.entityId} not running; nothing to cancel`)
          }
          return Effect.zipRight(
            Effect.logInfo(`cluster: session ${envelope.address.entityId} cancelled`),
            Fiber.interrupt(running)
          )
        })
    })
  }),
  { maxIdleTime: Duration.minutes(10), concurrency: "unbounded" }
)

/** What sending to a session needs: a member of the cluster (`clientLayer` or a runner). */
export type ClientServices = Sharding.Sharding

/** Sends `Run` for a new session; returns at once (the message is persisted before this returns). */
export const submit = (
  sessionId: string,
  question: string,
  config: ResearchConfig.ResearchConfig,
  clarification: "await" | "proceed",
  review: ReviewWait = "await"
) =>
  Effect.gen(function* () {
    const client = yield* ResearchSession.client
    const sentAt = yield* Clock.currentTimeMillis
    yield* client(sessionId).Run({ question, config, clarification, review, sentAt }, { discard: true })
  })

/**
 * Removes what the cluster keeps of a session: its messages (the `Run` holds the question and the configuration) and
 * their replies. For a session deleted from the store, which no runner runs: a message left would outlive the
 * session it was for.
 */
export const forget = (sessionId: string) =>
  Effect.gen(function* () {
    const entityId = EntityId.make(sessionId)
    const shardId = yield* ResearchSession.getShardId(entityId)
    const storage = yield* MessageStorage.MessageStorage
    yield* storage.clearAddress(EntityAddress.make({ entityType: ResearchSession.type, entityId, shardId }))
  })

/**
 * `forget` for a process that is not a member of the cluster (`deep-research delete --database`): joins as a client
 * only when the database holds the cluster's messages, so that a database used only as a store is left as it is.
 */
export const forgetStored = (url: Redacted.Redacted<string>, sessionId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const [found] = yield* sql<{ readonly clustered: boolean }>`
      SELECT to_regclass('cluster_messages') IS NOT NULL AS clustered`
    if (found?.clustered !== true) return
    // The client joins over the same database client: one pool for the check and the removal.
    yield* Effect.provide(forget(sessionId), clientOver(advisoryLocksFromEnv(process.env)))
  }).pipe(Effect.provide(sqlLayer(url)))

/** Sends `Cancel` to a session. */
export const cancel = (sessionId: string, request: string) =>
  Effect.gen(function* () {
    const client = yield* ResearchSession.client
    yield* client(sessionId).Cancel({ request }, { discard: true })
  })

/**
 * Sends `Resume` to a stored session: with the answer to its question, or the decision about its plan, when given;
 * `review` says whether a plan still to review waits for a later decision (the default) or goes on as planned.
 */
export const resume = (
  sessionId: string,
  answer: string | undefined,
  request: string,
  options: { readonly decision?: Review.Decision | undefined; readonly review?: ReviewWait | undefined } = {}
) =>
  Effect.gen(function* () {
    const client = yield* ResearchSession.client
    yield* client(sessionId).Resume(
      {
        request,
        ...(answer === undefined ? {} : { answer }),
        ...(options.decision === undefined ? {} : { decision: options.decision }),
        ...(options.review === undefined ? {} : { review: options.review })
      },
      { discard: true }
    )
  })
