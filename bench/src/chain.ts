/**
 * The chain of calls a user waits for: simulated runs (the emulator's research world, the CLI's wiring, the search rate
 * limit lifted) of the work of issue 54's side-by-side with open_deep_research (five researchers, six rounds and ten
 * tool calls at most; each researcher searches twice), with the citation check on and off, at a fixed latency a model
 * call (300 ms, 2 s) and at a vendor-like one (a wait for the first token, a time per output token and per input
 * token). Model calls are timed on the client's side (so a held-back answer counts whole), searches on the server's;
 * the critical chain is the longest run of requests each of which started after the one before it had ended
 * (`Measure.criticalChain`), printed as its steps, with its model calls and search waves counted.
 * Usage: node bench/dist/chain.js [--runs N] [--only fast|slow|vendor] [--verify on|off|both] [--extract]
 */
import { Emulator } from "@deep-research/emulator"
import * as Effect from "effect/Effect"
import { performance } from "node:perf_hooks"
import * as Measure from "./Measure.js"
import * as Pages from "./Pages.js"
import * as Scenario from "./Scenario.js"
import * as VendorLatency from "./VendorLatency.js"

const option = (name: string): string | undefined => {
  const index = process.argv.indexOf(name)
  return index >= 0 ? process.argv[index + 1] : undefined
}
const runs = Number(option("--runs") ?? 1)
const only = option("--only")
const verifyArg = option("--verify") ?? "both"
const verifies = verifyArg === "both" ? [true, false] : [verifyArg === "on"]

/** A latency profile: a fixed time a call, or a vendor's first token plus a time per token. */
interface Profile {
  readonly name: "fast" | "slow" | "vendor"
  readonly modelLatencyMillis: number
  readonly searchLatencyMillis: number
  readonly vendor?: VendorLatency.Latency | undefined
}

const profiles: ReadonlyArray<Profile> = [
  { name: "fast", modelLatencyMillis: 300, searchLatencyMillis: 150 },
  { name: "slow", modelLatencyMillis: 2_000, searchLatencyMillis: 600 },
  {
    name: "vendor",
    modelLatencyMillis: 0,
    searchLatencyMillis: 800,
    vendor: { firstTokenMillis: 600, perTokenMillis: 12, perInputTokenMillis: 0.02 }
  }
]

const query = "How much solar power did Europe add in 2024, and what drove the change?"
const simulate = { directives: 5, supervisorRounds: 1, searchRounds: 2, resultsPerQuery: 3 }
const config = {
  allowClarification: false,
  maxConcurrentResearchUnits: 5,
  maxSupervisionRounds: 6,
  researcherMaxToolCalls: 10
}

/**
 * Each search call finds pages of its own (2,000 to 4,000 characters, deterministic per address), as researchers on
 * different topics mostly do: in the simulated world alone every researcher finds the same few pages, and a search
 * whose results are all known needs no summaries.
 */
const distinctPages = (handle: Emulator.Handle) =>
  Effect.gen(function* () {
    let call = 0
    yield* handle.respond("tavily.search", (request) => {
      call++
      const asked: unknown =
        typeof request.body === "object" && request.body !== null ? Reflect.get(request.body, "query") : ""
      const words = typeof asked === "string" ? asked : "topic"
      const results = Array.from({ length: simulate.resultsPerQuery }, (_, i) => {
        const page = `/web/articles/search-${call}-${i + 1}`
        const text = Pages.pageText(page, 2_000 + ((call * 7 + i * 13) % 20) * 100)
        return {
          url: `${handle.url}${page}`,
          title: `${words.slice(0, 80)} (search ${call}, result ${i + 1})`,
          content: text.slice(0, 300),
          rawContent: text
        }
      })
      return Emulator.tavilyResults(results, { query: words })
    })
  })

/** What a model request was for: its role, or `check` for the citation check (a summarization-role call). */
const purposeOf = (init: RequestInit | undefined): string => {
  const role = new Headers(init?.headers).get("x-bench-role") ?? "model"
  const body = typeof init?.body === "string" ? init.body : ""
  return body.includes("claim_verdicts") ? "check" : role
}

/**
 * A `fetch` that records each model call from the client's side, held back by `vendor` when given; a streamed answer
 * ends with its last byte, not its headers.
 */
