/**
 * The sessions a long-lived process runs for its clients: the MCP server and `deep-research serve` both host them
 * here. One runtime for the process's life, so every session shares the resilience state (breakers, rate limits),
 * the store and the progress stream; runs go on in the background and are reached by their session id.
 */
import { Errors, Pipeline, ResearchConfig, ResearchEvents, SessionLimit, SessionStore } from "@deep-research/core"
import type { Session } from "@deep-research/core"
import * as Secrets from "@deep-research/providers/Secrets"
import type { Evaluation } from "@deep-research/evaluation"
import * as Cause from "effect/Cause"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Queue from "effect/Queue"
import type * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type * as CliConfig from "./CliConfig.js"
import * as StoredEvaluation from "./StoredEvaluation.js"
import * as Logging from "./internal/logging.js"
import * as Progress from "./Progress.js"
import * as Store from "./Store.js"
import * as OtlpExport from "./OtlpExport.js"
import * as Wiring from "./Wiring.js"
import {
  conflict,
  type JudgeUnavailable,
  type Listed,
  RunConflict,
  type RunStatus,
  type Started,
  type StartOptions
} from "./RunSchema.js"
import { answerable, resumable, statusOf } from "./internal/runStates.js"

// Shared with the runs of a cluster, which reach them here.
export { answerable, resumable, statusOf }

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
  ) => Effect.Effect<
    { readonly evaluation: Evaluation.Evaluation; readonly file: string },
    Errors.ResearchError | RunConflict | JudgeUnavailable
  >
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
    ...(options.verify !== undefined ? { verify: options.verify } : {}),
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
  /** Marks the listed sessions a simulated run made. */
  readonly simulatedMarks: ReturnType<typeof Store.simulatedMarks>
}

