import { Session } from "@deep-research/core"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as FileSystem from "@effect/platform/FileSystem"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as nodePath from "node:path"
import * as SessionFile from "../../../src/store/file/sessionFile.js"
import { makeSession } from "../../support/sessionStoreContract.js"

const textOf = (id: string) => JSON.stringify(Schema.encodeSync(Session.Session)(makeSession(id)))

const reasonOf = (id: string, text: string) =>
  Effect.map(Effect.flip(SessionFile.decodeText(id, "/s/session.json", text)), (error) => error.reason)

describe("session files", () => {
  it.effect("a stored session decodes with its version", () =>
    Effect.gen(function* () {
      const read = yield* SessionFile.decodeText("dr-a", "/s/session.json", textOf("dr-a"))
      assert.strictEqual(read.session.id, "dr-a")
      assert.strictEqual(read.version, Session.currentVersion)
    })
  )

  it.effect("an empty, a truncated and another session's file are corrupt, each for its own reason", () =>
    Effect.gen(function* () {
      assert.strictEqual(yield* reasonOf("dr-a", "  \n"), "the file is empty")
      assert.match(yield* reasonOf("dr-a", textOf("dr-a").slice(0, 40)), /^not valid JSON, probably truncated/)
      assert.strictEqual(yield* reasonOf("dr-a", textOf("dr-b")), "the file holds session dr-b")
      assert.isNotEmpty(yield* reasonOf("dr-a", JSON.stringify({ id: "dr-a" })))
    })
  )

  it.effect("a missing file is not found; a folder in its place is corrupt", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const folder = yield* fs.makeTempDirectoryScoped()
      const missing = yield* Effect.flip(SessionFile.read(fs, "dr-a", nodePath.join(folder, "session.json")))
      assert.strictEqual(missing._tag, "SessionNotFound")
      yield* fs.makeDirectory(nodePath.join(folder, "dr-b"))
      const notAFile = yield* Effect.flip(SessionFile.read(fs, "dr-b", nodePath.join(folder, "dr-b")))
      assert.strictEqual(notAFile._tag, "SessionCorrupt")
    }).pipe(Effect.scoped, Effect.provide(NodeContext.layer))
  )

  it.effect("a corrupt file is moved aside with its bytes, and nothing is left in its place", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const folder = yield* fs.makeTempDirectoryScoped()
      const file = nodePath.join(folder, "session.json")
      yield* fs.writeFileString(file, "{ trunc")
      const corrupt = yield* Effect.flip(SessionFile.read(fs, "dr-a", file))
      assert.strictEqual(corrupt._tag, "SessionCorrupt")
      if (corrupt._tag !== "SessionCorrupt") return
      const aside = yield* SessionFile.moveAside(fs, corrupt, Effect.succeed("x1"))
      assert.match(nodePath.basename(aside), /^session\.json\.corrupt-\d{4}-\d\d-\d\dT.*-x1$/)
      assert.strictEqual(yield* fs.readFileString(aside), "{ trunc")
      assert.isFalse(yield* fs.exists(file))
    }).pipe(Effect.scoped, Effect.provide(NodeContext.layer))
  )
})
