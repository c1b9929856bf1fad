/**
 * A budget and a run that finds no source, through the command as a user runs it (`--simulate`, in this process): the budget is a
 * ceiling and its lines are printed once; a report that rests on no source says so in the report, the summary and
 * the listing, and `--require-sources` makes it exit 1.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { run } from "./support/inProcess.js"

const question = "What are the tradeoffs of solid-state batteries?"

let sandbox: string

beforeAll(() => {
  sandbox = fs.mkdtempSync(nodePath.join(os.tmpdir(), "budget-cli-"))
})

afterAll(() => fs.rmSync(sandbox, { recursive: true, force: true }))

const cli = (args: ReadonlyArray<string>) => run(args, { cwd: sandbox, env: { HOME: nodePath.join(sandbox, "home") } })

const research = (store: string, ...extra: ReadonlyArray<string>) =>
  cli(["--simulate", "--no-clarify", "--store", store, "--out", nodePath.join(store, "r.md"), ...extra, question])

describe("budget and grounding through the CLI", async () => {
  it("--budget-tokens 5000 spends at most 5000, prints each budget line once, and says the report rests on no source", async () => {
    const store = nodePath.join(sandbox, "five-thousand")
    const ran = await research(store, "--budget-tokens", "5000")
    assert.strictEqual(ran.code, 0, ran.stderr)
    // Said before anything was spent, in numbers: what research has, and what the smallest round needs.
    assert.match(
      ran.stderr,
      /a budget of 5000 tokens is too small to research: after the report's reserve of 2000 tokens, research has 3000, and the smallest round needs about \d+ .*Give a budget of at least \d+ tokens/
    )
    const spent = Number(/tokens: (\d+)/.exec(ran.stdout)?.[1] ?? NaN)
    assert.isAtMost(spent, 5_000)
    const budgetLines = ran.stderr.split("\n").filter((line) => line.startsWith("budget:"))
    assert.isAbove(budgetLines.length, 0)
    assert.strictEqual(new Set(budgetLines).size, budgetLines.length, budgetLines.join("\n"))
    assert.match(ran.stdout, /^Warning: no source was found or read \(budget\)/m)
    // The numbers after the run are the plan's before it: the same reserve, the same smallest budget.
    const planned = /reserve of (\d+) tokens.*at least (\d+) tokens/.exec(ran.stderr)
    assert.isNotNull(planned, ran.stderr)
    assert.include(ran.stdout, `and ${planned?.[1]} kept for the report`)
    assert.include(ran.stdout, `a budget under about ${planned?.[2]} tokens researches nothing`)
    assert.match(ran.stderr, /warning: the report rests on no source \(budget\)/)
    assert.include(fs.readFileSync(nodePath.join(store, "r.md"), "utf8"), "No source was found or read for this report")
    const listed = await cli(["list", "--store", store, "--json"])
    assert.deepStrictEqual(JSON.parse(listed.stdout.trim()).grounding, { sources: 0, reason: "budget" })
    assert.match((await cli(["list", "--store", store])).stdout, /completed, no sources/)
  })

  it("--require-sources makes a run that found no source exit 1, saying why", async () => {
    const ran = await research(nodePath.join(sandbox, "required"), "--budget-tokens", "5000", "--require-sources")
    assert.strictEqual(ran.code, 1, ran.stderr)
    assert.include(
      ran.stderr,
      "No source was found or read (budget), and this run requires its report to rest on sources"
    )
  })

  it("a run that found sources prints no such warning", async () => {
    const ran = await research(nodePath.join(sandbox, "unbudgeted"), "--require-sources")
    assert.strictEqual(ran.code, 0, ran.stderr)
    assert.notInclude(ran.stdout, "Warning: no source")
  })
})

describe("resume with a budget", () => {
  it("a run the budget stopped says so in numbers, a resume that gives no more than was spent is refused, and one that gives more finishes it", async () => {
    const store = nodePath.join(sandbox, "resumed-budget")
    const failed = await research(store, "--require-sources", "--budget-tokens", "5000")
    assert.strictEqual(failed.code, 1, failed.stderr)
    assert.include(failed.stderr, "The budget of 5000 tokens gave research 3000 and kept 2000 for the report")
    assert.match(
      failed.stderr,
      /resume it with a larger one, as in: deep-research resume (dr-\S+) .*--budget-tokens 20000/
    )
    const id = /deep-research resume (dr-\S+)/.exec(failed.stderr)?.[1] ?? ""
    const where = ["--simulate", "--store", store, "--out", nodePath.join(store, "resumed.md")]
    const refused = await cli(["resume", id, ...where, "--budget-tokens", "1000"])
    assert.strictEqual(refused.code, 2, refused.stderr)
    assert.match(refused.stderr, /has spent \d+ tokens already: a budget of 1000 tokens leaves nothing/)
    const resumed = await cli(["resume", id, ...where, "--budget-tokens", "100000"])
    assert.strictEqual(resumed.code, 0, resumed.stderr)
    assert.match(resumed.stdout, /Sources: [1-9]/)
  })
})
