/**
 * The citation check's switch, wherever a run is configured: `--no-verify` and the config file's `verify` (over the
 * default, on), and the `verify` option the HTTP API and MCP's `research` and `start_research` take.
 */
import { assert, describe, it } from "@effect/vitest"
import { Either } from "effect"
import * as CliConfig from "../src/CliConfig.js"
import * as McpResearch from "../src/McpResearch.js"
import * as Runs from "../src/Runs.js"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { cli, describeRan, tempDir } from "./support/inProcess.js"

const env = { OPENAI_API_KEY: "sk-x", TAVILY_API_KEY: "t" }

const resolved = (flags: CliConfig.Flags, file?: unknown): CliConfig.Resolved => {
  const decoded =
    file === undefined ? undefined : CliConfig.decodeFileConfig(JSON.stringify(file), "deep-research.config.json")
  if (decoded !== undefined && Either.isLeft(decoded)) return assert.fail(decoded.left.message)
  const result = CliConfig.resolve(flags, env, decoded?.right)
  if (Either.isLeft(result)) return assert.fail(result.left.message)
  return result.right
}

describe("the verify setting", () => {
  it("is on by default; --no-verify or verify: false in the config file turns it off", () => {
    assert.isTrue(resolved({}).research.verify)
    assert.isFalse(resolved({ noVerify: true }).research.verify)
    assert.isFalse(resolved({}, { verify: false }).research.verify)
    assert.isFalse(resolved({}, { research: { verify: false } }).research.verify)
    assert.isTrue(resolved({}, { verify: true }).research.verify)
    // The flag wins over a file that turns it on.
    assert.isFalse(resolved({ noVerify: true }, { verify: true }).research.verify)
  })

  it("the API's and MCP's verify option sets it for the run", () => {
    const off = Runs.configFor(resolved({}), { verify: false })
    assert.isTrue(Either.isRight(off) && off.right.verify === false)
    const kept = Runs.configFor(resolved({ noVerify: true }), {})
    assert.isTrue(Either.isRight(kept) && kept.right.verify === false)
    const on = Runs.configFor(resolved({ noVerify: true }), { verify: true })
    assert.isTrue(Either.isRight(on) && on.right.verify === true)
    assert.property(McpResearch.Args.fields, "verify")
  })
})

describe("a report whose check was off", () => {
  it("ends by saying its citations were not checked against their sources", async () => {
    const dir = tempDir()
    const args = ["--simulate", "--no-clarify", "--max-rounds", "1", "--store", nodePath.join(dir, "store")]
    const ran = await cli(["run", "How do tides work?", ...args, "--no-verify", "--out", nodePath.join(dir, "off.md")])
    assert.strictEqual(ran.code, 0, describeRan(ran))
    const report = fs.readFileSync(nodePath.join(dir, "off.md"), "utf8").trimEnd()
    assert.match(
      report,
      /\*Citation check: off for this report; the citations were not checked against their sources\.\*$/
    )
  })
})
