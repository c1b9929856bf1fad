/**
 * Benchmarks 1-3, through the real pipeline, the real OpenAI and Tavily provider code and the emulator's simulated
 * research world with injected latency (300 ms a model call, 150 ms a search):
 *  1. idle fraction: the share of a run's wall time with no backend request in flight;
 *  2. parallelism: research units (and researcher model calls) in flight per round against the cap;
 *  3. calls and tokens by role, and the share of raw page text that reaches the report model.
 * Also the critical-path efficiency: the sum of the latencies along the longest chain of requests that ran one after
 * another, over the wall time (`--only critical`: under the default policy, at 300/150 ms and at 2 s/600 ms).
 * Usage: node bench/dist/pipeline.js [--runs N] [--idle-runs N] [--only idle|tokens|critical] [--store memory] [--scheduler default]
 *   [--emulator process|inprocess]   (prints JSON; `run.js` keeps it in bench/results/)
 */
import * as SlicedScheduler from "../../packages/cli/dist/internal/SlicedScheduler.js"
import * as Effect from "effect/Effect"
import * as Measure from "./Measure.js"
import * as Pages from "./Pages.js"
import * as RemoteEmulator from "./RemoteEmulator.js"
import * as Scenario from "./Scenario.js"
import type * as World from "./World.js"

const runsArg = process.argv.indexOf("--runs")
const runs = runsArg >= 0 ? Number(process.argv[runsArg + 1]) : 3
/** Measured runs of the idle benchmark: its figure varies more from run to run than the others. */
const idleRunsArg = process.argv.indexOf("--idle-runs")
const idleRuns = idleRunsArg >= 0 ? Number(process.argv[idleRunsArg + 1]) : 9
/**
 * Runs before the measured ones: the first loads and compiles the code, and V8 is still optimising it during the
 * second (its idle fraction is between the first's and the later ones'); a long-running process is past both.
 */
const warmUpRuns = 2

const query = "How much solar power did Europe add in 2024, and what drove the change?"
const latency = { modelLatencyMillis: 300, searchLatencyMillis: 150 }
/** Round 1 delegates five directives (the default cap), round 2 two more; each researcher searches twice. */
const scenario = { directives: 5, supervisorRounds: 2, searchRounds: 2, resultsPerQuery: 3 }

const idleOf = (outcome: Scenario.Outcome) => {
  const busy = Measure.unionLength(outcome.intervals, outcome.from, outcome.to)
  const gaps = Measure.gaps(outcome.intervals, outcome.from, outcome.to)
  const describe = (at: number, which: "end" | "start") =>
    [
      ...new Set(
        outcome.intervals
          .filter((i) => Math.abs((which === "end" ? i.end : i.start) - at) < 1)
          .map((i) => i.role ?? i.path.replace(/\?.*$/, ""))
      )
    ].join("+") || (which === "end" ? "run start" : "run end")
  const critical = Measure.criticalPath(outcome.intervals)
  return {
    wallMillis: Measure.round(outcome.wallMillis, 0),
    criticalPathMillis: Measure.round(critical, 0),
    criticalPathEfficiency: Measure.round(critical / outcome.wallMillis, 4),
    busyMillis: Measure.round(busy, 0),
    idleMillis: Measure.round(outcome.wallMillis - busy, 0),
    idleFraction: Measure.round(1 - busy / outcome.wallMillis, 4),
    requests: outcome.intervals.length,
    gapCount: gaps.filter((g) => g.length >= 1).length,
    longestGaps: gaps.slice(0, 5).map((g) => ({
      millis: Measure.round(g.length, 0),
      after: describe(g.start, "end"),
      before: describe(g.start + g.length, "start")
    }))
  }
}

const researcherCalls = (outcome: Scenario.Outcome) => {
  const calls = outcome.intervals.filter((i) => i.role === "researcher")
  const profile = Measure.concurrency(
    calls,
    Math.min(...calls.map((c) => c.start)),
    Math.max(...calls.map((c) => c.end))
  )
  return {
    calls: calls.length,
    peakInFlight: profile.peak,
    meanInFlightWhileAny: Measure.round(profile.meanWhileBusy, 2)
  }
}

