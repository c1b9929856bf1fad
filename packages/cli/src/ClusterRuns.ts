/**
 * The runs of `deep-research serve --database URL` and `deep-research mcp --database URL`: this process runs no
 * research itself. It joins the cluster as a client, sends each session to the cluster (whichever runner holds its
 * shard runs it, see `Cluster.ts`), and answers clients from the PostgreSQL store: a session's status, its event log
 * (followed by reading on as runners append to it), its report. Answer, resume and cancel are messages to the
 * session's entity. An evaluation runs here, with this process's judge model when it has one (none is needed for the
 * rest).
 */
import { Errors, Pipeline, type ResearchEvents, type Session, SessionStore } from "@deep-research/core"
import * as Variables from "@deep-research/providers/Environment"
import * as Chunk from "effect/Chunk"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { randomUUID } from "node:crypto"
import type * as CliConfig from "./CliConfig.js"
import * as Cluster from "./Cluster.js"
import * as ClusterQueue from "./ClusterQueue.js"
import * as StoredEvaluation from "./StoredEvaluation.js"
import * as Progress from "./Progress.js"
import { conflict, JudgeUnavailable, type Listed, type Started } from "./RunSchema.js"
import * as Runs from "./Runs.js"
import * as Store from "./Store.js"
import * as Wiring from "./Wiring.js"

/** How often the store is read while a client follows a session. */
const pollEvery = "300 millis"

/** A session this process sent a message to, and the stored session's update time when it did. */
interface Sent {
  readonly query: string | undefined
  readonly at: number
  /** The stored session's `updatedAt` when the message was sent (0 for a new session). */
  readonly since: number
  /** The length of the session's event log when the message was sent: the run's events come after it. */
  readonly logLength: number
}

/**
 * Whether the session has stopped since the last message this process sent it: completed, waiting for an answer,
 * failed, or cancelled (by a client; a runner's shutdown leaves a session cancelled too, until the next runner
 * resumes it a few seconds later).
 */
const stoppedSince = (session: Session.Session, sent: Sent | undefined) =>
  (Cluster.isSettled(session) || session.status === "cancelled") && session.updatedAt > (sent?.since ?? -1)

