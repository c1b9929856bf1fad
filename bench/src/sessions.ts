/**
 * Benchmark 4: many research sessions at once in one process, each a full `Pipeline.research` run through the real
 * OpenAI and Tavily provider code over HTTP to the emulator's simulated world (in a separate process, 300 ms a model
 * call, 150 ms a search), with the file session store and one shared event stream and resilience policy, as the CLI
 * wires them (the search rate limit lifted: 1 request a second would serialise any such load). Reports completion
 * time, event-loop delay percentiles and peak RSS.
 * Usage: node bench/dist/sessions.js --sessions N [--model-latency MS] [--search-latency MS] [--backend http|inprocess] [--events on|off] [--store file|memory]
 *   [--scheduler sliced|default] [--slice-millis MS] [--ticks-before-timer N]
 *   [--max-sessions N] [--warm-up N] [--batches N] [--heap-growth cli|default] [--cpu-profile FILE] [--count-steps]
 *   [--first-token MS --per-token MS]
 *
 * `--first-token MS --per-token MS` gives each model call a vendor's latency (`VendorLatency.ts`) in place of
 * `--model-latency`: the first token after MS, then MS for each token of the answer (over HTTP only).
 *
 * `--warm-up N` runs N sessions, unmeasured, before the measured ones (1 by default), at the same concurrency.
 * `--batches K` runs the measured sessions as K batches one after the other and reports each batch's CPU a session,
 * the main thread's and the other threads' (V8's compiler and collector helpers, libuv's pool) apart: V8 keeps
 * compiling hot code for the first few hundred sessions, and the batches show when a process reaches its steady state.
 * `--cpu-profile FILE` writes a CPU profile of the main thread over the measured sessions only (the warm-up left out),
 * in the `.cpuprofile` format that Chrome's and VS Code's profilers open.
 * `--count-steps` counts Effect's runtime steps over the measured sessions (`Steps.ts`): a session's steps, fibers and
 * steps under each span, figures that do not drift with the machine; counting slows the run, so its CPU is not a
 * measurement then.
 */
import { Pipeline, SessionLimit } from "@deep-research/core"
import * as HeapGrowth from "../../packages/cli/dist/internal/HeapGrowth.js"
import * as SlicedScheduler from "../../packages/cli/dist/internal/SlicedScheduler.js"
import { Emulator } from "@deep-research/emulator"
import * as Effect from "effect/Effect"
import type * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Scheduler from "effect/Scheduler"
import { mkdtemp, rm, writeFile } from "node:fs/promises"
import * as inspector from "node:inspector/promises"
import * as os from "node:os"
import * as path from "node:path"
import { monitorEventLoopDelay, performance } from "node:perf_hooks"
import * as InProcess from "./InProcess.js"
import * as Measure from "./Measure.js"
import * as RemoteEmulator from "./RemoteEmulator.js"
import * as Steps from "./Steps.js"
import * as VendorLatency from "./VendorLatency.js"
import * as World from "./World.js"

const argument = (name: string, fallback: number): number => {
  const at = process.argv.indexOf(name)
  return at >= 0 ? Number(process.argv[at + 1]) : fallback
}
const sessions = argument("--sessions", 100)
/** Consecutive microtask turns the Effect scheduler takes before it lets timers and I/O run (Effect's default 2048). */
const ticksBeforeTimer = argument("--ticks-before-timer", 2048)
/**
 * The CLI runs its commands on the sliced scheduler (`SlicedScheduler`, slices of `--slice-millis`, 5 by default);
 * `--scheduler default` runs on Effect's default one instead (with `--ticks-before-timer`).
 */