const makeHost = (resolved: CliConfig.Resolved) =>
  Effect.gen(function* () {
    // With --max-sessions, runs beyond the limit wait for a slot (their status says queued until theirs starts).
    const limit =
      resolved.maxSessions === undefined ? Layer.empty : Layer.orDie(SessionLimit.layer(resolved.maxSessions))
    // The sessions of the host are traced through the exporters of the program.
    const telemetry = yield* OtlpExport.inherited
    const runtime = ManagedRuntime.make(Layer.mergeAll(Wiring.layer(resolved), Logging.stderrLogger, limit, telemetry))
    yield* Effect.addFinalizer(() => runtime.disposeEffect)
    const services = yield* runtime.runtimeEffect
    const host: Host = {
      resolved,
      runtime,
      onRuntime: (effect) => Effect.provide(effect, services),
      runs: new Map(),
      progress: new Map(),
      simulatedMarks: Store.simulatedMarks(yield* Effect.provide(SessionStore.SessionStore, services))
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

/**
 * Runs a session in the background; it is forgotten here when it ends. A run that stops on anything but an error of
 * its research (a store that fails, a defect) says so in the log: its session stays where its last checkpoint left it.
 */
const background = (
  host: Host,
  sessionId: string,
  effect: Effect.Effect<Session.Session, unknown, Wiring.Services>
): Effect.Effect<Started> =>
  Effect.gen(function* () {
    const queued = yield* wouldWait(host)
    const fiber = host.runtime.runFork(
      effect.pipe(
        Effect.tapDefect((cause) =>
          Cause.isInterruptedOnly(cause)
            ? Effect.void
            : Effect.logError(`session ${sessionId} stopped; resume it once the cause is fixed`, cause)
        )
      )
    )
    host.runs.set(sessionId, { fiber })
    fiber.addObserver(() => {
      if (host.runs.get(sessionId)?.fiber === fiber) host.runs.delete(sessionId)
    })
    return { sessionId, status: queued ? "queued" : "running" }
  })

/** Refuses what `cannot` be done while this process runs the session. */
const notRunning = (host: Host, sessionId: string, cannot: string) =>
  host.runs.has(sessionId) ? Effect.fail(conflict(sessionId, "running", cannot)) : Effect.void

// =============================================================================
// What clients ask
// =============================================================================

/**
 * Starts a session: stored queued first (synced, or committed), so that the id given out is never lost, whatever
 * happens to this process after; then run in the background, which begins it once a slot is free.
 */
const start = (host: Host, question: string, options: StartOptions, clarification: "await" | "proceed") =>
  Effect.gen(function* () {
    const config = yield* configFor(host.resolved, options)
    const sessionId = yield* Pipeline.newSessionId
    yield* host
      .onRuntime(Pipeline.enqueue(question, { config, sessionId }))
      .pipe(Effect.catchTag("SessionCorrupt", (error) => new Errors.InvalidInput({ reason: error.message })))
    return yield* background(
      host,
      sessionId,
      Pipeline.resume(sessionId, { clarification: host.resolved.askClarification ? clarification : "proceed" })
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
      // A run waiting for its slot has its session stored queued; without a limit, it begins at once.
      queued: running && host.resolved.maxSessions !== undefined && stored?.status === "queued",
      query: undefined
    })
  })

const list = (host: Host) =>
  Effect.gen(function* () {
    const summaries = yield* Effect.flatMap(storeOf(host), (store) => store.list)
    // Without a limit, a session this process runs is running from the moment it was stored queued.
    const listed =
      host.resolved.maxSessions !== undefined
        ? summaries
        : summaries.map((summary) =>
            summary.status === "queued" && host.runs.has(summary.id)
              ? { ...summary, status: "running" as const }
              : summary
          )
    return yield* host.simulatedMarks(listed)
  })

const answer = (host: Host, sessionId: string, text: string) =>
  Effect.gen(function* () {
    yield* notRunning(host, sessionId, "cannot take an answer now")
    yield* answerable(yield* loadFrom(host, sessionId))
    return yield* background(host, sessionId, Pipeline.resume(sessionId, { answer: text }))
  })

const resume = (host: Host, sessionId: string, clarification?: "await" | "proceed") =>
  Effect.gen(function* () {
    yield* notRunning(host, sessionId, "cannot be resumed")
    yield* resumable(yield* loadFrom(host, sessionId))
    return yield* background(host, sessionId, Pipeline.resume(sessionId, { clarification }))
  })

/**
 * Resumes the sessions a stopped process accepted and did not finish: stored queued, or running with no live run
 * (listed interrupted). Oldest first, each through the session limit as any run. A session simulated where this
 * process is not, or the reverse, is left as it is for a run of its own kind, and the log says so.
 */
const resumeStopped = (host: Host) =>
  Effect.gen(function* () {
    const store = yield* storeOf(host)
    const stopped = (yield* store.list)
      .filter((summary) => summary.status === "queued" || summary.status === "interrupted")
      .sort((a, b) => a.createdAt - b.createdAt)
    const resumed: Array<string> = []
    for (const { id, status } of stopped) {
      const marker = yield* Effect.orElseSucceed(store.artefact(id, Store.simulatedArtefact), () => Option.none())
      if (Option.isSome(marker) !== host.resolved.simulate) {
        yield* Effect.logWarning(
          `session ${id} is left ${status}: it is ${host.resolved.simulate ? "not " : ""}simulated and this server ` +
            `is${host.resolved.simulate ? "" : " not"}; resume it with deep-research resume ${id}`
        )
        continue
      }
      // A queued session's first run asks, as a session started now would.
      const clarification = status === "queued" && host.resolved.askClarification ? "await" : "proceed"
      const started = yield* Effect.either(resume(host, id, clarification))
      if (Either.isLeft(started)) yield* Effect.logWarning(`session ${id} is left ${status}: ${started.left.message}`)
      else resumed.push(id)
    }
    if (resumed.length > 0) {
      yield* Effect.logInfo(
        `resumed ${resumed.length} session(s) a stopped process had accepted: ${resumed.join(", ")}`
      )
    }
  })

const cancel = (host: Host, sessionId: string) =>
  Effect.gen(function* () {
    const run = host.runs.get(sessionId)
    if (run === undefined) return yield* notCancellable(yield* loadFrom(host, sessionId))
    // The run saves itself as cancelled when interrupted; its work so far stays in the store, resumable.
    yield* Fiber.interrupt(run.fiber)
    const session = yield* Effect.option(loadFrom(host, sessionId))
    // A run cancelled while queued stores its session cancelled; one stopped before it even began to wait is marked
    // here. Should the store have failed, it is cancelled still.
    if (Option.isSome(session) && session.value.status === "queued") {
      const { config, createdAt, query } = session.value
      yield* host.onRuntime(Pipeline.recordCancelled(query, { sessionId, config, createdAt })).pipe(Effect.ignore)
      return { sessionId, status: "cancelled" }
    }
    return { sessionId, status: Option.isSome(session) ? session.value.status : "cancelled" }
  })

/** A session this process does not run, which a cancel cannot stop: stopped already, or run by another process. */
export const notCancellable = (session: Session.Session): RunConflict =>
  session.status === "running"
    ? new RunConflict({
        message:
          `The session ${session.id} cannot be cancelled here: another process runs it (a deep-research command ` +
          "or server); stop it there."
      })
    : conflict(session.id, session.status, "cannot be cancelled")

const remove = (host: Host, sessionId: string) =>
  notRunning(host, sessionId, "cannot be deleted now").pipe(
    Effect.zipRight(Effect.flatMap(storeOf(host), (store) => store.delete(sessionId))),
    Effect.tap(() => Effect.sync(() => host.progress.delete(sessionId)))
  )

/** Evaluates as `deep-research evaluate` does: a session a simulated run made is judged by the emulator. */
const evaluate = (host: Host, sessionId: string) =>
  host.onRuntime(
    Effect.gen(function* () {
      const evaluation = StoredEvaluation.evaluateStored(
        sessionId,
        Store.artefactPlace(Store.sessionsDirectory(host.resolved), host.resolved.credentials)
      )
      const simulated = yield* Effect.flatMap(SessionStore.SessionStore, (store) =>
        Store.wasSimulated(store, sessionId)
      )
      return yield* simulated && !host.resolved.simulate
        ? Effect.provide(evaluation, Wiring.simulatedJudgeLayer(host.resolved))
        : evaluation
    })
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

/** How a process hosts its runs. */
export interface Options {
  /**
   * Resume, on start, the sessions a stopped process accepted and did not finish (stored queued, or interrupted):
   * what `serve` does, so that nothing it acknowledged is lost to a crash.
   */
  readonly resumeStopped?: boolean | undefined
}

/**
 * Builds the runtime (a configuration the providers refuse fails here, not on every call) and hosts runs on it until
 * the scope closes, when every run still going is interrupted (each saves itself as cancelled, resumable).
 */
export const make = (
  resolved: CliConfig.Resolved,
  options: Options = {}
): Effect.Effect<Runs, Errors.InvalidInput, Scope.Scope> =>
  Effect.tap(makeHost(resolved), (host) => (options.resumeStopped === true ? resumeStopped(host) : Effect.void)).pipe(
    Effect.map((host): Runs => ({
      start: (question, options, clarification = "await") => start(host, question, options, clarification),
      status: (sessionId) => status(host, sessionId),
      list: list(host),
      load: (sessionId) => loadFrom(host, sessionId),
      answer: (sessionId, text) => answer(host, sessionId, text),
      resume: (sessionId) => resume(host, sessionId),
      cancel: (sessionId) => cancel(host, sessionId),
      remove: (sessionId) => remove(host, sessionId),
      evaluate: (sessionId) => evaluate(host, sessionId),
      isRunning: (sessionId) => host.runs.has(sessionId),
      running: Effect.sync(() => host.runs.size),
      awaitRun: (sessionId) => awaitRun(host, sessionId),
      events: (sessionId, after) => events(host, sessionId, after)
    }))
  )

/**
 * Runs that take questions and answers without the process's secrets (its keys, its API token, its database's URL):
 * a client's question that holds one is researched, stored, shown and logged with `[redacted]` in its place, and no
 * model is sent it.
 */
export const withoutSecrets = (runs: Runs, secrets: ReadonlyArray<Redacted.Redacted<string>>): Runs => {
  const scrub = Secrets.scrubber(secrets)
  return {
    ...runs,
    start: (question, options, clarification) => runs.start(scrub(question), options, clarification),
    answer: (sessionId, answer) => runs.answer(sessionId, scrub(answer))
  }
}
