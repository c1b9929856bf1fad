/**
 * The host of `Runs`: the one runtime a process keeps for its sessions, the runs going on it (queued ones included),
 * each session's progress view from the shared event stream, and how a run is put in the background. What clients
 * ask of the runs (`requests`) and a session's event stream (`events`) work over it.
 */
import { Errors, ResearchEvents, Review, SessionLimit, SessionStore } from "@deep-research/core"
import type { Session } from "@deep-research/core"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as FiberRef from "effect/FiberRef"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import type * as CliConfig from "../../CliConfig.js"
import * as OtlpExport from "../../OtlpExport.js"
import * as Progress from "../../Progress.js"
import { conflict, type Started } from "../../RunSchema.js"
import * as Wiring from "../../Wiring.js"
import * as SlicedScheduler from "../SlicedScheduler.js"
import * as Logging from "../telemetry/logging.js"

/** A run of this process, going or queued. */
export interface Run {
  readonly fiber: Fiber.RuntimeFiber<Session.Session, unknown>
}

/** What the runs of a process share. */
export interface Host {
  readonly resolved: CliConfig.Resolved
  readonly runtime: ManagedRuntime.ManagedRuntime<Wiring.Services, Errors.ResearchInvalidInput>
  readonly onRuntime: <A, E>(effect: Effect.Effect<A, E, Wiring.Services>) => Effect.Effect<A, E>
  /** The runs of this process still going, queued ones included. */
  readonly runs: Map<string, Run>
  /** A progress view per session, from the shared event stream. */
  readonly progress: Map<string, Progress.State>
}

export const makeHost = (resolved: CliConfig.Resolved) =>
  Effect.gen(function* () {
    // With --max-sessions, runs beyond the limit wait for a slot (their status says queued until theirs starts).
    const limit =
      resolved.maxSessions === undefined ? Layer.empty : Layer.orDie(SessionLimit.layer(resolved.maxSessions))
    // The sessions of the host are traced through the exporters of the program.
    const telemetry = yield* OtlpExport.inherited
    // And scheduled as the program is (under the CLI, the sliced scheduler: BENCHMARKS.md, "Home-made parts"), not on
    // Effect's default scheduler, which a runtime of its own would otherwise have.
    const scheduler = Layer.setScheduler(yield* FiberRef.get(FiberRef.currentScheduler))
    const runtime = ManagedRuntime.make(
      Layer.mergeAll(Wiring.layer(resolved), Logging.stderrLogger, limit, telemetry, scheduler)
    )
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

export const storeOf = (host: Host) => host.onRuntime(SessionStore.SessionStore)

export const loadFrom = (host: Host, sessionId: string) =>
  Effect.flatMap(storeOf(host), (store) => store.load(sessionId))

export const wouldWait = (host: Host) =>
  host.onRuntime(
    Effect.flatMap(Effect.serviceOption(SessionLimit.SessionLimit), (limit) =>
      Option.isNone(limit) ? Effect.succeed(false) : limit.value.wouldWait
    )
  )

/**
 * Runs a session in the background; it is forgotten here when it ends. A run that stops on anything but an error of
 * its research (a store that fails, a defect) says so in the log: its session stays where its last checkpoint left it.
 */
export const background = (
  host: Host,
  sessionId: string,
  effect: Effect.Effect<Session.Session, unknown, Wiring.Services>
): Effect.Effect<Started> =>
  Effect.gen(function* () {
    const queued = yield* wouldWait(host)
    const fiber = host.runtime.runFork(
      effect.pipe(
        // A plan to review waits, durably, for the client's decision (`review`).
        Review.awaiting,
        // Runs give way to what clients ask: a burst of them is answered before the runs it starts take the loop.
        SlicedScheduler.background,
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
export const notRunning = (host: Host, sessionId: string, cannot: string) =>
  host.runs.has(sessionId) ? Effect.fail(conflict(sessionId, "running", cannot)) : Effect.void
