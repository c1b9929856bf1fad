/**
 * The parts of the file store, each alone on the real file system: the event log (group commit, torn tails, lines it
 * cannot read), atomic files, and the per-session writers.
 */
import { ResearchEvents } from "@deep-research/core"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as fs from "node:fs"
import * as AtomicFiles from "../../../src/store/file/atomicFiles.js"
import * as EventLog from "../../../src/store/file/eventLog.js"
import * as NativeFiles from "../../../src/store/file/nativeFiles.js"
import * as SessionWriters from "../../../src/store/file/sessionWriters.js"

const platform = Layer.merge(NodeFileSystem.layer, NodePath.layer)

const line = (round: number) =>
  `${ResearchEvents.encodeJson({ _tag: "RoundStarted", sessionId: "s", timestamp: round, round })}\n`

/** A log over a fresh folder, with the writes the file system received counted. */
const logIn = Effect.gen(function* () {
  const files = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const dir = yield* files.makeTempDirectoryScoped()
  const writes = yield* Ref.make(0)
  const counted: FileSystem.FileSystem = {
    ...files,
    writeFile: (file, data, options) =>
      Effect.zipRight(
        Ref.update(writes, (n) => n + 1),
        files.writeFile(file, data, options)
      )
  }
  const log = EventLog.make({
    fs: counted,
    fileOf: (id) => path.join(dir, id, "events.jsonl"),
    serially: SessionWriters.make(),
    ensureDirectory: (id) => Effect.orDie(files.makeDirectory(path.join(dir, id), { recursive: true }))
  })
  return { log, writes, file: (id: string) => path.join(dir, id, "events.jsonl") }
})

