/**
 * After the report, through the command as a user runs it (`--simulate`, in this process): `ask` answers from the
 * session's stored sources and keeps the answer, says when they do not cover a question and prints the `continue`
 * command, `continue` writes a new report version that `show` describes, and bad input is a usage error; an ask the
 * session's budget cannot pay for is refused in numbers until `--budget-tokens` gives it more.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { run } from "./support/inProcess.js"

let sandbox: string

beforeAll(() => {
  sandbox = fs.mkdtempSync(nodePath.join(os.tmpdir(), "follow-up-cli-"))
})

afterAll(() => fs.rmSync(sandbox, { recursive: true, force: true }))

const cli = (args: ReadonlyArray<string>) => run(args, { cwd: sandbox, env: { HOME: nodePath.join(sandbox, "home") } })

describe("ask and continue through the CLI", () => {
  it("asks, keeps the thread, goes deeper into a new report version, and refuses bad input", async () => {
    const store = nodePath.join(sandbox, "store")
    const researched = await cli([
      "--simulate",
      "--no-clarify",
      "--store",
      store,
      "--out",
      nodePath.join(sandbox, "r.md"),
      "How do heat pumps compare with gas boilers?"
    ])
    assert.strictEqual(researched.code, 0, researched.stderr)
    const listed = await cli(["list", "--store", store, "--json"])
    const id = String(JSON.parse(listed.stdout.split("\n")[0] ?? "{}").id)

    const asked = await cli(["ask", id, "What do the sources say about heat pumps?", "--store", store])
    assert.strictEqual(asked.code, 0, asked.stderr)
    assert.match(asked.stdout, /\[\d+\]/)
    assert.match(asked.stdout, /^Sources:$/m)

    const uncovered = await cli(["ask", id, "Zebra migration routes in Kenya", "--store", store])
    assert.strictEqual(uncovered.code, 0, uncovered.stderr)
    assert.include(uncovered.stdout, "do not cover this question")
    assert.include(uncovered.stdout, `deep-research continue ${id} "Zebra migration routes in Kenya"`)

    const deeper = await cli(["continue", id, "running costs in cold climates", "--store", store])
    assert.strictEqual(deeper.code, 0, deeper.stderr)
    const shown = await cli(["show", id, "--store", store])
    assert.include(shown.stdout, "Report version 2 (after: running costs in cold climates)")
    assert.match(shown.stdout, /^Sources added: .*running-costs/im)
    assert.include(shown.stdout, "Q1: What do the sources say about heat pumps?")
    assert.include(shown.stdout, "Q2: Zebra migration routes in Kenya")
    const first = await cli(["show", id, "--store", store, "--report-version", "1"])
    assert.strictEqual(first.code, 0, first.stderr)
    assert.include(first.stdout, "report version 1")

    const noVersion = await cli(["show", id, "--store", store, "--report-version", "7"])
    assert.strictEqual(noVersion.code, 2)
    const empty = await cli(["ask", id, " ", "--store", store])
    assert.strictEqual(empty.code, 2)
    const unknown = await cli(["ask", "no-such-session", "What?", "--store", store])
    assert.strictEqual(unknown.code, 2)
  })

  it("an ask the session's budget cannot pay for fails in numbers and says how to give more; a larger one answers", async () => {
    const store = nodePath.join(sandbox, "budget-store")
    const researched = await cli(["--simulate", "--no-clarify", "--store", store, "How do tides work?"])
    assert.strictEqual(researched.code, 0, researched.stderr)
    const listed = await cli(["list", "--store", store, "--json"])
    const id = String(JSON.parse(listed.stdout.split("\n")[0] ?? "{}").id)
    const shown = await cli(["show", id, "--store", store, "--json"])
    const usage: ReadonlyArray<{ inputTokens: number; outputTokens: number }> = JSON.parse(shown.stdout).usage
    const spent = usage.reduce((n, r) => n + r.inputTokens + r.outputTokens, 0)
    const question = "What do the sources say about tides?"

    const refused = await cli(["ask", id, question, "--store", store, "--budget-tokens", String(spent + 10)])
    assert.strictEqual(refused.code, 1, refused.stderr)
    assert.include(refused.stderr, `The budget of ${spent + 10} tokens is exhausted`)
    assert.include(refused.stderr, "ask again with a larger budget for the session (--budget-usd or --budget-tokens)")
    const answered = await cli(["ask", id, question, "--store", store, "--budget-tokens", String(spent + 200_000)])
    assert.strictEqual(answered.code, 0, answered.stderr)
    const thread = await cli(["show", id, "--store", store])
    assert.include(thread.stdout, `Q1: ${question}`)
  })
})
