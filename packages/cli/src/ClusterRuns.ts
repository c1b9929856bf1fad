/**
 * The runs of `deep-research serve --database URL` and `deep-research mcp --database URL`: this process runs no
 * research itself. It joins the cluster as a client, sends each session to the cluster (whichever runner holds its
 * shard runs it, see `Cluster.ts`), and answers clients from the PostgreSQL store: a session's status, its event log
 * (followed by reading on as runners append to it), its report. Answer, review, resume, cancel, a follow-up question
 * and a continuation are messages to the session's entity (the follow-ups: `internal/hosted/clusterFollowUp.ts`; the
 * client's state and reads: `internal/hosted/clusterClient.ts`). An evaluation runs here, with this process's judge
 * model when it has one (none is needed for the rest).
 */
import { Errors, Pipeline, Review, SessionStore } from "@deep-research/core"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type * as StreamEmit from "effect/StreamEmit"
import { randomUUID } from "node:crypto"
import type * as CliConfig from "./CliConfig.js"
import * as Cluster from "./Cluster.js"
import * as ClusterQueue from "./ClusterQueue.js"
import {
  awaitStopped,
  type Client,
  loadOrQueued,
  logOf,
  makeClient,
  notRunning,
  pollEvery,
  progressOf,
  send,
  sendResume,
  stored,
  storedOrWaiting,
  stoppedSince,
  toCluster,
  waiting
} from "./internal/hosted/clusterClient.js"
import * as ClusterEvaluation from "./internal/hosted/clusterEvaluation.js"
import * as ClusterFollowUp from "./internal/hosted/clusterFollowUp.js"
import { conflict, type Listed, type Started, type StartOptions } from "./RunSchema.js"
import * as Runs from "./Runs.js"

const start = (client: Client, question: string, options: StartOptions, clarification: "await" | "proceed") =>
  Effect.gen(function* () {
    const config = yield* Runs.configFor(client.resolved, options)
    const sessionId = yield* Pipeline.newSessionId
    const how = client.resolved.askClarification ? clarification : "proceed"
    yield* send(client, sessionId, question, 0, toCluster(client, Cluster.submit(sessionId, question, config, how)))
    return { sessionId, status: "queued" } satisfies Started
  })

const status = (client: Client, sessionId: string) =>
  Effect.gen(function* () {
    const mine = client.sent.get(sessionId)
    const found = yield* storedOrWaiting(client, sessionId)
    if (found === undefined) return yield* new Errors.ResearchSessionNotFound({ sessionId })
    if (found._tag === "Waiting") {
      // Sent, and no runner has started it yet.
      return Runs.statusOf(sessionId, {
        stored: undefined,
        live: undefined,
        running: true,
        queued: true,
        query: found.waiting.query
      })
    }
    const session = found.session
    return Runs.statusOf(sessionId, {
      stored: session,
      live: yield* progressOf(client, sessionId),
      running: !stoppedSince(session, mine),
      queued: false,
      query: mine?.query
    })
  })

const list = (client: Client) =>
  Effect.gen(function* () {
    const elsewhere = yield* waiting(client)
    const summaries = yield* client.store.list
    const known = new Set(summaries.map((summary) => summary.id))
    const queued = new Map<string, Listed>()
    for (const w of elsewhere) queued.set(w.id, ClusterQueue.listed(w))
    for (const [id, s] of client.sent) {
      if (s.query !== undefined && !queued.has(id)) {
        queued.set(id, { id, status: "queued", query: s.query, createdAt: s.at, costUsd: 0 })
      }
    }
    return [...[...queued.values()].filter((listed) => !known.has(listed.id)), ...summaries]
  })

const answer = (client: Client, sessionId: string, text: string) =>
  Effect.gen(function* () {
    const session = yield* loadOrQueued(client, sessionId, "cannot take an answer")
    yield* notRunning(client, session, "cannot take an answer now")
    yield* Runs.answerable(session)
    yield* sendResume(client, session, text)
    return { sessionId, status: "running" } satisfies Started
  })

/** The decision about a plan that waits for one in the store; the runner that holds the session applies it. */
const review = (client: Client, sessionId: string, decision: Review.Decision) =>
  Effect.gen(function* () {
    const session = yield* loadOrQueued(client, sessionId, "cannot take a review of its plan")
    yield* notRunning(client, session, "cannot take a review of its plan now")
    yield* Runs.reviewable(session)
    yield* Review.validate(session, decision)
    yield* sendResume(client, session, undefined, decision)
    return { sessionId, status: "running" } satisfies Started
  })

const resume = (client: Client, sessionId: string) =>
  Effect.gen(function* () {
    const session = yield* loadOrQueued(client, sessionId, "cannot be resumed")
    yield* notRunning(client, session, "cannot be resumed")
    yield* Runs.resumable(session)
    yield* sendResume(client, session, undefined)
    return { sessionId, status: "running" } satisfies Started
  })

/**
 * Cancelled while queued, as a session of this process would be: its message is forgotten, and the session is stored
 * cancelled with its question and settings, to be resumed later. Unless a runner started it meanwhile: then nothing
 * is done here, and it is to be cancelled on that runner.
 */
const cancelWaiting = (client: Client, sessionId: string, waiting: ClusterQueue.Waiting) =>
  Effect.gen(function* () {
    yield* Effect.provide(Cluster.forget(sessionId), client.context).pipe(Effect.orDie)
    if (Option.isSome(yield* stored(client, sessionId))) return undefined
    client.sent.delete(sessionId)
    const { config, query, sentAt } = waiting
    yield* Pipeline.recordCancelled(query, {
      sessionId,
      config: config as Pipeline.ResearchOptions["config"],
      createdAt: sentAt
    }).pipe(
      Effect.provideService(SessionStore.SessionStore, client.store),
      Effect.catchAll((error) => Effect.logWarning(`session ${sessionId}: ${error.message}`))
    )
    return { sessionId, status: "cancelled" }
  })

