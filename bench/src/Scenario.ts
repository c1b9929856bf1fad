/**
 * One benchmark run of the real pipeline against the emulator: the emulator's simulated research world answers the
 * model and search endpoints with injected latency, the layers are wired as the CLI wires them, and the run records
 * every backend request (server side) and every research unit's start and end (from the event stream).
 */
import { FollowUp, Pipeline, ResearchEvents, type Research, type Session } from "@deep-research/core"
import { Emulator } from "@deep-research/emulator"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Queue from "effect/Queue"
import { mkdtemp, rm } from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { performance } from "node:perf_hooks"
import * as Measure from "./Measure.js"
import type * as RemoteEmulator from "./RemoteEmulator.js"
import * as World from "./World.js"

/** How a run is set up. */
export interface Options {
  readonly query: string
  readonly config?: Pipeline.ResearchOptions["config"]
  readonly simulate: Emulator.SimulateOptions
  readonly policy: World.Policy
  readonly modelLatencyMillis: number
  readonly searchLatencyMillis: number
  /** A `fetch` for the OpenAI SDK (to time model calls from the client's side, or hold answers back). */
  readonly openaiFetch?: typeof fetch | undefined
  /** The in-memory session store instead of the file store. */
  readonly memoryStore?: boolean | undefined
  /**
   * The emulator in a process of its own, started with the same simulation and latencies, instead of one in this
   * process (`customize` needs the emulator in this process; the outcome then has no recorded requests).
   */
  readonly remote?: RemoteEmulator.RemoteEmulator | undefined
  /** Changes to the simulated world (extra responders, a wrapped fallback), given the emulator and the simulator. */
  /** A follow-up question asked of the finished session (`FollowUp.ask`), in the same wiring, timed apart. */
  readonly followUp?: string | undefined
  readonly customize?:
    | ((
        handle: Emulator.Handle,
        simulator: (
          request: Emulator.RecordedRequest
        ) => Emulator.Reply | undefined | Promise<Emulator.Reply | undefined>
      ) => Effect.Effect<void>)
    | undefined
}

/** A research unit's life, from the event stream. */
export interface UnitSpan {
  readonly directiveId: string
  readonly round: number
  readonly start: number
  end: number
}

/** What a run produced. */
export interface Outcome {
  readonly session: Session.Session
  /** The follow-up question's answer from the finished session, and its wall time, when the options asked one. */
  readonly followUp?: { readonly answer: Research.FollowUpAnswer; readonly wallMillis: number } | undefined
  readonly wallMillis: number
  readonly from: number
  readonly to: number
  readonly intervals: ReadonlyArray<Measure.Interval>
  readonly units: ReadonlyArray<UnitSpan>
  readonly requests: ReadonlyArray<Emulator.RecordedRequest>
}

/** Runs the pipeline once. */
export const run = (options: Options): Effect.Effect<Outcome> =>
  options.remote === undefined
    ? runInProcess(options)
    : options.customize === undefined
      ? runRemote(options, options.remote)
      : Effect.dieMessage("a scenario's customize needs the emulator in this process, not a remote one")

const runInProcess = (options: Options): Effect.Effect<Outcome> =>
  Effect.scoped(
    Effect.gen(function* () {
      const handle = yield* Emulator.start()
      let simulator: Parameters<Emulator.Handle["setFallback"]>[0] = undefined
      // `simulate` installs the simulated world as the fallback; keeping it lets a scenario wrap it.
      yield* Emulator.simulate(
        {
          ...handle,
          setFallback: (fallback) => {
            simulator = fallback
            return handle.setFallback(fallback)
          }
        },
        options.simulate
      )
      const installed = simulator
      if (installed === undefined) return yield* Effect.dieMessage("the emulator's simulation did not install")
      if (options.customize !== undefined) yield* options.customize(handle, installed)
      yield* handle.setLatency("openai.chat", options.modelLatencyMillis)
      yield* handle.setLatency("tavily.search", options.searchLatencyMillis)
      yield* handle.setLatency("tavily.extract", options.searchLatencyMillis)

      const recorder = Measure.makeRecorder()
      const outcome = yield* measured(options, {
        openaiBaseUrl: handle.baseUrl("openai"),
        tavilyBaseUrl: handle.baseUrl("tavily"),
        record: Effect.sync(() => recorder.start()),
        intervals: Effect.sync(() => recorder.stop())
      })
      return { ...outcome, requests: yield* handle.requests() }
    })
  )

