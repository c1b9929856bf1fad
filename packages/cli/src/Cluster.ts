/**
 * Research sessions on `@effect/cluster`: a session is an entity addressed by its id, placed on one of the cluster's
 * shards; the runner that holds the shard runs it (see `Worker.ts`; what it does with each message is
 * `internal/cluster/sessionWork.ts`). Messages to a session (`Run`, `Resume`, `Continue`, `Ask`, `Cancel`) are
 * persisted in PostgreSQL by the cluster's `SqlMessageStorage` before they are delivered, so when a runner dies its
 * shards move to the others and the new owner receives the unanswered messages again: it resumes each session from its
 * last checkpoint in the PostgreSQL session store, without redoing finished research units.
 *
 * The submitting side (`deep-research "<question>" --database URL`) joins as a client only: it sends `Run`, then
 * follows the session's events and report from the store.
 */
import { type Pipeline, Research, ResearchConfig, Review } from "@deep-research/core"
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
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as ClusterStorage from "./ClusterStorage.js"
import {
  AskFailure,
  askSession,
  BudgetChange,
  continueSession,
  resumeSession,
  ReviewWait,
  runSession
} from "./internal/cluster/sessionWork.js"

export { isSettled, resumeSession, runSession } from "./internal/cluster/sessionWork.js"

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
  /**
   * Goes deeper into a finished session (`FollowUp.extend`); `continuations` is how many it had when this was sent, so
   * that a delivery again does not start it twice.
   */
  Rpc.make("Continue", {
    payload: {
      direction: Schema.String,
      rounds: Schema.optional(Schema.Number),
      budget: Schema.optional(BudgetChange),
      continuations: Schema.Number,
      request: Schema.String
    },
    primaryKey: (payload) => payload.request
  }),
  /**
   * Answers a follow-up question from the session's stored sources (`FollowUp.ask`); the reply is the answer.
   * `answered` is how many answers the session had when this was sent, so that a delivery again does not pay twice.
   */
  Rpc.make("Ask", {
    payload: {
      question: Schema.String,
      answered: Schema.Number,
      budget: Schema.optional(BudgetChange),
      request: Schema.String
    },
    success: Research.FollowUpAnswer,
    error: AskFailure,
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

/**
 * The entity's handlers, over the research services in context. `Run`, `Resume` and `Continue` take turns; `Ask` is
 * answered beside them (a session a run holds is busy for it); `Cancel` is handled beside them too (the entity takes
 * messages side by side) and interrupts the message running, as a client's interrupt would: the session is saved as
 * cancelled and the message is answered, so the cluster does not deliver it again.
 * A message interrupted because its runner stops or its shard moves is left unanswered, and the shard's next owner
 * receives it again. One whose work the session database's outage stops waits for the database and is tried again
 * (`sessionWork.ts`): a defect would have the cluster restart the entity with every message it holds.
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
      Continue: (envelope) => inTurn(continueSession(envelope.address.entityId, envelope.payload)),
      Ask: (envelope) => Effect.provide(askSession(envelope.address.entityId, envelope.payload), context),
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

/**
 * Sends `Continue` to a finished session, which had `continuations` continuations when it was sent; returns once the
 * message is persisted.
 */
export const extend = (
  sessionId: string,
  direction: string,
  continuations: number,
  request: string,
  options: { readonly rounds?: number | undefined; readonly budget?: typeof BudgetChange.Type | undefined } = {}
) =>
  Effect.gen(function* () {
    const client = yield* ResearchSession.client
    yield* client(sessionId).Continue(
      {
        direction,
        continuations,
        request,
        ...(options.rounds === undefined ? {} : { rounds: options.rounds }),
        ...(options.budget === undefined ? {} : { budget: options.budget })
      },
      { discard: true }
    )
  })

/**
 * Sends `Ask` to a finished session, which had `answered` answers when it was sent, and waits for its reply: the
 * answer, kept with the session, or why there is none.
 */
export const ask = (
  sessionId: string,
  question: string,
  answered: number,
  request: string,
  budget?: typeof BudgetChange.Type
) =>
  Effect.flatMap(ResearchSession.client, (client) =>
    client(sessionId).Ask({ question, answered, request, ...(budget === undefined ? {} : { budget }) })
  )
