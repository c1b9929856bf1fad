/**
 * The report's shape through the command as a user runs it, on the emulator (`--simulate`, in this process): a long
 * report asked for in words is planned, its sections printed as they are written, and lands within the tolerance; an
 * outline's sections are the report's, in order; a bad --words or a missing outline file is a usage error (exit 2).
 */
import { ReportShape } from "@deep-research/core"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { run } from "./support/inProcess.js"

const question = "How do heat pumps perform in cold climates?"

let sandbox: string

beforeAll(() => {
  sandbox = fs.mkdtempSync(nodePath.join(os.tmpdir(), "report-shape-cli-"))
})

afterAll(() => fs.rmSync(sandbox, { recursive: true, force: true }))

const cli = (args: ReadonlyArray<string>) => run(args, { cwd: sandbox, env: { HOME: nodePath.join(sandbox, "home") } })

const research = (name: string, ...extra: ReadonlyArray<string>) => {
  const store = nodePath.join(sandbox, name)
  const out = nodePath.join(store, "r.md")
  return cli(["--simulate", "--no-clarify", "--store", store, "--out", out, ...extra, question]).then((ran) => ({
    ...ran,
    report: fs.existsSync(out) ? fs.readFileSync(out, "utf8") : ""
  }))
}

describe("the report's shape on the emulator", async () => {
  it("--words 3000 plans a long report, prints each section as it is written, and lands within the tolerance", async () => {
    const ran = await research("long", "--words", "3000")
    assert.strictEqual(ran.code, 0, ran.stderr)
    assert.match(ran.stderr, /^report planned: \d+ sections, about 3000 words/m)
    assert.match(ran.stderr, /^ {2}section 1\/\d+ written: .+ \(\d+ words\)$/m)
    assert.match(ran.stderr, /^ {2}introduction written/m)
    const words = ReportShape.countWords(ran.report)
    assert.isTrue(ReportShape.withinTolerance(words, 3_000), `${words} words`)
    assert.match(ran.report, /cited sentences were checked against their sources/)
    // The simulated model plans as a model would: a section per aspect researched, each titled once, then a conclusion.
    const headings = [...ran.report.matchAll(/^## (.+)$/gm)].map((m) => m[1] ?? "")
    assert.strictEqual(new Set(headings).size, headings.length, headings.join(" | "))
    assert.isFalse(
      headings.some((heading) => heading.startsWith(question.slice(0, 20))),
      headings.join(" | ")
    )
    assert.deepStrictEqual(headings.slice(-2), ["Conclusion", "Sources"])
  })

  it("--words brief --outline gives a short report with the outline's sections, in order", async () => {
    const ran = await research("brief", "--words", "brief", "--outline", "Efficiency; Costs; Outlook")
    assert.strictEqual(ran.code, 0, ran.stderr)
    const headings = [...ran.report.matchAll(/^## (.+)$/gm)].map((m) => m[1])
    assert.deepStrictEqual(headings.slice(0, 3), ["Efficiency", "Costs", "Outlook"])
    const words = ReportShape.countWords(ran.report)
    assert.isTrue(ReportShape.withinTolerance(words, 500), `${words} words`)
  })

  it("a --words that is no size and an --outline file that does not exist are usage errors", async () => {
    const bad = await research("bad", "--words", "lots")
    assert.strictEqual(bad.code, 2)
    assert.include(bad.stderr, "--words takes a number of words or a named size")
    const missing = await research("missing", "--outline", "./no-such-outline.md")
    assert.strictEqual(missing.code, 2)
    assert.include(missing.stderr, "--outline: no file at ./no-such-outline.md")
  })
})