const runRemote = (options: Options, remote: RemoteEmulator.RemoteEmulator): Effect.Effect<Outcome> =>
  measured(options, {
    openaiBaseUrl: `${remote.url}/openai/v1`,
    tavilyBaseUrl: `${remote.url}/tavily`,
    record: remote.record,
    intervals: remote.intervals
  }).pipe(Effect.map((outcome) => ({ ...outcome, requests: [] })))

interface Backend {
  readonly openaiBaseUrl: string
  readonly tavilyBaseUrl: string
  readonly record: Effect.Effect<void>
  readonly intervals: Effect.Effect<ReadonlyArray<Measure.Interval>>
}

/** One run against a backend, timed and watched. */
const measured = (options: Options, backend: Backend): Effect.Effect<Omit<Outcome, "requests">> =>
  Effect.scoped(
    Effect.gen(function* () {
      const directory = yield* Effect.acquireRelease(
        Effect.promise(() => mkdtemp(path.join(os.tmpdir(), "deep-research-bench-"))),
        (dir) => Effect.promise(() => rm(dir, { recursive: true, force: true }))
      )
      const context = yield* Layer.build(
        Layer.merge(
          ResearchEvents.layer,
          World.layer({
            openaiBaseUrl: backend.openaiBaseUrl,
            tavilyBaseUrl: backend.tavilyBaseUrl,
            policy: options.policy,
            storeDirectory: options.memoryStore === true ? undefined : directory,
            openaiFetch: options.openaiFetch,
            events: false
          })
        )
      )

      const units = new Map<string, UnitSpan>()
      const rounds = new Map<string, number>()
      const events = yield* Context.get(context, ResearchEvents.ResearchEvents).subscribe
      const watcher = yield* Effect.fork(
        Effect.forever(
          Effect.map(Queue.take(events), (event) => {
            switch (event._tag) {
              case "DirectiveIssued":
                rounds.set(event.directiveId, event.round)
                break
              case "ResearcherStarted":
                units.set(event.directiveId, {
                  directiveId: event.directiveId,
                  round: rounds.get(event.directiveId) ?? -1,
                  start: event.timestamp,
                  end: Number.NaN
                })
                break
              case "ResearcherCompleted":
              case "ResearcherFailed": {
                const unit = units.get(event.directiveId)
                if (unit !== undefined) unit.end = event.timestamp
                break
              }
            }
          })
        )
      )

      yield* backend.record
      const from = performance.now()
      const session = yield* Pipeline.research(options.query, { config: options.config }).pipe(
        Effect.provide(context),
        Effect.orDieWith((error) => new Error(`the benchmark run failed: ${error.message}`))
      )
      const to = performance.now()
      const followUp =
        options.followUp === undefined
          ? undefined
          : yield* FollowUp.ask(session.id, options.followUp).pipe(
              Effect.provide(context),
              Effect.map(({ answer }) => ({ answer, wallMillis: performance.now() - to })),
              Effect.orDieWith((error) => new Error(`the benchmark's follow-up failed: ${error.message}`))
            )
      const intervals = yield* backend.intervals
      // Let the watcher drain what was published before the run returned.
      yield* Effect.sleep(20)
      yield* Fiber.interrupt(watcher)
      return { session, followUp, wallMillis: to - from, from, to, intervals, units: [...units.values()] }
    })
  )

/** Peak and mean concurrency of the research units of each round. */
export const unitConcurrency = (units: ReadonlyArray<UnitSpan>) => {
  const byRound = new Map<number, Array<UnitSpan>>()
  for (const unit of units) byRound.set(unit.round, [...(byRound.get(unit.round) ?? []), unit])
  return [...byRound.entries()]
    .sort(([a], [b]) => a - b)
    .map(([round, spans]) => {
      const from = Math.min(...spans.map((s) => s.start))
      const to = Math.max(...spans.map((s) => s.end))
      const profile = Measure.concurrency(
        spans.map((s) => ({ path: s.directiveId, role: undefined, start: s.start, end: s.end })),
        from,
        to
      )
      return { round, units: spans.length, peak: profile.peak, mean: Measure.round(profile.meanOverall, 2) }
    })
}
