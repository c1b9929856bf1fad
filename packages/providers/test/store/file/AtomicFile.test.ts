import * as NodeContext from "@effect/platform-node/NodeContext"
import * as FileSystem from "@effect/platform/FileSystem"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as nodePath from "node:path"
import * as AtomicFile from "../../../src/store/file/AtomicFile.js"

describe("AtomicFile.writeString", () => {
  it.effect("replaces a file, leaves no temporary file, and keeps it to its owner", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const folder = yield* fs.makeTempDirectoryScoped()
      const file = nodePath.join(folder, "table.json")
      yield* AtomicFile.writeString(file, "first")
      yield* AtomicFile.writeString(file, "second")
      assert.strictEqual(yield* fs.readFileString(file), "second")
      assert.deepStrictEqual(yield* fs.readDirectory(folder), ["table.json"])
      assert.strictEqual((yield* fs.stat(file)).mode & 0o777, 0o600)
    }).pipe(Effect.scoped, Effect.provide(NodeContext.layer))
  )

  it.effect("writes an empty file", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const file = nodePath.join(yield* fs.makeTempDirectoryScoped(), "articles.jsonl")
      yield* AtomicFile.writeString(file, "")
      assert.strictEqual(yield* fs.readFileString(file), "")
    }).pipe(Effect.scoped, Effect.provide(NodeContext.layer))
  )

  it.effect("a folder that does not exist is a failure, not a defect", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(AtomicFile.writeString("/nonexistent-folder-of-the-test/x.json", "x"))
      assert.strictEqual(error._tag, "SystemError")
    }).pipe(Effect.provide(NodeContext.layer))
  )
})