/**
 * The idle fraction under a policy, against the emulator in a process of its own (as against real vendors, the
 * backend's CPU is not the library's) or in this process (its work then competes with the library's for the core).
 */
const idleBenchmark = (
  policy: World.Policy,
  emulator: "process" | "inprocess",
  counts: { readonly warmUp: number; readonly measured: number } = { warmUp: warmUpRuns, measured: idleRuns },
  at: typeof latency = latency
) =>
  Effect.scoped(
    Effect.gen(function* () {
      const remote = emulator === "process" ? yield* RemoteEmulator.start({ ...at, simulate: scenario }) : undefined
      const options = { query, simulate: scenario, policy, memoryStore, remote, ...at }
      // The warm-up runs are reported apart.
      const warmUp: Array<ReturnType<typeof idleOf>> = []
      for (let i = 0; i < counts.warmUp; i++) warmUp.push(idleOf(yield* Scenario.run(options)))
      const warm: Array<ReturnType<typeof idleOf>> = []
      const parallel: Array<ReturnType<typeof Scenario.unitConcurrency>> = []
      const researcher: Array<ReturnType<typeof researcherCalls>> = []
      for (let i = 0; i < counts.measured; i++) {
        const outcome = yield* Scenario.run(options)
        warm.push(idleOf(outcome))
        parallel.push(Scenario.unitConcurrency(outcome.units))
        researcher.push(researcherCalls(outcome))
      }
      return {
        policy,
        emulator,
        emulatorCpuMillis: remote === undefined ? undefined : yield* remote.stop,
        warmUpRuns: warmUp,
        latency: at,
        medianCriticalPathEfficiency: Measure.median(warm.map((w) => w.criticalPathEfficiency)),
        medianIdleFraction: Measure.median(warm.map((w) => w.idleFraction)),
        medianWallMillis: Measure.median(warm.map((w) => w.wallMillis)),
        medianIdleMillis: Measure.median(warm.map((w) => w.idleMillis)),
        runs: warm,
        unitsPerRound: parallel,
        researcherCalls: researcher
      }
    })
  )

const capBenchmark = (cap: number, directives: number) =>
  Effect.gen(function* () {
    const results: Array<{ readonly rounds: ReturnType<typeof Scenario.unitConcurrency>; readonly deferred: number }> =
      []
    for (let i = 0; i < runs; i++) {
      const outcome = yield* Scenario.run({
        query,
        config: { maxConcurrentResearchUnits: cap },
        simulate: { directives, supervisorRounds: 1, searchRounds: 1, resultsPerQuery: 3 },
        policy: "searchUnlimited",
        ...latency
      })
      results.push({
        rounds: Scenario.unitConcurrency(outcome.units),
        deferred: outcome.session.rounds.reduce((n, r) => n + r.deferred.length, 0)
      })
    }
    return { maxConcurrentResearchUnits: cap, directivesAsked: directives, runs: results }
  })

const tokensBenchmark = Effect.gen(function* () {
  const served = new Map<string, number>()
  const outcome = yield* Scenario.run({
    query,
    simulate: scenario,
    policy: "searchUnlimited",
    ...latency,
    customize: (handle, simulator) => Pages.install(handle, simulator, served)
  })
  const report = outcome.requests.filter((r) => r.endpoint === "openai.chat" && r.headers["x-bench-role"] === "report")
  const reportText = report.map((r) => Pages.messagesText(r.body)).join("\n")
  const findings = Pages.untrustedBlocks(reportText, "research findings")
  const raw = [...served.values()].reduce((n, chars) => n + chars, 0)
  const byRole = outcome.session.usage.map((u) => ({
    role: u.role,
    calls: u.calls,
    inputTokens: u.inputTokens,
    outputTokens: u.outputTokens
  }))
  return {
    status: outcome.session.status,
    sources: outcome.session.sources.length,
    distinctPagesServed: served.size,
    rawPageCharacters: raw,
    reportRequests: report.length,
    reportPromptCharacters: reportText.length,
    reportFindingsCharacters: findings,
    findingsShareOfRaw: Measure.round(findings / raw, 4),
    wholePromptShareOfRaw: Measure.round(reportText.length / raw, 4),
    byRole,
    total: {
      calls: byRole.reduce((n, r) => n + r.calls, 0),
      inputTokens: byRole.reduce((n, r) => n + r.inputTokens, 0),
      outputTokens: byRole.reduce((n, r) => n + r.outputTokens, 0)
    }
  }
})