const schedulerArg = process.argv.indexOf("--scheduler")
const scheduler = schedulerArg >= 0 && process.argv[schedulerArg + 1] === "default" ? "default" : "sliced"
const sliceMillis = argument("--slice-millis", SlicedScheduler.defaultSliceMillis)
/** Sessions running at once through the library's `SessionLimit` (the others wait their turn); 0 for no limit. */
const maxSessions = argument("--max-sessions", 0)
/** Latency of each model call and each search (`--model-latency`, `--search-latency`, in ms). */
const modelLatencyMillis = argument("--model-latency", 300)
const searchLatencyMillis = argument("--search-latency", 150)
const firstTokenMillis = argument("--first-token", -1)
const vendorLatency: VendorLatency.Latency | undefined =
  firstTokenMillis < 0 ? undefined : { firstTokenMillis, perTokenMillis: argument("--per-token", 0) }
/** Sessions run before the measurement, unmeasured, through the same limit. */
const warmUp = argument("--warm-up", 1)
/** Consecutive batches the measured sessions run in, each measured on its own. */
const batches = Math.max(1, Math.min(argument("--batches", 1), sessions))

const storeArg = process.argv.indexOf("--store")
/** `file` (the embedded default: atomic writes with fsync) or `memory`. */
const storeKind = storeArg >= 0 && process.argv[storeArg + 1] === "memory" ? "memory" : "file"

const backendArg = process.argv.indexOf("--backend")
/** `http` (the emulator in its own process, over sockets) or `inprocess` (the simulator called without sockets). */
const backend = backendArg >= 0 && process.argv[backendArg + 1] === "inprocess" ? "inprocess" : "http"

/** `--events off` leaves the shared event stream out, to show what it costs. */
const eventsArg = process.argv.indexOf("--events")
const events = !(eventsArg >= 0 && process.argv[eventsArg + 1] === "off")

/**
 * The CLI lets the heap grow to twice what a full collection kept once that is over 128 MiB (`HeapGrowth`);
 * `--heap-growth default` leaves V8 its own factor (up to 4), as a process started without the CLI would. A process
 * started with its own `--heap-growing-percent` keeps it either way.
 */
const heapGrowthArg = process.argv.indexOf("--heap-growth")
const cpuProfileArg = process.argv.indexOf("--cpu-profile")
const cpuProfileFile = cpuProfileArg >= 0 ? process.argv[cpuProfileArg + 1] : undefined
const steps = process.argv.includes("--count-steps") ? Steps.make() : undefined
const heapGrowth = heapGrowthArg >= 0 && process.argv[heapGrowthArg + 1] === "default" ? "default" : "cli"

/** The simulator `Emulator.simulate` installs, kept to be called in process (the emulator itself gets no traffic). */
const inProcessBackend = Effect.gen(function* () {
  const handle = yield* Emulator.start()
  let simulator: InProcess.Simulator | undefined
  yield* Emulator.simulate({
    ...handle,
    setFallback: (fallback) => {
      simulator = fallback
      return handle.setFallback(fallback)
    }
  })
  if (simulator === undefined) return yield* Effect.dieMessage("the emulator's simulation did not install")
  return { url: handle.url, simulator }
})

/** The inspector's sampling profiler of this thread, started now; `stop` stops it and writes its profile to `file`. */
const startProfiler = (file: string) =>
  Effect.promise(async () => {
    const session = new inspector.Session()
    session.connect()
    await session.post("Profiler.enable")
    await session.post("Profiler.start")
    return {
      stop: Effect.promise(async () => {
        const { profile } = await session.post("Profiler.stop")
        session.disconnect()
        await writeFile(file, JSON.stringify(profile))
      })
    }
  })

