/**
 * Budgets and token counts: what a simulated run spends under `--budget-tokens` 5k, 20k and 100k (and with no budget),
 * run as a user runs it (the CLI with `--simulate`, a new process each time), and what counting a 1 MB prompt costs,
 * by core's script-aware estimate and by OpenAI's o200k tokenizer (`OpenAiTokenizer`), on code with English and on
 * Chinese, Japanese and Korean text. Usage: node bench/dist/budget.js [--runs N]
 */
import { Tokens } from "@deep-research/core"
import { OpenAiTokenizer } from "@deep-research/providers"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { spawnSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { createRequire } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import { performance } from "node:perf_hooks"
import { fileURLToPath } from "node:url"
import * as Measure from "./Measure.js"

const flag = (name: string, fallback: number): number => {
  const index = process.argv.indexOf(name)
  const value = index >= 0 ? Number(process.argv[index + 1]) : NaN
  return Number.isFinite(value) && value > 0 ? value : fallback
}

const runs = flag("--runs", 3)
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..")
const bin = path.join(root, "packages", "cli", "bin", "deep-research.js")
const question = "How do heat pumps compare with gas boilers for heating a house?"

/** One simulated run under a budget: what it spent, found and cited, and the budget lines it printed. */
const simulated = (budgetTokens: number | undefined) => {
  const store = mkdtempSync(path.join(os.tmpdir(), "deep-research-bench-budget-"))
  const args = [bin, question, "--simulate", "--no-clarify", "--store", store, "--out", `${store}${path.sep}`]
  const result = spawnSync(
    process.execPath,
    budgetTokens === undefined ? args : [...args, "--budget-tokens", String(budgetTokens)],
    { cwd: root, encoding: "utf8" }
  )
  rmSync(store, { recursive: true, force: true })
  const output = `${result.stdout}\n${result.stderr}`
  const summary = /Sources: (\d+), citations: (\d+), tokens: (\d+)/.exec(output)
  return {
    exit: result.status,
    spent: Number(summary?.[3] ?? NaN),
    sources: Number(summary?.[1] ?? NaN),
    citations: Number(summary?.[2] ?? NaN),
    budgetLines: output.split("\n").filter((line) => line.startsWith("budget:"))
  }
}

const budgets = [5_000, 20_000, 100_000, undefined]
const rows = budgets.map((budgetTokens) => {
  const all = Array.from({ length: runs }, () => simulated(budgetTokens))
  return {
    budgetTokens: budgetTokens ?? null,
    spentMax: Math.max(...all.map((r) => r.spent)),
    spentMedian: Measure.median(all.map((r) => r.spent)),
    withinBudget: all.every((r) => budgetTokens === undefined || r.spent <= budgetTokens),
    sources: Measure.median(all.map((r) => r.sources)),
    citations: Measure.median(all.map((r) => r.citations)),
    exits: [...new Set(all.map((r) => r.exit))],
    budgetLines: all[0]?.budgetLines ?? []
  }
})

// Real text without repeats (a tokenizer that caches what it saw would be flattered by a repeated sentence): the first
// 1,000,000 characters of TypeScript's DOM declarations (code and English documentation), and TypeScript's messages
// translated to Chinese, Japanese and Korean, as many as there are (about 0.6 million characters, 1.6 MB in UTF-8).
const typescript = path.dirname(createRequire(import.meta.url).resolve("typescript/package.json"))
const latin = readFileSync(path.join(typescript, "lib", "lib.dom.d.ts"), "utf8").slice(0, 1_000_000)
const cjk = ["zh-cn", "zh-tw", "ja", "ko"]
  .flatMap((language) =>
    Object.values(
      Schema.decodeUnknownSync(Schema.Record({ key: Schema.String, value: Schema.String }))(
        JSON.parse(readFileSync(path.join(typescript, "lib", language, "diagnosticMessages.generated.json"), "utf8"))
      )
    )
  )
  .join("\n")

const timed = (count: (text: string) => number, text: string) => {
  const times: Array<number> = []
  let tokens = 0
  for (let i = 0; i < 5; i++) {
    const { millis, value } = Measure.time(() => count(text))
    times.push(millis)
    tokens = value
  }
  return { tokens, medianMillis: Measure.round(Measure.median(times), 1) }
}

const loadStart = performance.now()
const o200k = await Effect.runPromise(OpenAiTokenizer.counter)
const loadMillis = performance.now() - loadStart

const counting = {
  o200kLoadMillis: Measure.round(loadMillis, 0),
  codeAndEnglish: {
    characters: latin.length,
    estimate: timed(Tokens.estimateTokens, latin),
    o200k: timed(o200k, latin)
  },
  chineseJapaneseKorean: {
    characters: cjk.length,
    utf8Bytes: Buffer.byteLength(cjk),
    estimate: timed(Tokens.estimateTokens, cjk),
    o200k: timed(o200k, cjk)
  }
}

process.stdout.write(
  `${JSON.stringify({ benchmark: "budget", machine: Measure.machine(), runs, question, rows, counting }, null, 2)}\n`
)
