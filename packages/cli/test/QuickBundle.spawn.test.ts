/**
 * `list`, `show` and `delete` as the bin runs them from their quick entry built into one file (`quick/build.mjs`; this
 * project's setup builds it, as `npm ci` does) print and exit exactly as the compiled modules of that entry do.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { freshBundle } from "../src/internal/commandLine/quickBundle.js"
import { quickFolder } from "./support/built.js"
import { type Finished, run, type Sandbox, sandbox } from "./support/builtCli.js"
import * as Sessions from "./support/exportSessions.js"

const compiledEntry = fileURLToPath(new URL("../dist/internal/commandLine/storeCommandLine.js", import.meta.url))

let box: Sandbox

/**
 * The arguments through one form of the quick entry, in a process of its own (not through the bin, which would fall
 * back to the compiled modules on a bundle that cannot load).
 */
const through =
  (entry: string) =>
  (args: ReadonlyArray<string>): Promise<Finished> => {
    const script =
      `const { run } = await import(${JSON.stringify(pathToFileURL(entry).href)});` +
      `process.exitCode = await run(${JSON.stringify(args)})`
    const child = spawn(process.execPath, ["--input-type=module", "-e", script], { cwd: box.dir, env: box.env })
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk))
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
    return new Promise((resolve, reject) => {
      child.on("error", reject)
      child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr }))
    })
  }

const compiled = through(compiledEntry)
const bundled = through(nodePath.join(quickFolder, "storeCommands.js"))

beforeAll(async () => {
  box = sandbox()
  await Sessions.saveAll(nodePath.join(box.dir, "store"), [Sessions.english, Sessions.russian])
})

afterAll(() => fs.rmSync(box.dir, { recursive: true, force: true }))

describe("the quick entry built into one file", () => {
  it("is what the bin runs once built", () => {
    assert.strictEqual(freshBundle(quickFolder), nodePath.join(quickFolder, "storeCommands.js"))
  })

  it("prints and exits as the compiled modules do: list, list --json, show, an unknown id, delete", async () => {
    const id = Sessions.english.id
    for (const args of [["list"], ["list", "--json"], ["show", id], ["show", id, "--json"], ["show", "dr-none"]]) {
      assert.deepStrictEqual(await bundled(args), await compiled(args), args.join(" "))
    }
    assert.deepStrictEqual(await run(box, ["list"]), await compiled(["list"]), "list through the bin")
    const deleted = await bundled(["delete", id])
    assert.deepStrictEqual([deleted.code, deleted.stdout], [0, `Deleted session ${id}.\n`])
    const after = await compiled(["list"])
    assert.notInclude(after.stdout, id)
    assert.include(after.stdout, Sessions.russian.id)
    assert.deepStrictEqual(await bundled(["delete", id]), await compiled(["delete", id]))
  })
})