const cancel = (client: Client, sessionId: string) =>
  Effect.gen(function* () {
    const found = yield* storedOrWaiting(client, sessionId)
    if (found === undefined) return yield* new Errors.ResearchSessionNotFound({ sessionId })
    if (found._tag === "Waiting") {
      const cancelled = yield* cancelWaiting(client, sessionId, found.waiting)
      if (cancelled !== undefined) return cancelled
    }
    const session = yield* client.store.load(sessionId)
    if (stoppedSince(session, client.sent.get(sessionId))) {
      return yield* conflict(sessionId, session.status, "cannot be cancelled")
    }
    yield* toCluster(client, Cluster.cancel(sessionId, randomUUID()))
    // The runner saves the session as cancelled when its research stops.
    const stopped = yield* Effect.timeout(awaitStopped(client, sessionId), "30 seconds").pipe(Effect.option)
    const now = yield* stored(client, sessionId)
    return {
      sessionId,
      status: Option.isSome(stopped) && Option.isSome(now) ? now.value.status : "cancelling"
    }
  })

const remove = (client: Client, sessionId: string) =>
  Effect.gen(function* () {
    const [elsewhere] = yield* waiting(client, sessionId)
    const found = yield* Effect.either(client.store.load(sessionId))
    // A session no runner has started is only its message: deleting it is forgetting that.
    if (Either.isLeft(found)) {
      if (found.left._tag !== "ResearchSessionNotFound" || elsewhere === undefined) return yield* found.left
    } else {
      yield* notRunning(client, found.right, "cannot be deleted now")
      yield* client.store.delete(sessionId)
    }
    // The cluster's messages of the session hold its question: they go with it. The session is gone either way.
    yield* Effect.provide(Cluster.forget(sessionId), client.context).pipe(
      Effect.catchAll((error) =>
        Effect.logWarning(`cluster: the messages of deleted session ${sessionId} were kept: ${error.message}`)
      )
    )
    client.sent.delete(sessionId)
  })

/** Reads the log on from `after` until the session has stopped and its last event is in (or a few polls after). */
const follow = (client: Client, sessionId: string, after: number, emit: Emit) =>
  Effect.gen(function* () {
    let read = after
    let stoppedPolls = 0
    while (true) {
      const found = yield* storedOrWaiting(client, sessionId)
      if (found === undefined) return
      const session = found._tag === "Stored" ? Option.some(found.session) : Option.none()
      const log = yield* logOf(client, sessionId)
      const fresh = log.slice(read).map((event, i) => ({ id: read + i + 1, event }))
      read = Math.max(read, log.length)
      if (fresh.length > 0) yield* Effect.promise(() => emit.chunk(Chunk.unsafeFromArray(fresh)))
      const mine = client.sent.get(sessionId)
      if (Option.isSome(session) && stoppedSince(session.value, mine)) {
        // A run saves its final status before it publishes its last event: the stream waits for that event
        // (or a few seconds, for a run that stopped without one) so that it ends with it.
        stoppedPolls++
        const ended = log.slice(mine?.logLength ?? 0).some(Cluster.isLastEvent)
        if (mine === undefined || ended || stoppedPolls > Cluster.pollsForLastEvent) return
      }
      yield* Effect.sleep(pollEvery)
    }
  })

type Emit = StreamEmit.Emit<never, never, Runs.NumberedEvent, void>

const events = (client: Client, sessionId: string, after: number): Stream.Stream<Runs.NumberedEvent> =>
  Stream.asyncScoped<Runs.NumberedEvent>((emit) =>
    Effect.forkScoped(
      Effect.ensuring(
        follow(client, sessionId, after, emit),
        Effect.promise(() => emit.end())
      )
    )
  )

/** Joins the cluster of the configuration's database as a client, for the life of the scope. */
export const make = (
  resolved: CliConfig.Resolved
): Effect.Effect<Runs.Runs, Errors.ResearchInvalidInput, Scope.Scope> =>
  Effect.map(makeClient(resolved), (client): Runs.Runs => ({
    start: (question, options, clarification = "await") => start(client, question, options, clarification),
    status: (sessionId) => status(client, sessionId),
    list: list(client),
    load: (sessionId) => client.store.load(sessionId),
    answer: (sessionId, text) => answer(client, sessionId, text),
    review: (sessionId, decision) => review(client, sessionId, decision),
    resume: (sessionId) => resume(client, sessionId),
    ask: (sessionId, question, budget) => ClusterFollowUp.ask(client, sessionId, question, budget),
    extend: (sessionId, direction, rounds) => ClusterFollowUp.extend(client, sessionId, direction, rounds),
    cancel: (sessionId) => cancel(client, sessionId),
    remove: (sessionId) => remove(client, sessionId),
    evaluate: (sessionId) => ClusterEvaluation.evaluate(client, sessionId),
    // This process runs no session itself.
    isRunning: () => false,
    running: Effect.map(client.store.list, (summaries) => summaries.filter((s) => s.status === "running").length),
    awaitRun: (sessionId) => awaitStopped(client, sessionId),
    events: (sessionId, after) => events(client, sessionId, after),
    ...Runs.storeParts(client.context, resolved)
  }))
