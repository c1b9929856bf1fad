/**
 * What a long report costs against a standard one: simulated runs (the emulator's research world, the CLI's wiring, a
 * model answering after a vendor-like latency: a wait for the first token, a time per output token and per input
 * token) of the same research, its report written as the model chooses (one call), asked for in 1,500 words (one call
 * told its length), and asked for in 4,000 and 8,000 words (planned and written section by section, the sections in
 * parallel). The `synthesis` and `verification` phases' calls, tokens and wall time come from the session's metrics,
 * the report's words from `ReportShape.countWords`.
 * Usage: node bench/dist/longReport.js [--runs N]
 */
import { ReportShape } from "@deep-research/core"
import * as Effect from "effect/Effect"
import * as Measure from "./Measure.js"
import * as Scenario from "./Scenario.js"
import * as VendorLatency from "./VendorLatency.js"

const option = (name: string): string | undefined => {
  const index = process.argv.indexOf(name)
  return index >= 0 ? process.argv[index + 1] : undefined
}
const runs = Math.max(1, Number(option("--runs") ?? 1))

const vendor: VendorLatency.Latency = { firstTokenMillis: 600, perTokenMillis: 12, perInputTokenMillis: 0.02 }
const query = "How do heat pumps compare with gas boilers for heating a house?"
const simulate = { directives: 5, supervisorRounds: 1, searchRounds: 1, resultsPerQuery: 3 }

/** The reports compared: as the model chooses, and asked for in words. */
const shapes: ReadonlyArray<{ readonly name: string; readonly words: number | undefined }> = [
  { name: "standard (no length asked)", words: undefined },
  { name: "1,500 words (one call)", words: 1_500 },
  { name: "4,000 words (by sections)", words: 4_000 },
  { name: "8,000 words (by sections)", words: 8_000 }
]

const once = (words: number | undefined) =>
  Effect.map(
    Scenario.run({
      query,
      config: { allowClarification: false, ...(words === undefined ? {} : { reportWords: words }) },
      simulate,
      policy: "searchUnlimited",
      modelLatencyMillis: 0,
      searchLatencyMillis: 800,
      openaiFetch: VendorLatency.openaiFetch(vendor)
    }),
    (outcome) => {
      const phase = (name: "synthesis" | "verification") => outcome.session.metrics.find((m) => m.phase === name)
      const tokens = (name: "synthesis" | "verification") =>
        (phase(name)?.roles ?? []).reduce((n, r) => n + r.inputTokens + r.outputTokens, 0)
      return {
        wallMillis: outcome.wallMillis,
        runTokens: outcome.session.usage.reduce((n, r) => n + r.inputTokens + r.outputTokens, 0),
        synthesisMillis: phase("synthesis")?.durationMillis ?? 0,
        synthesisCalls: phase("synthesis")?.calls ?? 0,
        synthesisTokens: tokens("synthesis"),
        verificationMillis: phase("verification")?.durationMillis ?? 0,
        verificationTokens: tokens("verification"),
        words: ReportShape.countWords(outcome.session.report?.markdown ?? ""),
        checked: outcome.session.verification?.checked ?? 0
      }
    }
  )

const median = (values: ReadonlyArray<number>) => Measure.round(Measure.median([...values]), 0)

const program = Effect.forEach(shapes, (shape) =>
  Effect.gen(function* () {
    const all = yield* Effect.forEach(Array.from({ length: runs }), () => once(shape.words))
    const pick = (key: keyof (typeof all)[number]) => median(all.map((r) => r[key]))
    return {
      report: shape.name,
      askedWords: shape.words ?? null,
      words: pick("words"),
      wallMillis: pick("wallMillis"),
      runTokens: pick("runTokens"),
      synthesis: { millis: pick("synthesisMillis"), calls: pick("synthesisCalls"), tokens: pick("synthesisTokens") },
      verification: { millis: pick("verificationMillis"), tokens: pick("verificationTokens"), checked: pick("checked") }
    }
  })
)

const rows = await Effect.runPromise(program)
process.stdout.write(
  `${JSON.stringify({ benchmark: "longReport", machine: Measure.machine(), runs, vendor, query, simulate, rows }, null, 2)}\n`
)
