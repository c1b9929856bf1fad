/**
 * The simulated model asks a clarifying question of a request too bare to research as asked (one or two words), as a
 * real model would, so that `--simulate` can try that path; off a terminal the run goes on with its understanding.
 */
import { assert, describe, it } from "@effect/vitest"
import * as nodePath from "node:path"
import { needsClarification } from "../../emulator/src/world/simulatedModel.js"
import { cli, describeRan, tempDir } from "./support/inProcess.js"

describe("a simulated run of a bare request", () => {
  it("is asked a clarifying question, and off a terminal goes on with the model's understanding", async () => {
    const dir = tempDir()
    const args = ["--simulate", "--json", "--max-rounds", "1", "--store", nodePath.join(dir, "store"), "--out", dir]
    const ran = await cli(["run", "heat pumps", ...args])
    assert.strictEqual(ran.code, 0, describeRan(ran))
    const events = ran.stdout.split("\n").filter((line) => line.startsWith("{"))
    assert.isTrue(
      events.some((line) => line.includes('"_tag":"ClarificationAsked"')),
      describeRan(ran)
    )
    assert.isTrue(events.some((line) => line.includes('"_tag":"SessionCompleted"')))
  })

  it("only a request of one or two words is taken for one that needs a question", () => {
    assert.isTrue(needsClarification("heat pumps"))
    assert.isTrue(needsClarification("laptops?"))
    assert.isFalse(needsClarification("What is X?"))
    assert.isFalse(needsClarification("How do heat pumps compare with gas boilers?"))
  })
})