const recordingFetch = (vendor: VendorLatency.Latency | undefined, calls: Array<Measure.Interval>): typeof fetch => {
  const inner = vendor === undefined ? fetch : VendorLatency.openaiFetch(vendor)
  return async (input, init) => {
    const interval: Measure.Interval = { path: "model", role: purposeOf(init), start: performance.now(), end: NaN }
    const ended = () => {
      interval.end = performance.now()
      calls.push(interval)
    }
    const response = await inner(input, init).catch((error: unknown) => {
      ended()
      throw error
    })
    if (response.body === null || !(response.headers.get("content-type") ?? "").includes("text/event-stream")) {
      ended()
      return response
    }
    const body = response.body.pipeThrough(new TransformStream<Uint8Array, Uint8Array>({ flush: ended }))
    return new Response(body, { status: response.status, headers: response.headers })
  }
}

const isSearch = (interval: Measure.Interval) => /tavily|\/search|\/extract/.test(interval.path)

/** The chain's steps: model calls by purpose, searches and extractions as one wave each. */
const stepsOf = (chain: ReadonlyArray<Measure.Interval>): ReadonlyArray<string> =>
  chain.map((i) => (isSearch(i) ? (i.path.includes("extract") ? "extract" : "search") : (i.role ?? "model")))

const once = (profile: Profile, verify: boolean) =>
  Effect.gen(function* () {
    const calls: Array<Measure.Interval> = []
    const outcome = yield* Scenario.run({
      query,
      config: { ...config, verify },
      simulate,
      policy: "searchUnlimited",
      modelLatencyMillis: profile.modelLatencyMillis,
      searchLatencyMillis: profile.searchLatencyMillis,
      memoryStore: true,
      openaiFetch: recordingFetch(profile.vendor, calls),
      customize: (handle) => distinctPages(handle)
    })
    const intervals = [...outcome.intervals.filter(isSearch), ...calls]
    const chain = Measure.criticalChain(intervals)
    const steps = stepsOf(chain)
    const session = outcome.session
    const verification = session.metrics.find((m) => m.phase === "verification")
    const reportOnChain = calls.filter((i) => i.role === "report")
    const lastReportEnd = Math.max(...reportOnChain.map((i) => i.end), Number.NEGATIVE_INFINITY)
    return {
      wallMillis: Measure.round(outcome.wallMillis, 0),
      chainMillis: Measure.round(
        chain.reduce((n, i) => n + i.end - i.start, 0),
        0
      ),
      chainModelCalls: steps.filter((s) => s !== "search" && s !== "extract").length,
      chainSearchWaves: steps.filter((s) => s === "search" || s === "extract").length,
      chain: steps.join(" > "),
      /** What the check adds after the report's last byte: until its last call ends. */
      checkAfterReportMillis: Measure.round(
        Math.max(0, ...calls.filter((c) => c.role === "check").map((c) => c.end - lastReportEnd)),
        0
      ),
      /** Each check call's start and end, from the report's last byte. */
      checksFromReportEnd: calls
        .filter((c) => c.role === "check")
        .map((c) => [Measure.round(c.start - lastReportEnd, 0), Measure.round(c.end - lastReportEnd, 0)]),
      modelCalls: calls.length,
      checkCalls: calls.filter((c) => c.role === "check").length,
      sources: session.sources.length,
      citations: session.report?.citations.length ?? 0,
      checkedSentences: session.verification?.checked ?? 0,
      citedSentences: session.verification?.sentences ?? 0,
      verificationPhaseMillis: verification?.durationMillis ?? 0,
      tokens: session.usage.reduce((n, r) => n + r.inputTokens + r.outputTokens, 0)
    }
  })

const program = Effect.forEach(
  profiles.filter((p) => only === undefined || p.name === only),
  (profile) =>
    Effect.forEach(verifies, (verify) =>
      Effect.gen(function* () {
        // One unmeasured run first: the first loads and compiles the code.
        yield* once(profile, verify)
        const measured = yield* Effect.forEach(Array.from({ length: runs }), () => once(profile, verify))
        const median = (pick: (r: (typeof measured)[number]) => number) =>
          Measure.round(Measure.median(measured.map(pick)), 0)
        return {
          profile: profile.name,
          latency: profile.vendor ?? { model: profile.modelLatencyMillis, search: profile.searchLatencyMillis },
          verify,
          wallMillis: median((r) => r.wallMillis),
          chainMillis: median((r) => r.chainMillis),
          checkAfterReportMillis: median((r) => r.checkAfterReportMillis),
          runs: measured
        }
      })
    )
)

const results = await Effect.runPromise(program)
process.stdout.write(
  `${JSON.stringify({ benchmark: "chain", machine: Measure.machine(), runs, query, simulate, config, results: results.flat() }, null, 2)}\n`
)