const program = Effect.scoped(
  Effect.gen(function* () {
    const heapGrowthWatched = heapGrowth === "cli" ? yield* HeapGrowth.limit() : false
    const inProcess = backend === "inprocess" ? yield* inProcessBackend : undefined
    const emulator =
      inProcess === undefined
        ? yield* RemoteEmulator.start({
            modelLatencyMillis: vendorLatency === undefined ? modelLatencyMillis : 0,
            searchLatencyMillis
          })
        : { url: inProcess.url, stop: Effect.succeed(0) }
    const directory = yield* Effect.acquireRelease(
      Effect.promise(() => mkdtemp(path.join(os.tmpdir(), "deep-research-bench-sessions-"))),
      (dir) => Effect.promise(() => rm(dir, { recursive: true, force: true }))
    )
    const context = yield* Layer.build(
      World.layer({
        openaiBaseUrl: `${emulator.url}/openai/v1`,
        tavilyBaseUrl: `${emulator.url}/tavily`,
        policy: "searchUnlimited",
        storeDirectory: storeKind === "file" ? directory : undefined,
        openaiFetch:
          inProcess !== undefined
            ? InProcess.openaiFetch(inProcess.simulator, modelLatencyMillis)
            : vendorLatency === undefined
              ? undefined
              : VendorLatency.openaiFetch(vendorLatency),
        events,
        search: inProcess === undefined ? undefined : InProcess.search(inProcess.simulator, searchLatencyMillis)
      })
    )
    const limited = <A, E>(effect: Effect.Effect<A, E, Pipeline.Requirements>): Effect.Effect<A, E> =>
      effect.pipe(
        Effect.provide(context),
        maxSessions > 0 ? Effect.provide(Layer.orDie(SessionLimit.layer(maxSessions))) : (self) => self,
        scheduler === "sliced"
          ? SlicedScheduler.withSlices({ sliceMillis })
          : ticksBeforeTimer === 2048
            ? (self) => self
            : Effect.withScheduler(new Scheduler.MixedScheduler(ticksBeforeTimer))
      )
    // Sessions first, unmeasured: a long-running server has its code loaded and compiled before the load comes.
    yield* limited(
      Effect.forEach(
        Array.from({ length: warmUp }, (_, i) => i),
        (i) => Pipeline.research(`Warm-up ${i}: how much solar power did Europe add in 2024?`),
        { concurrency: "unbounded", discard: true }
      )
    ).pipe(Effect.orDie)
    // `memoryUsage.rss()` reads the RSS alone; `memoryUsage()` also walks V8's heap spaces, work the sampler below
    // would add to the CPU measured.
    const rssBefore = process.memoryUsage.rss()
    let peakSampledRss = rssBefore
    const sampler = setInterval(() => {
      peakSampledRss = Math.max(peakSampledRss, process.memoryUsage.rss())
    }, 50)
    const delay = monitorEventLoopDelay({ resolution: 10 })
    delay.enable()
    const durations: Array<number> = []
    const session = (i: number) => {
      const began = performance.now()
      return Pipeline.research(`Question ${i}: how much solar power did region ${i} add in 2024, and why?`).pipe(
        Effect.tap(() => Effect.sync(() => durations.push(performance.now() - began))),
        // Only the status is kept: a server keeps finished sessions in its store, not in memory.
        Effect.map((session) => session.status),
        Effect.either
      )
    }
    const batchFigures: Array<{
      readonly sessions: number
      readonly cpuMillisPerSession: number
      readonly mainThreadMillisPerSession: number | null
      readonly otherThreadsMillisPerSession: number | null
    }> = []
    const profiler = cpuProfileFile === undefined ? undefined : yield* startProfiler(cpuProfileFile)
    const cpuBefore = process.cpuUsage()
    const threadsBefore = Measure.threadCpu()
    const start = performance.now()
    const results: Array<Either.Either<string, Error>> = []
    for (let batch = 0; batch < batches; batch++) {
      const from = Math.floor((sessions * batch) / batches)
      const to = Math.floor((sessions * (batch + 1)) / batches)
      const batchCpu = process.cpuUsage()
      const batchThreads = Measure.threadCpu()
      results.push(
        ...(yield* limited(
          Effect.forEach(
            Array.from({ length: to - from }, (_, i) => from + i),
            session,
            { concurrency: "unbounded" }
          ).pipe(steps === undefined ? (self) => self : steps.counting)
        ))
      )
      const used = process.cpuUsage(batchCpu)
      const threads = Measure.threadCpu()
      batchFigures.push({
        sessions: to - from,
        cpuMillisPerSession: Measure.round((used.user + used.system) / 1000 / (to - from), 1),
        mainThreadMillisPerSession:
          threads && batchThreads ? Measure.round((threads.main - batchThreads.main) / (to - from), 1) : null,
        otherThreadsMillisPerSession:
          threads && batchThreads ? Measure.round((threads.other - batchThreads.other) / (to - from), 1) : null
      })
    }
    const wall = performance.now() - start
    const cpu = process.cpuUsage(cpuBefore)
    const threadsAfter = Measure.threadCpu()
    if (profiler !== undefined) yield* profiler.stop
    delay.disable()
    clearInterval(sampler)
    const emulatorCpuMillis = yield* emulator.stop
    const completed = results.filter((r) => r._tag === "Right" && r.right === "completed").length
    const failures = results.flatMap((r) => (r._tag === "Left" ? [r.left.message] : []))
    return {
      benchmark: "sessions",
      machine: Measure.machine(),
      sessions,
      modelLatency: vendorLatency ?? { millisPerCall: modelLatencyMillis },
      scheduler: scheduler === "sliced" ? { sliced: sliceMillis } : { default: ticksBeforeTimer },
      heapGrowth: heapGrowthWatched
        ? { percent: HeapGrowth.defaultPercent, aboveMiB: HeapGrowth.defaultAboveMiB }
        : HeapGrowth.startedWithOwn()
          ? "the process's own"
          : "V8's",
      maxConcurrentSessions: maxSessions > 0 ? maxSessions : null,
      store: storeKind,
      events,
      backend:
        backend === "http"
          ? "emulator over HTTP in a separate process (real OpenAI and Tavily SDK code)"
          : "simulator in process, no sockets (real OpenAI SDK with an in-process fetch; Tavily's decoding)",
      completed,
      failed: failures.length,
      firstFailures: [...new Set(failures)].slice(0, 3),
      wallMillis: Measure.round(wall, 0),
      cpuMillis: Measure.round((cpu.user + cpu.system) / 1000, 0),
      emulatorCpuMillis,
      cpuMillisPerSession: Measure.round((cpu.user + cpu.system) / 1000 / sessions, 1),
      // The process's threads apart (Linux only): the main thread runs the sessions, the others compile and collect.
      mainThreadMillisPerSession:
        threadsAfter && threadsBefore ? Measure.round((threadsAfter.main - threadsBefore.main) / sessions, 1) : null,
      otherThreadsMillisPerSession:
        threadsAfter && threadsBefore ? Measure.round((threadsAfter.other - threadsBefore.other) / sessions, 1) : null,
      warmUpSessions: warmUp,
      // With --batches: each batch's figures, and the median of the later half's CPU a session (the steady state).
      batches: batches > 1 ? batchFigures : undefined,
      steadyCpuMillisPerSession:
        batches > 1
          ? Measure.round(
              Measure.median(batchFigures.slice(Math.floor(batches / 2)).map((b) => b.cpuMillisPerSession)),
              1
            )
          : undefined,
      // From the call to its result, the wait for a slot of the session limit included.
      steps: steps?.result(sessions),
      sessionMillis: {
        median: Measure.round(Measure.median(durations), 0),
        max: Measure.round(Math.max(...durations), 0)
      },
      eventLoopDelayMillis: {
        p50: Measure.round(delay.percentile(50) / 1e6, 1),
        p99: Measure.round(delay.percentile(99) / 1e6, 1),
        max: Measure.round(delay.max / 1e6, 1)
      },
      rssMiB: {
        before: Measure.round(rssBefore / 1024 ** 2, 0),
        peakSampled: Measure.round(peakSampledRss / 1024 ** 2, 0),
        // The kernel's high-water mark of the whole process (its start included), in KiB.
        peakMaxRss: Measure.round(process.resourceUsage().maxRSS / 1024, 0)
      }
    }
  })
)

// Warnings (a summary that timed out, a retry) go to stderr: stdout is the result's JSON alone.
const stderrLogger = Logger.replace(Logger.defaultLogger, Logger.withConsoleError(Logger.logfmtLogger))
const result = await Effect.runPromise(Effect.provide(program, stderrLogger))
process.stdout.write(`${JSON.stringify(result, null, 2)}\n`)
process.exit(0)
