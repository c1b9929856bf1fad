/**
 * `deep-research "<question>"` in this process, simulated: where the report goes when `--out` names a folder not made
 * yet, and what is said when the report's file cannot be written after the research has succeeded.
 */
import { assert, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { cli, describeRan, tempDir } from "./support/inProcess.js"

const simulated = (dir: string) => [
  "--simulate",
  "--no-clarify",
  "--max-rounds",
  "1",
  "--store",
  nodePath.join(dir, "store")
]

describe("deep-research run --out", () => {
  it("makes the folders --out names, and writes the report there", async () => {
    const dir = tempDir()
    const ran = await cli([
      "run",
      "What is X?",
      ...simulated(dir),
      "--out",
      nodePath.join(dir, "reports", "2026") + "/"
    ])
    assert.strictEqual(ran.code, 0, describeRan(ran))
    const written = fs.readdirSync(nodePath.join(dir, "reports", "2026"))
    assert.strictEqual(written.length, 1, describeRan(ran))
    assert.match(written[0] ?? "", /^deep-research-dr-.*\.md$/)
    assert.include(ran.stdout, `Report: ${nodePath.join(dir, "reports", "2026", written[0] ?? "")}`)
  })

  it("a report its file cannot take is a warning naming where it is kept, and the run succeeds", async () => {
    const dir = tempDir()
    fs.writeFileSync(nodePath.join(dir, "a-file"), "")
    const ran = await cli(["run", "What is X?", ...simulated(dir), "--out", nodePath.join(dir, "a-file", "report.md")])
    assert.strictEqual(ran.code, 0, describeRan(ran))
    const id = /Session: (dr-\S+)/.exec(ran.stdout)?.[1] ?? ""
    const kept = nodePath.join(dir, "store", "sessions", id, "report.md")
    assert.include(
      ran.stderr,
      `warning: the report could not be written to ${nodePath.join(dir, "a-file", "report.md")}`
    )
    assert.include(ran.stderr, `its report is kept in the session's store, ${kept} (deep-research show ${id})`)
    assert.include(ran.stdout, `Report: ${kept}`)
    assert.isTrue(fs.existsSync(kept))
  })
})