/** `--store memory`: the in-memory session store instead of the file store, to show what checkpoints cost. */
const memoryStore = process.argv.includes("memory")

/** `--emulator process|inprocess`: only that one of the idle benchmark's two backends (default both). */
const emulatorArg = process.argv.indexOf("--emulator")
const emulators: ReadonlyArray<"process" | "inprocess"> =
  emulatorArg >= 0
    ? [process.argv[emulatorArg + 1] === "inprocess" ? "inprocess" : "process"]
    : ["process", "inprocess"]

const onlyArg = process.argv.indexOf("--only")
const only = onlyArg >= 0 ? process.argv[onlyArg + 1] : undefined

/** The two latency profiles of the critical-path figure: quick and slow backends. */
const slowLatency = { modelLatencyMillis: 2_000, searchLatencyMillis: 600 }

/** Critical-path efficiency and idle fraction under the default policy, at both latency profiles. */
const criticalBenchmark = Effect.gen(function* () {
  const counts = { warmUp: 1, measured: runs }
  return {
    quick: yield* idleBenchmark("default", "process", counts, latency),
    slow: yield* idleBenchmark("default", "process", counts, slowLatency)
  }
})

const program = Effect.gen(function* () {
  if (only === "critical") {
    return { benchmark: "pipeline", machine: Measure.machine(), scenario, runs, critical: yield* criticalBenchmark }
  }
  if (only === "critical-before") {
    const counts = { warmUp: 1, measured: runs }
    return {
      benchmark: "pipeline",
      machine: Measure.machine(),
      scenario,
      runs,
      critical: { quick: yield* idleBenchmark("designDefaults", "process", counts, latency) }
    }
  }
  if (only === "tokens") return { benchmark: "pipeline", machine: Measure.machine(), tokens: yield* tokensBenchmark }
  if (only === "idle") {
    return {
      benchmark: "pipeline",
      machine: Measure.machine(),
      memoryStore,
      idle: { searchUnlimited: yield* Effect.forEach(emulators, (e) => idleBenchmark("searchUnlimited", e)) }
    }
  }
  const idleSearchUnlimited = yield* Effect.forEach(emulators, (e) => idleBenchmark("searchUnlimited", e))
  // The default policy's runs take 20 s each, nearly all of it the rate limiter's waits: fewer runs do.
  const idleDefault = yield* idleBenchmark("default", "process", { warmUp: 1, measured: runs })
  const capFiveOfFive = yield* capBenchmark(5, 5)
  const capThreeOfFive = yield* capBenchmark(3, 5)
  const capFiveOfSeven = yield* capBenchmark(5, 7)
  const tokens = yield* tokensBenchmark
  return {
    benchmark: "pipeline",
    machine: Measure.machine(),
    latency,
    scenario,
    runs,
    idleRuns,
    idle: { searchUnlimited: idleSearchUnlimited, default: idleDefault },
    parallelism: [capFiveOfFive, capThreeOfFive, capFiveOfSeven],
    tokens
  }
})

/** Run on the sliced scheduler, as the CLI runs (`--scheduler default`: Effect's own). */
const schedulerArg = process.argv.indexOf("--scheduler")
const sliced = !(schedulerArg >= 0 && process.argv[schedulerArg + 1] === "default")

const result = await Effect.runPromise(sliced ? SlicedScheduler.withSlices()(program) : program)
process.stdout.write(`${JSON.stringify(result, null, 2)}\n`)
