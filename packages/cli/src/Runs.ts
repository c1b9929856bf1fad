/**
 * The sessions a long-lived process runs for its clients: the MCP server and `deep-research serve` both host them
 * here. One runtime for the process's life, so every session shares the resilience state (breakers, rate limits),
 * the store and the progress stream; runs go on in the background and are reached by their session id.
 */
import { Errors, Pipeline, ResearchConfig, ResearchEvents, SessionLimit, SessionStore } from "@deep-research/core"
import type { Session } from "@deep-research/core"
import type { Evaluation as EvaluationResult } from "@deep-research/evaluation"
import * as Chunk from "effect/Chunk"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Queue from "effect/Queue"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type * as CliConfig from "./CliConfig.js"
import * as Evaluation from "./Evaluation.js"
import * as Logging from "./internal/logging.js"
import * as Progress from "./Progress.js"
import * as Store from "./Store.js"
import * as Telemetry from "./Telemetry.js"
import * as Wiring from "./Wiring.js"
import { type Listed, RunConflict, type RunStatus, type Started, type StartOptions } from "./RunSchema.js"

/** An event of a session's log with its position there (1 for the first), which SSE sends as the event id. */
export interface NumberedEvent {
  readonly id: number
  readonly event: ResearchEvents.ResearchEvent
}

// =============================================================================
// Service
// =============================================================================

type StoreError = Errors.SessionNotFound | Errors.SessionCorrupt | Errors.InvalidInput

/** The runs of a process. Every effect here needs nothing in context: it runs on the process's shared runtime. */
export interface Runs {
  /**
   * Starts a run in the background. A clarifying question makes the session wait for `answer` when the configuration
   * allows asking, unless `clarification` is `proceed`: then research goes on with the model's understanding.
   */
  readonly start: (
    question: string,
    options: StartOptions,
    clarification?: "await" | "proceed"
  ) => Effect.Effect<Started, Errors.InvalidInput>
  readonly status: (sessionId: string) => Effect.Effect<RunStatus, Errors.SessionNotFound>
  readonly list: Effect.Effect<ReadonlyArray<Listed>>
  readonly load: (sessionId: string) => Effect.Effect<Session.Session, StoreError>
  readonly answer: (sessionId: string, answer: string) => Effect.Effect<Started, StoreError | RunConflict>
  readonly resume: (sessionId: string) => Effect.Effect<Started, StoreError | RunConflict>
  readonly cancel: (
    sessionId: string
  ) => Effect.Effect<{ readonly sessionId: string; readonly status: string }, StoreError | RunConflict>
  readonly remove: (sessionId: string) => Effect.Effect<void, StoreError | Errors.SessionBusy | RunConflict>
  readonly evaluate: (
    sessionId: string
  ) => Effect.Effect<{ readonly evaluation: EvaluationResult.Evaluation; readonly file: string }, Errors.ResearchError>
  /** Whether this process runs the session now (queued included). */
  readonly isRunning: (sessionId: string) => boolean
  /** How many sessions run now: this process's (queued included), or on a cluster, the cluster's. */
  readonly running: Effect.Effect<number>
  /** Waits until the session's run in this process ends (at once when none runs). */
  readonly awaitRun: (sessionId: string) => Effect.Effect<void>
  /**
   * The session's event log after position `after`, then its events as they come while this process runs it; ends
   * when the run ends. A queued run's log starts once it does.
   */
  readonly events: (sessionId: string, after: number) => Stream.Stream<NumberedEvent>
}

interface Run {
  readonly fiber: Fiber.RuntimeFiber<Session.Session, unknown>
  /** The question of a run this process started (a queued run has no stored session yet). */
  readonly question: { readonly query: string; readonly at: number } | undefined
}

/** The research configuration of a run: the resolved one with what the client chose. */
export const configFor = (resolved: CliConfig.Resolved, options: StartOptions) =>
  Schema.decodeUnknownEither(ResearchConfig.ResearchConfig)({
    ...Schema.encodeSync(ResearchConfig.ResearchConfig)(resolved.research),
    ...(options.maxRounds !== undefined ? { maxSupervisionRounds: options.maxRounds } : {}),
    ...(options.concurrency !== undefined ? { maxConcurrentResearchUnits: options.concurrency } : {}),
    ...(options.maxToolCalls !== undefined ? { researcherMaxToolCalls: options.maxToolCalls } : {}),
    ...(options.allowClarification !== undefined ? { allowClarification: options.allowClarification } : {}),
    ...(options.requireSources !== undefined ? { requireSources: options.requireSources } : {}),
    budget: {
      ...Schema.encodeSync(ResearchConfig.Budget)(resolved.research.budget),
      ...(options.budgetTokens !== undefined ? { maxTokens: options.budgetTokens } : {}),
      ...(options.budgetUsd !== undefined ? { maxUsd: options.budgetUsd } : {})
    }
  }).pipe(
    Either.mapLeft((error) => new Errors.InvalidInput({ reason: ParseResult.TreeFormatter.formatErrorSync(error) }))
  )

