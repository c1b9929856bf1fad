// The report's shape as flags, the config file, the HTTP API and MCP give it: --words, --outline, --instructions.
import { assert, describe, it } from "@effect/vitest"
import { NodeContext } from "@effect/platform-node"
import { Effect, Either, Schema } from "effect"
import { ResearchConfig } from "@deep-research/core"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as CliConfig from "../src/CliConfig.js"
import { commandHelp } from "../src/internal/commandLine/help.js"
import { readOutlineFile } from "../src/internal/config/reportShape.js"
import { configFor } from "../src/internal/hosted/requests.js"
import { StartOptions } from "../src/RunSchema.js"

const resolve = (flags: CliConfig.Flags, file?: CliConfig.FileConfig) =>
  CliConfig.resolve({ simulate: true, ...flags }, {}, file)

const research = (flags: CliConfig.Flags, file?: CliConfig.FileConfig) => {
  const result = resolve(flags, file)
  if (Either.isLeft(result)) return assert.fail(result.left.message)
  return result.right.research
}

const decodeFile = (json: unknown) => {
  const result = CliConfig.decodeFileConfig(JSON.stringify(json), "deep-research.config.json")
  if (Either.isLeft(result)) return assert.fail(result.left.message)
  return result.right
}

describe("The report's shape in the configuration", () => {
  it("flags give the length (a number or a named size), the outline split at ; and the instructions", () => {
    const config = research({
      words: "long",
      outline: "Background; Evidence ; Outlook",
      instructions: " For a board. "
    })
    assert.strictEqual(config.reportWords, 4_000)
    assert.deepStrictEqual(config.reportOutline, ["Background", "Evidence", "Outlook"])
    assert.strictEqual(config.reportInstructions, "For a board.")
    assert.strictEqual(research({ words: "2500" }).reportWords, 2_500)
  })

  it("the config file gives the same keys, and a flag wins over it", () => {
    const file = decodeFile({ words: 1_200, outline: ["One", "Two"], instructions: "Plain words." })
    const config = research({}, file)
    assert.strictEqual(config.reportWords, 1_200)
    assert.deepStrictEqual(config.reportOutline, ["One", "Two"])
    assert.strictEqual(research({ words: "brief" }, file).reportWords, 500)
  })

  it("a length that is neither a number nor a named size, or out of bounds, is an error naming the sizes", () => {
    const bad = resolve({ words: "lots" })
    assert.isTrue(Either.isLeft(bad))
    if (Either.isLeft(bad))
      assert.include(bad.left.message, "--words takes a number of words or a named size: brief (500)")
    const over = resolve({ words: "50000" })
    assert.isTrue(Either.isLeft(over))
  })

  it("--help states the lengths --words takes as the settings bound them, and the named sizes' words", () => {
    const help = (commandHelp["run"] ?? "").replace(/\s+/g, " ")
    assert.include(help, `(${ResearchConfig.minReportWords} to ${ResearchConfig.maxReportWords})`)
    assert.include(help, "brief, standard, long, extended (500, 1500, 4000, 8000)")
  })

  it.effect("an --outline naming a file is read as its titles; one naming no file is an error", () =>
    Effect.gen(function* () {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "outline-"))
      const file = path.join(dir, "outline.md")
      fs.writeFileSync(file, "# Background\n\n- Evidence\n- Outlook\n")
      const read = yield* readOutlineFile(file)
      assert.isTrue(Either.isRight(read))
      const config = research({ outline: Either.getOrThrow(read) })
      assert.deepStrictEqual(config.reportOutline, ["Background", "Evidence", "Outlook"])
      const missing = yield* readOutlineFile(path.join(dir, "nope.md"))
      assert.isTrue(Either.isLeft(missing))
      assert.deepStrictEqual(yield* readOutlineFile("Only one title"), Either.right("Only one title"))
    }).pipe(Effect.provide(NodeContext.layer))
  )

  it("the API's and MCP's start options take words, outline and instructions into the run's config", () => {
    const options = Schema.decodeUnknownSync(StartOptions)({
      words: 3_000,
      outline: ["A", "B"],
      instructions: "Stress costs."
    })
    const resolved = resolve({})
    if (Either.isLeft(resolved)) return assert.fail(resolved.left.message)
    const config = Either.getOrThrow(configFor(resolved.right, options))
    assert.strictEqual(config.reportWords, 3_000)
    assert.deepStrictEqual(config.reportOutline, ["A", "B"])
    assert.strictEqual(config.reportInstructions, "Stress costs.")
    assert.isTrue(Either.isLeft(Schema.decodeUnknownEither(StartOptions)({ words: 20 })))
  })
})