/** Joins the cluster of the configuration's database as a client, for the life of the scope. */
export const make = (resolved: CliConfig.Resolved): Effect.Effect<Runs.Runs, Errors.InvalidInput, Scope.Scope> =>
  Effect.gen(function* () {
    const url = resolved.credentials.databaseUrl
    if (url === undefined) return yield* new Errors.InvalidInput({ reason: "no database was given" })
    yield* Effect.mapError(
      Store.checkDatabase(resolved.credentials),
      (error) => new Errors.InvalidInput({ reason: error.message })
    )
    // The workers bring the models and the search; a model here is only the judge of `evaluate`, when one is named.
    const judges = resolved.simulate || resolved.models.default !== ""
    const context = yield* Layer.build(
      Layer.merge(Wiring.storeOnlyLayer(resolved), Cluster.clientLayer(url, Cluster.advisoryLocksFromEnv(process.env)))
    ).pipe(Effect.mapError((error) => new Errors.InvalidInput({ reason: `cannot join the cluster: ${error.message}` })))
    const judge = judges ? Option.some(yield* Layer.build(Wiring.judgeLayer(resolved))) : Option.none()
    const store = Context.get(context, SessionStore.SessionStore)
    const sent = new Map<string, Sent>()
    const marks = Store.simulatedMarks(store)

    const stored = (sessionId: string) => Effect.option(store.load(sessionId))

    /**
     * The stored session, or else its message waiting for a runner (by any process), or else nothing. The store is
     * read again when the message is gone, for a run that started and ended between the two reads.
     */
    const storedOrWaiting = (sessionId: string) =>
      Effect.gen(function* () {
        const first = yield* stored(sessionId)
        if (Option.isSome(first)) return { _tag: "Stored", session: first.value } as const
        const [queued] = yield* waiting(sessionId)
        if (queued !== undefined) return { _tag: "Waiting", waiting: queued } as const
        const again = yield* stored(sessionId)
        if (Option.isSome(again)) return { _tag: "Stored", session: again.value } as const
        // Deleted, by this process or another: nothing of it is left to follow.
        sent.delete(sessionId)
        return undefined
      })

    /**
     * Sessions sent to the cluster that no runner has started, by any process (another `serve` behind the same load
     * balancer, `deep-research --detach`): a runner that starts one saves it in the store first, so a caller reads
     * these before the store (or the store again after).
     */
    const waiting = (sessionId?: string) => Effect.provide(ClusterQueue.waiting(sessionId), context)

    const send = (sessionId: string, query: string | undefined, since: number, message: Effect.Effect<void>) =>
      Effect.gen(function* () {
        const logLength =
          since === 0
            ? 0
            : (yield* Effect.orElseSucceed(store.events(sessionId), (): ReadonlyArray<unknown> => [])).length
        yield* message
        sent.set(sessionId, { query, at: yield* Clock.currentTimeMillis, since, logLength })
      })

    const toCluster = <A, E>(effect: Effect.Effect<A, E, Cluster.ClientServices>) =>
      Effect.orDie(Effect.provide(effect, context))

    const progressOf = (sessionId: string) =>
      Effect.map(
        Effect.orElseSucceed(store.events(sessionId), (): ReadonlyArray<ResearchEvents.ResearchEvent> => []),
        (events) => events.reduce(Progress.reduce, Progress.initial)
      )

    const status = (sessionId: string) =>
      Effect.gen(function* () {
        const mine = sent.get(sessionId)
        const found = yield* storedOrWaiting(sessionId)
        if (found === undefined) return yield* new Errors.SessionNotFound({ sessionId })
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
          live: yield* progressOf(sessionId),
          running: !stoppedSince(session, mine),
          queued: false,
          query: mine?.query
        })
      })

    const awaitStopped = (sessionId: string): Effect.Effect<void> =>
      Effect.gen(function* () {
        while (true) {
          const session = yield* stored(sessionId)
          if (Option.isSome(session) && stoppedSince(session.value, sent.get(sessionId))) return
          yield* Effect.sleep(pollEvery)
        }
      })

    const notRunning = (session: Session.Session, cannot: string) =>
      stoppedSince(session, sent.get(session.id)) ? Effect.void : Effect.fail(conflict(session.id, "running", cannot))

    /**
     * The stored session something is asked of; a session no runner has started yet is only its message, which can
     * take neither an answer nor a resume: said as its state, not as a session that does not exist.
     */
    const loadOrQueued = (sessionId: string, cannot: string) =>
      store
        .load(sessionId)
        .pipe(
          Effect.catchTag("SessionNotFound", (notFound) =>
            Effect.flatMap(waiting(sessionId), ([queued]) =>
              Effect.fail(queued === undefined ? notFound : conflict(sessionId, "queued", cannot))
            )
          )
        )

    const answer = (sessionId: string, text: string) =>
      Effect.gen(function* () {
        const session = yield* loadOrQueued(sessionId, "cannot take an answer")
        yield* notRunning(session, "cannot take an answer now")
        yield* Runs.answerable(session)
        yield* send(
          sessionId,
          session.query,
          session.updatedAt,
          toCluster(Cluster.resume(sessionId, text, randomUUID()))
        )
        return { sessionId, status: "running" } satisfies Started
      })

    const resume = (sessionId: string) =>
      Effect.gen(function* () {
        const session = yield* loadOrQueued(sessionId, "cannot be resumed")
        yield* notRunning(session, "cannot be resumed")
        yield* Runs.resumable(session)
        yield* send(
          sessionId,
          session.query,
          session.updatedAt,
          toCluster(Cluster.resume(sessionId, undefined, randomUUID()))
        )
        return { sessionId, status: "running" } satisfies Started
      })

    const cancel = (sessionId: string) =>
      Effect.gen(function* () {
        const found = yield* storedOrWaiting(sessionId)
        if (found === undefined) return yield* new Errors.SessionNotFound({ sessionId })
        if (found._tag === "Waiting") {
          // Cancelled while queued, as a session of this process would be: its message is forgotten, and the session
          // is stored cancelled with its question and settings, to be resumed later. Unless a runner started it
          // meanwhile: then it is cancelled on that runner.
          yield* Effect.provide(Cluster.forget(sessionId), context).pipe(Effect.orDie)
          if (Option.isNone(yield* stored(sessionId))) {
            sent.delete(sessionId)
            const { config, query, sentAt } = found.waiting
            yield* Pipeline.recordCancelled(query, {
              sessionId,
              config: config as Pipeline.ResearchOptions["config"],
              createdAt: sentAt
            }).pipe(
              Effect.provideService(SessionStore.SessionStore, store),
              Effect.catchAll((error) => Effect.logWarning(`session ${sessionId}: ${error.message}`))
            )
            return { sessionId, status: "cancelled" }
          }
        }
        const session = yield* store.load(sessionId)
        if (stoppedSince(session, sent.get(sessionId))) {
          return yield* conflict(sessionId, session.status, "cannot be cancelled")
        }
        yield* toCluster(Cluster.cancel(sessionId, randomUUID()))
        // The runner saves the session as cancelled when its research stops.
        const stopped = yield* Effect.timeout(awaitStopped(sessionId), "30 seconds").pipe(Effect.option)
        const now = yield* stored(sessionId)
        return {
          sessionId,
          status: Option.isSome(stopped) && Option.isSome(now) ? now.value.status : "cancelling"
        }
      })

    const events = (sessionId: string, after: number): Stream.Stream<Runs.NumberedEvent> =>
      Stream.asyncScoped<Runs.NumberedEvent>((emit) =>
        Effect.forkScoped(
          Effect.ensuring(
            Effect.gen(function* () {
              let read = after
              let stoppedPolls = 0
              while (true) {
                const found = yield* storedOrWaiting(sessionId)
                if (found === undefined) return
                const session = found._tag === "Stored" ? Option.some(found.session) : Option.none()
                const log = yield* Effect.orElseSucceed(
                  store.events(sessionId),
                  (): ReadonlyArray<ResearchEvents.ResearchEvent> => []
                )
                const fresh = log.slice(read).map((event, i) => ({ id: read + i + 1, event }))
                read = Math.max(read, log.length)
                if (fresh.length > 0) yield* Effect.promise(() => emit.chunk(Chunk.unsafeFromArray(fresh)))
                const mine = sent.get(sessionId)
                if (Option.isSome(session) && stoppedSince(session.value, mine)) {
                  // A run saves its final status before it publishes its last event: the stream waits for that event
                  // (or a few seconds, for a run that stopped without one) so that it ends with it.
                  stoppedPolls++
                  const ended = log.slice(mine?.logLength ?? 0).some(Cluster.isLastEvent)
                  if (mine === undefined || ended || stoppedPolls > Cluster.pollsForLastEvent) return
                }
                yield* Effect.sleep(pollEvery)
              }
            }),
            Effect.promise(() => emit.end())
          )
        )
      )

    const evaluate = (sessionId: string) =>
      Effect.gen(function* () {
        const evaluation = StoredEvaluation.evaluateStored(
          sessionId,
          Store.artefactPlace(Store.sessionsDirectory(resolved), resolved.credentials)
        ).pipe(Effect.provide(context))
        // As `deep-research evaluate` does: a session a simulated run made is judged by the emulator, whatever this
        // server was given; any other by this server's model.
        if (!resolved.simulate && (yield* Store.wasSimulated(store, sessionId))) {
          return yield* Effect.provide(evaluation, Wiring.simulatedJudgeLayer(resolved))
        }
        if (Option.isSome(judge)) return yield* Effect.provide(evaluation, judge.value)
        return yield* new JudgeUnavailable({
          message:
            "This server has no model to judge a report with (its sessions run on the cluster's workers): start it " +
            `with a model (${Variables.openaiApiKey} or ${Variables.anthropicApiKey}, or --model) to evaluate here, ` +
            `or run deep-research evaluate ${sessionId} --database URL where a model is configured.`
        })
      })

    return {
      start: (question, options, clarification = "await") =>
        Effect.gen(function* () {
          const config = yield* Runs.configFor(resolved, options)
          const sessionId = yield* Pipeline.newSessionId
          const how = resolved.askClarification ? clarification : "proceed"
          yield* send(sessionId, question, 0, toCluster(Cluster.submit(sessionId, question, config, how)))
          return { sessionId, status: "queued" } satisfies Started
        }),
      status,
      list: Effect.gen(function* () {
        const elsewhere = yield* waiting()
        const summaries = yield* store.list
        const known = new Set(summaries.map((summary) => summary.id))
        const queued = new Map<string, Listed>()
        for (const w of elsewhere) queued.set(w.id, ClusterQueue.listed(w))
        for (const [id, s] of sent) {
          if (s.query !== undefined && !queued.has(id)) {
            queued.set(id, { id, status: "queued", query: s.query, createdAt: s.at, costUsd: 0 })
          }
        }
        return [...[...queued.values()].filter((listed) => !known.has(listed.id)), ...(yield* marks(summaries))]
      }),
      load: (sessionId) => store.load(sessionId),
      answer,
      resume,
      cancel,
      remove: (sessionId) =>
        Effect.gen(function* () {
          const [elsewhere] = yield* waiting(sessionId)
          const found = yield* Effect.either(store.load(sessionId))
          // A session no runner has started is only its message: deleting it is forgetting that.
          if (Either.isLeft(found)) {
            if (found.left._tag !== "SessionNotFound" || elsewhere === undefined) return yield* found.left
          } else {
            yield* notRunning(found.right, "cannot be deleted now")
            yield* store.delete(sessionId)
          }
          // The cluster's messages of the session hold its question: they go with it. The session is gone either way.
          yield* Effect.provide(Cluster.forget(sessionId), context).pipe(
            Effect.catchAll((error) =>
              Effect.logWarning(`cluster: the messages of deleted session ${sessionId} were kept: ${error.message}`)
            )
          )
          sent.delete(sessionId)
        }),
      evaluate,
      // This process runs no session itself.
      isRunning: () => false,
      running: Effect.map(store.list, (summaries) => summaries.filter((s) => s.status === "running").length),
      awaitRun: awaitStopped,
      events
    } satisfies Runs.Runs
  })