describe("EventLog", () => {
  it.scoped("appends in order, and batches waiting for the writer go out in one write", () =>
    Effect.gen(function* () {
      const { file, log, writes } = yield* logIn
      yield* log.append("s", line(1))
      const before = yield* Ref.get(writes)
      // Ten appends at once: the first takes the writer, the nine queued behind it go out together.
      yield* Effect.forEach([2, 3, 4, 5, 6, 7, 8, 9, 10, 11], (n) => log.append("s", line(n)), {
        concurrency: "unbounded"
      })
      const rounds = (yield* log.read("s")).map((event) => (event._tag === "RoundStarted" ? event.round : -1))
      assert.deepStrictEqual(rounds, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11])
      assert.isBelow((yield* Ref.get(writes)) - before, 10)
      assert.strictEqual(fs.statSync(file("s")).mode & 0o777, 0o600)
    }).pipe(Effect.provide(platform))
  )

  it.scoped("starts on a new line after a torn last line, and reads past it with a warning", () =>
    Effect.gen(function* () {
      const { file, log } = yield* logIn
      yield* log.append("s", line(1))
      // Another process died in the middle of a line; this log forgets what it knew of the file.
      fs.appendFileSync(file("s"), '{"_tag":"RoundSta')
      log.forget("s")
      yield* log.append("s", line(2))
      const text = fs.readFileSync(file("s"), "utf8")
      assert.match(text, /\{"_tag":"RoundSta\n\{/)
      const rounds = (yield* log.read("s")).map((event) => (event._tag === "RoundStarted" ? event.round : -1))
      assert.deepStrictEqual(rounds, [1, 2])
    }).pipe(Effect.provide(platform))
  )

  it.scoped("reads a session without a log as no events, and syncs only a log written since", () =>
    Effect.gen(function* () {
      const { log } = yield* logIn
      assert.deepStrictEqual(yield* log.read("none"), [])
      // Nothing written: nothing to open, so a session without a folder is fine.
      yield* log.sync("none")
      yield* log.append("s", line(1))
      yield* log.sync("s")
      yield* log.sync("s")
    }).pipe(Effect.provide(platform))
  )
})

/** The open descriptors of this process on a file. */
const descriptorsOn = (file: string): number =>
  fs.readdirSync("/proc/self/fd").filter((fd) => {
    try {
      return fs.readlinkSync(`/proc/self/fd/${fd}`) === file
    } catch {
      return false
    }
  }).length

describe("EventLog while a session is held", () => {
  it.scoped("appends through one open log, syncs it, closes it on release, and the file is whole after", () =>
    Effect.gen(function* () {
      const { file, log, writes } = yield* logIn
      yield* log.hold("s")
      for (let round = 1; round <= 5; round++) yield* log.append("s", line(round))
      // No appends through whole-file writes (each an open and a close) while held; one descriptor stays open.
      assert.strictEqual(yield* Ref.get(writes), 0)
      assert.strictEqual(descriptorsOn(file("s")), 1)
      yield* log.sync("s")
      yield* log.release("s")
      assert.strictEqual(descriptorsOn(file("s")), 0)
      // Let go, the log is written the usual way again, after what the held log wrote.
      yield* log.append("s", line(6))
      assert.strictEqual(yield* Ref.get(writes), 1)
      const rounds = (yield* log.read("s")).map((event) => (event._tag === "RoundStarted" ? event.round : -1))
      assert.deepStrictEqual(rounds, [1, 2, 3, 4, 5, 6])
      assert.strictEqual(fs.statSync(file("s")).mode & 0o777, 0o600)
    }).pipe(Effect.provide(platform))
  )

  it.scoped("a held log whose file another process tore still starts its lines on a line of their own", () =>
    Effect.gen(function* () {
      const { file, log } = yield* logIn
      yield* log.append("s", line(1))
      fs.appendFileSync(file("s"), '{"_tag":"Rou')
      log.forget("s")
      yield* log.hold("s")
      yield* log.append("s", line(2))
      yield* log.release("s")
      const rounds = (yield* log.read("s")).map((event) => (event._tag === "RoundStarted" ? event.round : -1))
      assert.deepStrictEqual(rounds, [1, 2])
    }).pipe(Effect.provide(platform))
  )

  it.scoped("releasing a session that never wrote, or was never held, does nothing", () =>
    Effect.gen(function* () {
      const { log } = yield* logIn
      yield* log.hold("quiet")
      yield* log.release("quiet")
      yield* log.release("never")
    }).pipe(Effect.provide(platform))
  )
})

// The same behaviour over the FileSystem and with Node's own calls.
describe.each([
  { over: "the FileSystem", native: undefined },
  { over: "Node's own calls", native: NativeFiles.node }
])("AtomicFiles over $over", ({ native }) => {
  it.scoped("replaces a file whole, 0600, leaving no temporary file; makes folders 0700 level by level", () =>
    Effect.gen(function* () {
      const files = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      const dir = yield* files.makeTempDirectoryScoped()
      const atomic = AtomicFiles.make(files, path, process.pid, native)
      const folder = path.join(dir, "a", "b")
      yield* Effect.orDie(atomic.makeDirectories(folder))
      assert.strictEqual(fs.statSync(path.join(dir, "a")).mode & 0o777, 0o700)
      const file = path.join(folder, "session.json")
      assert.isTrue(Option.isNone(yield* atomic.statOption(file)))
      yield* atomic.writeAtomically(file, "first")
      yield* atomic.writeAtomically(file, "second")
      assert.strictEqual(fs.readFileSync(file, "utf8"), "second")
      assert.strictEqual(fs.statSync(file).mode & 0o777, 0o600)
      assert.deepStrictEqual(fs.readdirSync(folder), ["session.json"])
      assert.isTrue(Option.isSome(yield* atomic.statOption(file)))
      const suffixes = yield* Effect.all([atomic.uniqueSuffix, atomic.uniqueSuffix])
      assert.notStrictEqual(suffixes[0], suffixes[1])
    }).pipe(Effect.provide(platform))
  )

  it.scoped("gives the written file's information as a stat of the file gives it afterwards", () =>
    Effect.gen(function* () {
      const files = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      const dir = yield* files.makeTempDirectoryScoped()
      const atomic = AtomicFiles.make(files, path, process.pid, native)
      const file = path.join(dir, "report.md")
      yield* atomic.writeAtomically(file, "old")
      const info = yield* atomic.writeAtomically(file, "the new text")
      const after = yield* files.stat(file)
      assert.deepStrictEqual(Option.getOrUndefined(info.ino), Option.getOrUndefined(after.ino))
      assert.strictEqual(info.size, after.size)
      assert.strictEqual(Number(info.size), "the new text".length)
      assert.deepStrictEqual(Option.getOrUndefined(info.mtime), Option.getOrUndefined(after.mtime))
    }).pipe(Effect.provide(platform))
  )

  it.scoped("an empty text is written as an empty file", () =>
    Effect.gen(function* () {
      const files = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      const dir = yield* files.makeTempDirectoryScoped()
      const file = path.join(dir, "empty")
      yield* AtomicFiles.make(files, path, process.pid, native).writeAtomically(file, "")
      assert.strictEqual(fs.readFileSync(file, "utf8"), "")
      assert.deepStrictEqual(fs.readdirSync(dir), ["empty"])
    }).pipe(Effect.provide(platform))
  )

  it.scoped("a write into a missing folder fails and leaves the folder's parent as it was", () =>
    Effect.gen(function* () {
      const files = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      const dir = yield* files.makeTempDirectoryScoped()
      const atomic = AtomicFiles.make(files, path, process.pid, native)
      const error = yield* Effect.flip(atomic.writeOrFail(path.join(dir, "missing", "file"), "text"))
      assert.strictEqual(error._tag === "SystemError" ? error.reason : error._tag, "NotFound")
      assert.deepStrictEqual(fs.readdirSync(dir), [])
    }).pipe(Effect.provide(platform))
  )
})

describe("SessionWriters", () => {
  it.live("runs one write of a session at a time, and finishes a write that has begun", () =>
    Effect.gen(function* () {
      const serially = SessionWriters.make()
      const inside = yield* Ref.make({ now: 0, most: 0 })
      const write = Effect.zipRight(
        Ref.update(inside, (s) => ({ now: s.now + 1, most: Math.max(s.most, s.now + 1) })),
        Effect.zipRight(
          Effect.yieldNow(),
          Ref.update(inside, (s) => ({ ...s, now: s.now - 1 }))
        )
      )
      yield* Effect.forEach([1, 2, 3, 4], () => serially("a", write), { concurrency: "unbounded" })
      assert.strictEqual((yield* Ref.get(inside)).most, 1)
      // Interrupted once it has begun, a write still completes.
      const done = yield* Ref.make(false)
      const fiber = yield* Effect.fork(serially("b", Effect.zipRight(Effect.sleep("10 millis"), Ref.set(done, true))))
      yield* Effect.yieldNow()
      yield* Fiber.interrupt(fiber)
      assert.isTrue(yield* Ref.get(done))
    })
  )
})
