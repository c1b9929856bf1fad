/**
 * A cluster client's state and the reads and sends every request of `ClusterRuns` is made of: the store and the
 * cluster's client services it joined with, the sessions this process sent a message to (and when), whether a session
 * has stopped since, and what waits for a runner.
 */
import {
  Errors,
  type ModelRouter,
  type ResearchEvents,
  type Review,
  type Session,
  SessionStore
} from "@deep-research/core"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import { randomUUID } from "node:crypto"
import type * as CliConfig from "../../CliConfig.js"
import * as Cluster from "../../Cluster.js"
import * as ClusterQueue from "../../ClusterQueue.js"
import * as Progress from "../../Progress.js"
import { conflict } from "../../RunSchema.js"
import * as Store from "../../Store.js"
import * as Wiring from "../../Wiring.js"

/** How often the store is read while a client follows a session. */
export const pollEvery = "300 millis"

/** A session this process sent a message to, and the stored session's update time when it did. */
export interface Sent {
  readonly query: string | undefined
  readonly at: number
  /** The stored session's `updatedAt` when the message was sent (0 for a new session). */
  readonly since: number
  /** The length of the session's event log when the message was sent: the run's events come after it. */
  readonly logLength: number
}

/**
 * Whether the session has stopped since the last message this process sent it: completed, waiting for an answer or
 * a review, failed, or cancelled (by a client; a runner's shutdown leaves a session cancelled too, until the next
 * runner resumes it a few seconds later).
 */
export const stoppedSince = (session: Session.Session, sent: Sent | undefined) =>
  (Cluster.isSettled(session) || session.status === "cancelled") && session.updatedAt > (sent?.since ?? -1)

// =============================================================================
// The client: the cluster, the store and what this process sent
// =============================================================================

/** What the runs of a cluster client share. */
export interface Client {
  readonly resolved: CliConfig.Resolved
  /** The store and the cluster's client services. */
  readonly context: Effect.Effect.Success<ReturnType<typeof joinCluster>>
  /** This process's judge model, when it has one. */
  readonly judge: Option.Option<Context.Context<ModelRouter.ModelRouter>>
  readonly store: SessionStore.Service
  /** The sessions this process sent a message to. */
  readonly sent: Map<string, Sent>
}

export const joinCluster = (resolved: CliConfig.Resolved, url: Redacted.Redacted<string>) =>
  Layer.build(
    Layer.merge(Wiring.storeOnlyLayer(resolved), Cluster.clientLayer(url, Cluster.advisoryLocksFromEnv(process.env)))
  ).pipe(
    Effect.mapError((error) => new Errors.ResearchInvalidInput({ reason: `cannot join the cluster: ${error.message}` }))
  )

export const makeClient = (resolved: CliConfig.Resolved) =>
  Effect.gen(function* () {
    const url = resolved.credentials.databaseUrl
    if (url === undefined) return yield* new Errors.ResearchInvalidInput({ reason: "no database was given" })
    yield* Effect.mapError(
      Store.checkDatabase(resolved.credentials),
      (error) => new Errors.ResearchInvalidInput({ reason: error.message })
    )
    // The workers bring the models and the search; a model here is only the judge of `evaluate`, when one is named.
    const judges = resolved.simulate || resolved.models.default !== ""
    const context = yield* joinCluster(resolved, url)
    const judge = judges ? Option.some(yield* Layer.build(Wiring.judgeLayer(resolved))) : Option.none()
    const store = Context.get(context, SessionStore.SessionStore)
    const client: Client = { resolved, context, judge, store, sent: new Map() }
    return client
  })

export const stored = (client: Client, sessionId: string) => Effect.option(client.store.load(sessionId))

/**
 * Sessions sent to the cluster that no runner has started, by any process (another `serve` behind the same load
 * balancer, `deep-research --detach`): a runner that starts one saves it in the store first, so a caller reads
 * these before the store (or the store again after).
 */
export const waiting = (client: Client, sessionId?: string) =>
  Effect.provide(ClusterQueue.waiting(sessionId), client.context)

/**
 * The stored session, or else its message waiting for a runner (by any process), or else nothing. The store is
 * read again when the message is gone, for a run that started and ended between the two reads.
 */
export const storedOrWaiting = (client: Client, sessionId: string) =>
  Effect.gen(function* () {
    const first = yield* stored(client, sessionId)
    if (Option.isSome(first)) return { _tag: "Stored", session: first.value } as const
    const [queued] = yield* waiting(client, sessionId)
    if (queued !== undefined) return { _tag: "Waiting", waiting: queued } as const
    const again = yield* stored(client, sessionId)
    if (Option.isSome(again)) return { _tag: "Stored", session: again.value } as const
    // Deleted, by this process or another: nothing of it is left to follow.
    client.sent.delete(sessionId)
    return undefined
  })

export const send = (
  client: Client,
  sessionId: string,
  query: string | undefined,
  since: number,
  message: Effect.Effect<void>
) =>
  Effect.gen(function* () {
    const logLength = since === 0 ? 0 : (yield* logOf(client, sessionId)).length
    yield* message
    client.sent.set(sessionId, { query, at: yield* Clock.currentTimeMillis, since, logLength })
  })

/** Sends the session's entity a resume, with the client's answer or decision about its plan when there is one. */
export const sendResume = (
  client: Client,
  session: Session.Session,
  text: string | undefined,
  decision?: Review.Decision
) =>
  send(
    client,
    session.id,
    session.query,
    session.updatedAt,
    toCluster(client, Cluster.resume(session.id, text, randomUUID(), { decision }))
  )

export const toCluster = <A, E>(client: Client, effect: Effect.Effect<A, E, Cluster.ClientServices>) =>
  Effect.orDie(Effect.provide(effect, client.context))

/** The session's event log; none when it cannot be read. */
export const logOf = (client: Client, sessionId: string) =>
  Effect.orElseSucceed(client.store.events(sessionId), (): ReadonlyArray<ResearchEvents.ResearchEvent> => [])

export const progressOf = (client: Client, sessionId: string) =>
  Effect.map(logOf(client, sessionId), (events) => events.reduce(Progress.reduce, Progress.initial))

export const awaitStopped = (client: Client, sessionId: string): Effect.Effect<void> =>
  Effect.gen(function* () {
    while (true) {
      const session = yield* stored(client, sessionId)
      if (Option.isSome(session) && stoppedSince(session.value, client.sent.get(sessionId))) return
      yield* Effect.sleep(pollEvery)
    }
  })

export const notRunning = (client: Client, session: Session.Session, cannot: string) =>
  stoppedSince(session, client.sent.get(session.id))
    ? Effect.void
    : Effect.fail(conflict(session.id, "running", cannot))

/**
 * The stored session something is asked of; a session no runner has started yet is only its message, which can
 * take neither an answer nor a resume: said as its state, not as a session that does not exist.
 */
export const loadOrQueued = (client: Client, sessionId: string, cannot: string) =>
  client.store
    .load(sessionId)
    .pipe(
      Effect.catchTag("ResearchSessionNotFound", (notFound) =>
        Effect.flatMap(waiting(client, sessionId), ([queued]) =>
          Effect.fail(queued === undefined ? notFound : conflict(sessionId, "queued", cannot))
        )
      )
    )