// =============================================================================
// The host: one runtime and the runs on it
// =============================================================================

/** What the runs of a process share. */
interface Host {
  readonly resolved: CliConfig.Resolved
  readonly runtime: ManagedRuntime.ManagedRuntime<Wiring.Services, Errors.InvalidInput>
  readonly onRuntime: <A, E>(effect: Effect.Effect<A, E, Wiring.Services>) => Effect.Effect<A, E>
  /** The runs of this process still going, queued ones included. */
  readonly runs: Map<string, Run>
  /** A progress view per session, from the shared event stream. */
  readonly progress: Map<string, Progress.State>
}

const makeHost = (resolved: CliConfig.Resolved) =>
  Effect.gen(function* () {
    // With --max-sessions, runs beyond the limit wait for a slot (their status says queued until theirs starts).
    const limit =
      resolved.maxSessions === undefined ? Layer.empty : Layer.orDie(SessionLimit.layer(resolved.maxSessions))
    // The sessions of the host are traced through the exporters of the program.
    const telemetry = yield* Telemetry.inherited
    const runtime = ManagedRuntime.make(Layer.mergeAll(Wiring.layer(resolved), Logging.stderrLogger, limit, telemetry))
    yield* Effect.addFinalizer(() => runtime.disposeEffect)
    const services = yield* runtime.runtimeEffect
    const host: Host = {
      resolved,
      runtime,
      onRuntime: (effect) => Effect.provide(effect, services),
      runs: new Map(),
      progress: new Map()
    }
    const watcher = runtime.runFork(watchProgress(host))
    yield* Effect.addFinalizer(() =>
      Effect.zipRight(
        Fiber.interrupt(watcher),
        Effect.forEach([...host.runs.values()], (run) => Fiber.interrupt(run.fiber), { discard: true })
      )
    )
    return host
  })

/** Keeps each session's progress view from the shared event stream, for as long as the process hosts runs. */
const watchProgress = (host: Host) =>
  Effect.scoped(
    Effect.gen(function* () {
      const events = yield* ResearchEvents.ResearchEvents
      const queue = yield* events.subscribe
      return yield* Queue.take(queue).pipe(
        Effect.tap((event) =>
          Effect.sync(() => {
            if (event.sessionId === undefined) return
            const before = host.progress.get(event.sessionId) ?? Progress.initial
            host.progress.set(event.sessionId, Progress.reduce(before, event))
          })
        ),
        Effect.forever
      )
    })
  )

const storeOf = (host: Host) => host.onRuntime(SessionStore.SessionStore)

const loadFrom = (host: Host, sessionId: string) => Effect.flatMap(storeOf(host), (store) => store.load(sessionId))

const wouldWait = (host: Host) =>
  host.onRuntime(
    Effect.flatMap(Effect.serviceOption(SessionLimit.SessionLimit), (limit) =>
      Option.isNone(limit) ? Effect.succeed(false) : limit.value.wouldWait
    )
  )

/** Runs a session in the background; it is forgotten here when it ends. */
const background = (
  host: Host,
  sessionId: string,
  effect: Effect.Effect<Session.Session, unknown, Wiring.Services>,
  question?: string
): Effect.Effect<Started> =>
  Effect.gen(function* () {
    const queued = yield* wouldWait(host)
    const at = yield* Clock.currentTimeMillis
    const fiber = host.runtime.runFork(effect)
    host.runs.set(sessionId, { fiber, question: question === undefined ? undefined : { query: question, at } })
    fiber.addObserver(() => {
      if (host.runs.get(sessionId)?.fiber === fiber) host.runs.delete(sessionId)
    })
    return { sessionId, status: queued ? "queued" : "running" }
  })

const notRunning = (host: Host, sessionId: string) =>
  host.runs.has(sessionId)
    ? Effect.fail(new RunConflict({ message: `The session ${sessionId} is still running.` }))
    : Effect.void

