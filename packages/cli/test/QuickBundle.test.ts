/**
 * The bin runs list, show and delete from their quick entry built into one file only while that file is newer than
 * every module it was built from (`quickBundle.ts`): a `tsc -b` after a change must never leave it running old code.
 */
import { afterEach, assert, beforeEach, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { bundleName, freshBundle, inputsName } from "../src/internal/commandLine/quickBundle.js"

let folder: string
let bundle: string
let module: string

/** Sets a file's modification time, in seconds since the epoch. */
const touch = (file: string, seconds: number) => fs.utimesSync(file, seconds, seconds)

beforeEach(() => {
  const root = fs.mkdtempSync(nodePath.join(os.tmpdir(), "quick-bundle-"))
  folder = nodePath.join(root, "dist", "quick")
  fs.mkdirSync(folder, { recursive: true })
  module = nodePath.join(root, "dist", "storeCommandLine.js")
  fs.writeFileSync(module, "export {}\n")
  bundle = nodePath.join(folder, bundleName)
  fs.writeFileSync(bundle, "export {}\n")
  fs.writeFileSync(nodePath.join(folder, inputsName), JSON.stringify(["../storeCommandLine.js", "../gone.js"]))
  touch(module, 1_000)
  touch(bundle, 2_000)
})

afterEach(() => fs.rmSync(nodePath.dirname(nodePath.dirname(folder)), { recursive: true, force: true }))

describe("freshBundle", () => {
  it("is the bundle while every module it was built from is older (one no longer there is not counted)", () => {
    assert.strictEqual(freshBundle(folder), bundle)
  })

  it("is undefined once a module it was built from is newer", () => {
    touch(module, 3_000)
    assert.isUndefined(freshBundle(folder))
  })

  it("is undefined without the bundle, or without a readable list of its modules", () => {
    fs.writeFileSync(nodePath.join(folder, inputsName), "{not json")
    assert.isUndefined(freshBundle(folder))
    fs.writeFileSync(nodePath.join(folder, inputsName), JSON.stringify({ modules: [] }))
    assert.isUndefined(freshBundle(folder))
    fs.rmSync(nodePath.join(folder, inputsName))
    assert.isUndefined(freshBundle(folder))
    fs.rmSync(bundle)
    assert.isUndefined(freshBundle(folder))
  })
})
