/**
 * What checking a report's citations costs and changes: simulated runs (the emulator's research world, a model call
 * answered after a vendor-like latency) with the check on and off, the `verification` phase's calls, tokens and wall
 * time read from the session's metrics, and what it did to each report (sentences checked, citations removed,
 * sentences marked). Usage: node bench/dist/verification.js [--runs N] [--model-latency MS] [--search-latency MS]
 */
import * as Effect from "effect/Effect"
import * as Measure from "./Measure.js"
import * as Scenario from "./Scenario.js"

const flag = (name: string, fallback: number): number => {
  const index = process.argv.indexOf(name)
  const value = index >= 0 ? Number(process.argv[index + 1]) : NaN
  return Number.isFinite(value) && value > 0 ? value : fallback
}

const runs = flag("--runs", 3)
const latency = {
  modelLatencyMillis: flag("--model-latency", 2_000),
  searchLatencyMillis: flag("--search-latency", 600)
}
const query = "How do heat pumps compare with gas boilers for heating a house?"

/** Reports of a few sizes: a source or two per topic, more topics, more rounds. */
const scenarios = [
  { name: "3 topics, 1 round", simulate: { directives: 3, supervisorRounds: 1, searchRounds: 1, resultsPerQuery: 2 } },
  { name: "5 topics, 1 round", simulate: { directives: 5, supervisorRounds: 1, searchRounds: 1, resultsPerQuery: 3 } },
  { name: "5 topics, 2 rounds", simulate: { directives: 5, supervisorRounds: 2, searchRounds: 2, resultsPerQuery: 3 } }
]

const once = (simulate: Scenario.Options["simulate"], verify: boolean) =>
  Effect.map(
    Scenario.run({
      query,
      config: { verify, allowClarification: false },
      simulate,
      policy: "searchUnlimited",
      ...latency
    }),
    (outcome) => {
      const phase = outcome.session.metrics.find((m) => m.phase === "verification")
      const roles = phase?.roles ?? []
      const checked = outcome.session.verification
      return {
        wallMillis: outcome.wallMillis,
        runTokens: outcome.session.usage.reduce((n, r) => n + r.inputTokens + r.outputTokens, 0),
        citations: outcome.session.report?.citations.length ?? 0,
        calls: phase?.calls ?? 0,
        inputTokens: roles.reduce((n, r) => n + r.inputTokens, 0),
        outputTokens: roles.reduce((n, r) => n + r.outputTokens, 0),
        phaseMillis: phase?.durationMillis ?? 0,
        sentences: checked?.sentences ?? 0,
        checkedSentences: checked?.checked ?? 0,
        changed: checked?.changed ?? 0,
        removedCitations: checked?.removedCitations ?? 0,
        marked: checked?.marked ?? 0
      }
    }
  )

const median = (values: ReadonlyArray<number>) => Measure.round(Measure.median([...values]), 0)

const program = Effect.forEach(scenarios, (scenario) =>
  Effect.gen(function* () {
    const on = yield* Effect.forEach(Array.from({ length: runs }), () => once(scenario.simulate, true))
    const off = yield* Effect.forEach(Array.from({ length: runs }), () => once(scenario.simulate, false))
    const pick = (key: keyof (typeof on)[number]) => median(on.map((r) => r[key]))
    return {
      scenario: scenario.name,
      verification: {
        calls: pick("calls"),
        inputTokens: pick("inputTokens"),
        outputTokens: pick("outputTokens"),
        phaseMillis: pick("phaseMillis"),
        sentences: pick("sentences"),
        checked: pick("checkedSentences"),
        changed: pick("changed"),
        removedCitations: pick("removedCitations"),
        marked: pick("marked")
      },
      withCheck: { wallMillis: pick("wallMillis"), runTokens: pick("runTokens"), citations: pick("citations") },
      withoutCheck: {
        wallMillis: median(off.map((r) => r.wallMillis)),
        runTokens: median(off.map((r) => r.runTokens)),
        citations: median(off.map((r) => r.citations))
      }
    }
  })
)

const rows = await Effect.runPromise(program)
process.stdout.write(
  `${JSON.stringify({ benchmark: "verification", machine: Measure.machine(), runs, latency, query, rows }, null, 2)}\n`
)