// =============================================================================
// What clients ask
// =============================================================================

const start = (host: Host, question: string, options: StartOptions, clarification: "await" | "proceed") =>
  Effect.gen(function* () {
    const config = yield* configFor(host.resolved, options)
    const sessionId = yield* Pipeline.newSessionId
    return yield* background(
      host,
      sessionId,
      Pipeline.research(question, {
        config,
        sessionId,
        clarification: host.resolved.askClarification ? clarification : "proceed"
      }),
      question
    )
  })

const status = (host: Host, sessionId: string) =>
  Effect.gen(function* () {
    const stored = Option.getOrUndefined(yield* Effect.option(loadFrom(host, sessionId)))
    const live = host.progress.get(sessionId)
    const running = host.runs.has(sessionId)
    if (stored === undefined && live === undefined && !running) return yield* new Errors.SessionNotFound({ sessionId })
    return statusOf(sessionId, {
      stored,
      live,
      running,
      // A run waiting for its slot has neither a stored session nor progress yet.
      queued: running && host.resolved.maxSessions !== undefined && live === undefined && stored === undefined,
      query: host.runs.get(sessionId)?.question?.query
    })
  })

/** The phase the progress view gives a session that ended as the store has it (`Progress.reduce`'s names). */
const settledPhases: Partial<Record<Session.Session["status"], string>> = {
  completed: "completed",
  failed: "failed",
  cancelled: "cancelled",
  awaiting_clarification: "waiting for an answer"
}

/**
 * A session's status from what is known of it: the stored session, the progress of its events, whether a run of it
 * is going (and still waiting to start), and the question it was started with when nothing is stored yet.
 */
export const statusOf = (
  sessionId: string,
  known: {
    readonly stored: Session.Session | undefined
    readonly live: Progress.State | undefined
    readonly running: boolean
    readonly queued: boolean
    readonly query: string | undefined
  }
): RunStatus => {
  const { live, running, stored } = known
  // A session no run holds is where its store says, whatever this process saw of it (nothing, after a restart; its
  // events a moment behind the store, as a run ends).
  const settled = running || stored === undefined ? undefined : settledPhases[stored.status]
  return {
    sessionId,
    query: stored?.query ?? known.query ?? "",
    // While a run goes on the stored status may still be the previous one (an answered question).
    status: known.queued ? "queued" : running ? "running" : (stored?.status ?? "running"),
    running,
    phase: settled ?? live?.phase ?? "starting",
    round: live?.round ?? stored?.rounds.length ?? 0,
    researchers: live === undefined ? [] : [...live.researchers.entries()].map(([id, r]) => ({ id, ...r })),
    sources: stored?.sources.length ?? live?.sources ?? 0,
    tokens: live?.tokens ?? stored?.usage.reduce((n, r) => n + r.inputTokens + r.outputTokens, 0) ?? 0,
    costUsd: live?.costUsd ?? stored?.usage.reduce((n, r) => n + r.costUsd, 0) ?? 0,
    ...(!running && stored?.status === "awaiting_clarification" && stored.clarification !== undefined
      ? { clarificationQuestion: stored.clarification.decision.question }
      : {}),
    ...(stored?.error === undefined ? {} : { error: stored.error.message }),
    reportReady: stored?.report !== undefined,
    ...(stored?.report?.grounding === undefined ? {} : { grounding: stored.report.grounding })
  }
}

const list = (host: Host) =>
  Effect.gen(function* () {
    const summaries = yield* Effect.flatMap(storeOf(host), (store) => store.list)
    // Runs still waiting for a slot have no stored session yet; they are listed as queued.
    const stored = new Set(summaries.map((summary) => summary.id))
    const queued = [...host.runs.entries()].flatMap(([id, run]): Array<Listed> =>
      run.question === undefined || stored.has(id)
        ? []
        : [{ id, status: "queued", query: run.question.query, createdAt: run.question.at, costUsd: 0 }]
    )
    return [...queued, ...summaries]
  })

/** Whether a stopped session can take an answer: only one waiting for it. */
export const answerable = (session: Session.Session): Effect.Effect<void, RunConflict> =>
  session.status === "awaiting_clarification"
    ? Effect.void
    : Effect.fail(
        new RunConflict({
          message: `The session ${session.id} is not waiting for an answer (status ${session.status}).`
        })
      )

