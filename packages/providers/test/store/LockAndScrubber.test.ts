/**
 * Two more parts of the stores, each alone: the lock file (one run a session, taking over from a dead holder, never
 * from a live one or one of another host) and the secret scrubber.
 */
import * as FileSystem from "@effect/platform/FileSystem"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import * as LockFile from "../../src/store/file/lockFile.js"
import { makeScrubbed } from "../../src/store/secretScrubber.js"

const host = (pid: number, alive: ReadonlySet<number>, hostname = "here"): LockFile.Host => ({
  pid,
  hostname,
  isAlive: (other) => alive.has(other)
})

const holder = (pid: number, token: string, hostname = "here"): LockFile.LockHolder => ({
  pid,
  hostname,
  startedAt: "2026-11-24T00:00:00.000Z",
  token
})

const lockIn = Effect.gen(function* () {
  const files = yield* FileSystem.FileSystem
  const folder = yield* files.makeTempDirectoryScoped()
  return { files, file: nodePath.join(folder, "lock") }
})

const busy = (description: string) => description

describe("LockFile", () => {
  it.scoped("a lock held by a live process of this host is refused, with who holds it", () =>
    Effect.gen(function* () {
      const { file, files } = yield* lockIn
      yield* LockFile.make(files, host(100, new Set([100, 200]))).acquire(file, holder(100, "a"), busy)
      const refused = yield* Effect.flip(
        LockFile.make(files, host(200, new Set([100, 200]))).acquire(file, holder(200, "b"), busy)
      )
      assert.include(refused, "100")
      assert.strictEqual(JSON.parse(fs.readFileSync(file, "utf8")).token, "a")
    }).pipe(Effect.provide(NodeContext.layer))
  )

  it.scoped("a lock left by a process that is gone is taken over", () =>
    Effect.gen(function* () {
      const { file, files } = yield* lockIn
      yield* LockFile.make(files, host(100, new Set([100]))).acquire(file, holder(100, "a"), busy)
      // Process 100 died: only 200 runs now.
      yield* LockFile.make(files, host(200, new Set([200]))).acquire(file, holder(200, "b"), busy)
      assert.strictEqual(JSON.parse(fs.readFileSync(file, "utf8")).token, "b")
    }).pipe(Effect.provide(NodeContext.layer))
  )

  it.scoped("a lock of another host is never taken over, since its process cannot be seen from here", () =>
    Effect.gen(function* () {
      const { file, files } = yield* lockIn
      yield* LockFile.make(files, host(100, new Set(), "there")).acquire(file, holder(100, "a", "there"), busy)
      const refused = yield* Effect.flip(
        LockFile.make(files, host(200, new Set([200]))).acquire(file, holder(200, "b"), busy)
      )
      assert.include(refused, "there")
    }).pipe(Effect.provide(NodeContext.layer))
  )

  it.scoped("release removes only the holder's own lock", () =>
    Effect.gen(function* () {
      const { file, files } = yield* lockIn
      const locks = LockFile.make(files, host(100, new Set([100])))
      yield* locks.acquire(file, holder(100, "a"), busy)
      yield* locks.release(file, "someone-else")
      assert.isTrue(fs.existsSync(file))
      yield* locks.release(file, "a")
      assert.isFalse(fs.existsSync(file))
    }).pipe(Effect.provide(NodeContext.layer))
  )
})

describe("the secret scrubber", () => {
  it.effect("replaces known secrets, raw and JSON-escaped, and vendor-shaped keys; leaves ordinary words", () =>
    Effect.gen(function* () {
      const scrub = makeScrubbed("test", ['pa"ss-word-1234', "short"])
      const text = yield* scrub(
        "x",
        `a pa"ss-word-1234 b ${JSON.stringify('pa"ss-word-1234')} c sk-abcdefghijklmnopqrstu1vwxyz d sk-learn short`
      )
      assert.notInclude(text, "ss-word-1234")
      assert.notInclude(text, "sk-abcdefghijklmnopqrstu1vwxyz")
      assert.include(text, "sk-learn")
      // Too short to be a key: replacing it would mangle ordinary text.
      assert.include(text, "short")
      assert.strictEqual(text.split("[redacted]").length - 1, 3)
    })
  )

  it.effect("a text without secrets is returned as it is", () =>
    Effect.gen(function* () {
      const text = "nothing to see; tvly-short"
      assert.strictEqual(yield* makeScrubbed("test", ["a-long-secret"])("x", text), text)
    })
  )
})
