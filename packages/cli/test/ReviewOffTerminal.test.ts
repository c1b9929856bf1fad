/**
 * `--review` off a terminal (a pipe, nobody to answer) never blocks: the run says once that the plan was not reviewed
 * and goes on as planned. It said so twice, as a warning and as the event's line.
 */
import { assert, describe, it } from "@effect/vitest"
import * as nodePath from "node:path"
import { cli, describeRan, tempDir } from "./support/inProcess.js"

describe("deep-research run --review off a terminal", () => {
  it("says once that the plan was not reviewed, and completes", async () => {
    const dir = tempDir()
    const ran = await cli([
      "run",
      "How do ocean tides work?",
      "--simulate",
      "--no-clarify",
      "--review",
      "--max-rounds",
      "1",
      "--store",
      nodePath.join(dir, "store"),
      "--out",
      nodePath.join(dir, "report.md")
    ])
    assert.strictEqual(ran.code, 0, describeRan(ran))
    const said = `${ran.stdout}\n${ran.stderr}`.split("the plan was not reviewed: nobody can answer here").length - 1
    assert.strictEqual(said, 1, describeRan(ran))
  })
})
