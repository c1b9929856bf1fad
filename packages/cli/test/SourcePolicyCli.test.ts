/**
 * The source policy from the command line, over a simulated run's wire (the emulator's search and pages, all served
 * from the loopback host): a policy that leaves out that host leaves the run unsourced, and the report, `show` and
 * the stored session say that the policy removed what was found, and which URLs.
 */
import { assert, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { cli, describeRan, tempDir } from "./support/inProcess.js"

describe("deep-research run with a source policy", () => {
  it("a run whose every source the policy removed says so, and show lists what was left out", async () => {
    const dir = tempDir()
    const store = nodePath.join(dir, "store")
    const ran = await cli([
      "run",
      "How do ocean tides work?",
      "--simulate",
      "--no-clarify",
      "--max-rounds",
      "1",
      "--store",
      store,
      "--exclude-domains",
      "127.0.0.1",
      "--out",
      nodePath.join(dir, "report.md")
    ])
    assert.strictEqual(ran.code, 0, describeRan(ran))
    const report = fs.readFileSync(nodePath.join(dir, "report.md"), "utf8")
    assert.include(report, "The source policy removed everything the searches found.")
    assert.notInclude(report, "127.0.0.1")
    const id = /(dr-[0-9]{8}-[0-9]{6}-[a-z0-9]{6})/.exec(ran.stdout + ran.stderr)?.[1] ?? ""
    const shown = await cli(["show", id, "--store", store])
    assert.strictEqual(shown.code, 0, describeRan(shown))
    assert.include(shown.stdout, "Source policy: never 127.0.0.1")
    assert.match(shown.stdout, /Left out by the source policy: \d+ \(excluded domain \d+\)/)
    assert.match(shown.stdout, /- http:\/\/127\.0\.0\.1:\d+\/web\/sim\/\S+ \(excluded domain\)/)
  })
})
