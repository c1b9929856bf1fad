/**
 * Runs every benchmark, each in a process of its own (so one's memory and compiled code do not flatter the next),
 * keeps each result as JSON in `bench/results/`, and prints a summary. Bounded to about ten minutes on a 2-core
 * machine. Usage: npm run bench [-- --quick]   (quick: one pipeline run per figure and 10/100 sessions)
 */
import { spawnSync } from "node:child_process"
import { mkdirSync, writeFileSync } from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const here = path.dirname(fileURLToPath(import.meta.url))
const results = path.resolve(here, "..", "results")
const quick = process.argv.includes("--quick")

interface Step {
  readonly name: string
  readonly script: string
  readonly args: ReadonlyArray<string>
  /** Options of Node itself, before the script. */
  readonly node?: ReadonlyArray<string>
}

/**
 * Many sessions run as a server would run them: at most 20 at once (`SessionLimit`), the rest waiting their turn; the
 * 1,000-session run with the heap capped at 1 GiB, as a server's process would be (BENCHMARKS.md, "Many sessions in
 * one process", says why).
 */
const sessionLimit = ["--max-sessions", "20"]

const steps: ReadonlyArray<Step> = [
  { name: "hotPaths", script: "hotPaths.js", args: [], node: ["--expose-gc"] },
  {
    name: "pipeline",
    script: "pipeline.js",
    args: ["--runs", quick ? "1" : "3", "--idle-runs", quick ? "1" : "9"]
  },
  { name: "sessions-100", script: "sessions.js", args: ["--sessions", quick ? "10" : "100", ...sessionLimit] },
  {
    // 1,000 sessions in ten batches of 100, each batch's CPU a session apart: V8 keeps compiling the code a session
    // runs for the first few hundred sessions, so the batches give a process's warm-up and, in the later five, its
    // steady state (`steadyCpuMillisPerSession`, their median; BENCHMARKS.md, "CPU a simulated session").
    name: "sessions-steady",
    script: "sessions.js",
    args: ["--sessions", quick ? "100" : "1000", "--batches", "10", ...sessionLimit]
  },
  {
    name: "sessions-1000",
    script: "sessions.js",
    args: ["--sessions", quick ? "100" : "1000", ...sessionLimit],
    node: ["--max-old-space-size=1024"]
  },
  {
    // Every session started at once (no SessionLimit), 10 s a model call and 1 s a search: the sessions move in step,
    // so their answers arrive together; run on the sliced scheduler, as the CLI runs them.
    name: "sessions-1000-at-once",
    script: "sessions.js",
    args: ["--sessions", quick ? "100" : "1000", "--model-latency", "10000", "--search-latency", "1000"]
  },
  { name: "cliStart", script: "cliStart.js", args: [] },
  { name: "perCall", script: "perCall.js", args: ["--calls", quick ? "100" : "400"] },
  { name: "budget", script: "budget.js", args: ["--runs", quick ? "1" : "3"] },
  { name: "verification", script: "verification.js", args: ["--runs", quick ? "1" : "2"] },
  { name: "chain", script: "chain.js", args: ["--runs", quick ? "1" : "2"] },
  { name: "longReport", script: "longReport.js", args: ["--runs", "1"] },
  { name: "librarySearch", script: "librarySearch.js", args: ["--passages", quick ? "10000" : "100000"] },
  { name: "followUp", script: "followUp.js", args: ["--runs", quick ? "1" : "3"] }
]

mkdirSync(results, { recursive: true })
let failed = 0
for (const step of steps) {
  const started = Date.now()
  process.stderr.write(`bench: ${step.name} ... `)
  const run = spawnSync(process.execPath, [...(step.node ?? []), path.join(here, step.script), ...step.args], {
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
    stdio: ["ignore", "pipe", "inherit"]
  })
  const seconds = Math.round((Date.now() - started) / 100) / 10
  if (run.status !== 0) {
    failed++
    process.stderr.write(`failed after ${seconds} s (exit ${String(run.status)})\n`)
    continue
  }
  writeFileSync(path.join(results, `${step.name}.json`), run.stdout)
  process.stderr.write(`${seconds} s -> bench/results/${step.name}.json\n`)
  process.stdout.write(run.stdout)
}
process.exitCode = failed === 0 ? 0 : 1