/** Whether a stopped session can be resumed: not a completed one, nor one waiting for an answer. */
export const resumable = (session: Session.Session): Effect.Effect<void, RunConflict> =>
  session.status === "completed"
    ? Effect.fail(new RunConflict({ message: `The session ${session.id} is completed already.` }))
    : session.status === "awaiting_clarification"
      ? Effect.fail(
          new RunConflict({
            message: `The session ${session.id} waits for an answer to its question; answer it instead.`
          })
        )
      : Effect.void

const answer = (host: Host, sessionId: string, text: string) =>
  Effect.gen(function* () {
    yield* notRunning(host, sessionId)
    yield* answerable(yield* loadFrom(host, sessionId))
    return yield* background(host, sessionId, Pipeline.resume(sessionId, { answer: text }))
  })

const resume = (host: Host, sessionId: string) =>
  Effect.gen(function* () {
    yield* notRunning(host, sessionId)
    yield* resumable(yield* loadFrom(host, sessionId))
    return yield* background(host, sessionId, Pipeline.resume(sessionId))
  })

const cancel = (host: Host, sessionId: string) =>
  Effect.gen(function* () {
    const run = host.runs.get(sessionId)
    if (run === undefined) return yield* new RunConflict({ message: `The session ${sessionId} is not running.` })
    // The run saves itself as cancelled when interrupted; its work so far stays in the store, resumable.
    yield* Fiber.interrupt(run.fiber)
    const session = yield* Effect.option(loadFrom(host, sessionId))
    // A run cancelled while queued stores its session cancelled; should the store have failed, it is cancelled still.
    return { sessionId, status: Option.isSome(session) ? session.value.status : "cancelled" }
  })

const remove = (host: Host, sessionId: string) =>
  notRunning(host, sessionId).pipe(
    Effect.zipRight(Effect.flatMap(storeOf(host), (store) => store.delete(sessionId))),
    Effect.tap(() => Effect.sync(() => host.progress.delete(sessionId)))
  )

const awaitRun = (host: Host, sessionId: string): Effect.Effect<void> => {
  const run = host.runs.get(sessionId)
  return run === undefined ? Effect.void : Effect.asVoid(Fiber.await(run.fiber))
}

/**
 * The log after `after`, then on: subscribed before the log is read, so nothing published in between is missed. The
 * store appends each event before it is published, so the log is the order of record and a published event of the
 * session only says "read on"; every event keeps its position in the log as its id, however it was reached.
 */
const events = (host: Host, sessionId: string, after: number): Stream.Stream<NumberedEvent> =>
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

/**
 * Builds the runtime (a configuration the providers refuse fails here, not on every call) and hosts runs on it until
 * the scope closes, when every run still going is interrupted (each saves itself as cancelled, resumable).
 */
export const make = (resolved: CliConfig.Resolved): Effect.Effect<Runs, Errors.InvalidInput, Scope.Scope> =>
  Effect.map(makeHost(resolved), (host): Runs => ({
    start: (question, options, clarification = "await") => start(host, question, options, clarification),
    status: (sessionId) => status(host, sessionId),
    list: list(host),
    load: (sessionId) => loadFrom(host, sessionId),
    answer: (sessionId, text) => answer(host, sessionId, text),
    resume: (sessionId) => resume(host, sessionId),
    cancel: (sessionId) => cancel(host, sessionId),
    remove: (sessionId) => remove(host, sessionId),
    evaluate: (sessionId) =>
      host.onRuntime(
        Evaluation.evaluateStored(
          sessionId,
          Store.artefactPlace(Store.sessionsDirectory(resolved), resolved.credentials)
        )
      ),
    isRunning: (sessionId) => host.runs.has(sessionId),
    running: Effect.sync(() => host.runs.size),
    awaitRun: (sessionId) => awaitRun(host, sessionId),
    events: (sessionId, after) => events(host, sessionId, after)
  }))

/**
 * The runs of a serving process (`serve`, `mcp`): hosted here, or, with a database, sent to the cluster's runners
 * (`ClusterRuns`), which this process joins as a client.
 */
export const forServing = (resolved: CliConfig.Resolved): Effect.Effect<Runs, Errors.InvalidInput, Scope.Scope> =>
  resolved.credentials.databaseUrl === undefined
    ? make(resolved)
    : Effect.flatMap(
        Effect.promise(() => import("./ClusterRuns.js")),
        (ClusterRuns) => ClusterRuns.make(resolved)
      )
