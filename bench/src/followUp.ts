/**
 * What a follow-up costs against a new run: a simulated research (the emulator's world, the CLI's wiring) at a
 * vendor-like latency (a wait for the first token, a time per output and per input token), then a follow-up question
 * answered from its stored sources (`FollowUp.ask`: one answer call, one check call), against a new research run on
 * that same question. Tokens and model calls are the sessions' own accounts; wall time is the client's.
 * Usage: node bench/dist/followUp.js [--runs N]
 */
import * as Effect from "effect/Effect"
import * as Measure from "./Measure.js"
import * as Scenario from "./Scenario.js"
import * as VendorLatency from "./VendorLatency.js"

const option = (name: string): string | undefined => {
  const index = process.argv.indexOf(name)
  return index >= 0 ? process.argv[index + 1] : undefined
}
const runs = Number(option("--runs") ?? 1)

const vendor: VendorLatency.Latency = { firstTokenMillis: 600, perTokenMillis: 12, perInputTokenMillis: 0.02 }
const query = "How much solar power did Europe add in 2024, and what drove the change?"
const followUp = "What key figures do the sources give on solar power added in Europe in 2024?"
const simulate = { directives: 3, supervisorRounds: 1, searchRounds: 2, resultsPerQuery: 3 }
const config = { allowClarification: false, maxConcurrentResearchUnits: 5, maxSupervisionRounds: 6 }

const base = {
  config,
  simulate,
  policy: "searchUnlimited" as const,
  modelLatencyMillis: 0,
  searchLatencyMillis: 800,
  memoryStore: true,
  openaiFetch: VendorLatency.openaiFetch(vendor)
}

const callsOf = (usage: ReadonlyArray<{ readonly calls: number }>) => usage.reduce((n, r) => n + r.calls, 0)
const tokensOf = (usage: ReadonlyArray<{ readonly inputTokens: number; readonly outputTokens: number }>) =>
  usage.reduce((n, r) => n + r.inputTokens + r.outputTokens, 0)

const once = Effect.gen(function* () {
  const asked = yield* Scenario.run({ ...base, query, followUp })
  const answer = asked.followUp
  if (answer === undefined) return yield* Effect.dieMessage("the follow-up was not answered")
  const fresh = yield* Scenario.run({ ...base, query: followUp })
  return {
    followUp: {
      wallMillis: Measure.round(answer.wallMillis, 0),
      modelCalls: callsOf(answer.answer.usage),
      tokens: tokensOf(answer.answer.usage),
      covered: answer.answer.covered,
      citations: answer.answer.citations.length,
      checkedSentences: answer.answer.verification?.checked ?? 0,
      searches: 0
    },
    newRun: {
      wallMillis: Measure.round(fresh.wallMillis, 0),
      modelCalls: callsOf(fresh.session.usage),
      tokens: tokensOf(fresh.session.usage),
      sources: fresh.session.sources.length,
      searches: fresh.intervals.filter((i) => /tavily|\/search/.test(i.path)).length
    },
    firstRun: { wallMillis: Measure.round(asked.wallMillis, 0), tokens: tokensOf(asked.session.usage) }
  }
})

const program = Effect.gen(function* () {
  // One unmeasured pair first: the first loads and compiles the code.
  yield* once
  const measured = yield* Effect.forEach(Array.from({ length: runs }), () => once)
  const median = (pick: (r: (typeof measured)[number]) => number) =>
    Measure.round(Measure.median(measured.map(pick)), 0)
  return {
    followUpWallMillis: median((r) => r.followUp.wallMillis),
    newRunWallMillis: median((r) => r.newRun.wallMillis),
    followUpTokens: median((r) => r.followUp.tokens),
    newRunTokens: median((r) => r.newRun.tokens),
    followUpModelCalls: median((r) => r.followUp.modelCalls),
    newRunModelCalls: median((r) => r.newRun.modelCalls),
    runs: measured
  }
})

const result = await Effect.runPromise(program)
process.stdout.write(
  `${JSON.stringify({ benchmark: "followUp", machine: Measure.machine(), runs, query, followUp, vendor, simulate, config, result }, null, 2)}\n`
)
