/**
 * The file store with Node's own file calls (`Options.native`, what `layerNode` gives): the same files and guarantees
 * as over the FileSystem (its own tests), with the checkpoints, lock files and syncs going through the native calls.
 */
import { Errors, ResearchConfig, ResearchEvents, Session } from "@deep-research/core"
import { FileSessionStore } from "@deep-research/providers"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as NativeFiles from "../../../src/store/file/nativeFiles.js"

const platform = Layer.merge(NodeFileSystem.layer, NodePath.layer)

const makeSession = (id: string, status: Session.Session["status"] = "running") =>
  new Session.Session({
    version: Session.currentVersion,
    id,
    query: `What about ${id}?`,
    createdAt: 1,
    updatedAt: 1,
    config: ResearchConfig.defaults,
    status,
    rounds: [],
    sources: [],
    metrics: [],
    usage: []
  })

const checkpointed = (sessionId: string, label: string) =>
  Schema.decodeUnknownSync(ResearchEvents.ResearchEvent)({ _tag: "Checkpointed", label, sessionId, timestamp: 1 })

/** Node's calls, with the files each kind of call was given. */
const recorded = () => {
  const calls: Array<string> = []
  const note = (what: string) => Effect.sync(() => void calls.push(what))
  const native: NativeFiles.NativeFiles = {
    ...NativeFiles.node,
    writeNew: (file, text) => Effect.zipRight(note(`writeNew ${file}`), NativeFiles.node.writeNew(file, text)),
    sync: (file) =>
      Effect.zipRight(note(`sync ${fs.readlinkSync(`/proc/self/fd/${file.fd}`)}`), NativeFiles.node.sync(file))
  }
  return { calls, native }
}

/** A store with Node's calls over a fresh temporary folder. */
const setup = (native: NativeFiles.NativeFiles = NativeFiles.node) =>
  Effect.gen(function* () {
    const files = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const directory = yield* files.makeTempDirectoryScoped({ prefix: "deep-research-native-" })
    const store = yield* FileSessionStore.make({ directory, native, writeSync: fs.writeSync })
    return { path, directory, store }
  })

describe("FileSessionStore with Node's own calls", () => {
  it.scopedLive("a checkpoint is written aside and synced, the log and the folder synced with it", () =>
    Effect.gen(function* () {
      const { calls, native } = recorded()
      const { path, directory, store } = yield* setup(native)
      const folder = path.join(directory, "durable")
      yield* Effect.scoped(
        Effect.gen(function* () {
          yield* store.lock("durable")
          yield* store.appendEvents("durable", [checkpointed("durable", "one")])
          calls.length = 0
          yield* store.save(makeSession("durable"))
          assert.deepStrictEqual(
            calls.map((call) => call.replace(/tmp-.*$/, "tmp-")),
            [
              `sync ${path.join(folder, "events.jsonl")}`,
              `writeNew ${path.join(folder, "session.json")}.tmp-`,
              `sync ${folder}`
            ]
          )
          yield* store.appendEvents("durable", [checkpointed("durable", "two")])
          calls.length = 0
        })
      )
      assert.deepStrictEqual(calls, [`sync ${path.join(folder, "events.jsonl")}`], "the release syncs the log")
      assert.deepStrictEqual(fs.readdirSync(folder).sort(), ["events.jsonl", "session.json"])
      assert.strictEqual(fs.statSync(path.join(folder, "session.json")).mode & 0o777, 0o600)
      assert.deepStrictEqual(yield* store.load("durable"), makeSession("durable"))
      assert.strictEqual((yield* store.events("durable")).length, 2)
    }).pipe(Effect.provide(platform))
  )

  it.scopedLive("a file replaced behind the store's back is checked again, and a corrupt one moved aside", () =>
    Effect.gen(function* () {
      const { path, directory, store } = yield* setup()
      yield* store.save(makeSession("replaced"))
      const file = path.join(directory, "replaced", "session.json")
      fs.writeFileSync(file, "not json at all")
      yield* store.save(makeSession("replaced", "completed"))
      const aside = fs.readdirSync(path.join(directory, "replaced")).filter((name) => name.includes(".corrupt-"))
      assert.strictEqual(aside.length, 1)
      assert.strictEqual(fs.readFileSync(path.join(directory, "replaced", aside[0] ?? ""), "utf8"), "not json at all")
      assert.strictEqual((yield* store.load("replaced")).status, "completed")
    }).pipe(Effect.provide(platform))
  )

  it.scopedLive(
    "a lock is exclusive with its whole content, let go on release, and a dead holder's is taken over",
    () =>
      Effect.gen(function* () {
        const { path, directory, store } = yield* setup()
        const other = yield* FileSessionStore.make({ directory, native: NativeFiles.node })
        const lock = path.join(directory, "contended", "lock")
        yield* Effect.scoped(
          Effect.gen(function* () {
            yield* store.lock("contended")
            const holder: unknown = JSON.parse(fs.readFileSync(lock, "utf8"))
            assert.deepInclude(holder, { pid: process.pid })
            assert.instanceOf(yield* Effect.flip(Effect.scoped(other.lock("contended"))), Errors.SessionBusy)
          })
        )
        assert.isFalse(fs.existsSync(lock))
        const dead = { pid: 99, hostname: "here", startedAt: "2026-01-01T00:00:00.000Z", token: "dead" }
        fs.writeFileSync(lock, JSON.stringify(dead))
        const host: FileSessionStore.Host = { pid: 100, hostname: "here", isAlive: (pid) => pid === 100 }
        const taker = yield* FileSessionStore.make({ directory, host, native: NativeFiles.node })
        yield* Effect.scoped(
          Effect.gen(function* () {
            yield* taker.lock("contended")
            assert.deepInclude(JSON.parse(fs.readFileSync(lock, "utf8")), { pid: 100, hostname: "here" })
          })
        )
        assert.deepStrictEqual(fs.readdirSync(path.join(directory, "contended")), [])
      }).pipe(Effect.provide(platform))
  )
})

describe("NativeFiles.node", () => {
  it.scoped("fails as the platform does: NotFound, AlreadyExists; a missing file's stat is None", () =>
    Effect.gen(function* () {
      const files = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      const directory = yield* files.makeTempDirectoryScoped()
      const file = path.join(directory, "file")
      const native = NativeFiles.node
      assert.isTrue(Option.isNone(yield* native.stat(file)))
      const reason = (error: { readonly _tag: string; readonly reason?: string }) => error.reason ?? error._tag
      assert.strictEqual(reason(yield* Effect.flip(native.readText(file))), "NotFound")
      assert.strictEqual(reason(yield* Effect.flip(native.remove(file))), "NotFound")
      const info = yield* native.writeNew(file, "text")
      assert.strictEqual(info.type, "File")
      assert.strictEqual(Number(info.size), 4)
      assert.strictEqual(reason(yield* Effect.flip(native.writeNew(file, "again"))), "AlreadyExists")
      assert.strictEqual(reason(yield* Effect.flip(native.link(file, file))), "AlreadyExists")
      assert.strictEqual(yield* native.readText(file), "text")
    }).pipe(Effect.provide(platform))
  )

  it.scoped("writeNew writes the whole text, mode 0600, closes the file, and gives what a stat gives", () =>
    Effect.gen(function* () {
      const files = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      const directory = yield* files.makeTempDirectoryScoped()
      const file = path.join(directory, "written")
      const text = "Größe: 10 µm — ".repeat(5000)
      const info = yield* NativeFiles.node.writeNew(file, text)
      const stat = fs.statSync(file)
      assert.strictEqual(fs.readFileSync(file, "utf8"), text)
      assert.strictEqual(Number(info.size), Buffer.byteLength(text))
      assert.deepStrictEqual(info.ino, Option.some(stat.ino))
      assert.strictEqual(stat.mode & 0o777, 0o600)
      const open = fs.readdirSync("/proc/self/fd").filter((fd) => {
        try {
          return fs.readlinkSync(`/proc/self/fd/${fd}`) === file
        } catch {
          return false
        }
      })
      assert.deepStrictEqual(open, [], "no descriptor left open on the file")
      const error = yield* Effect.flip(NativeFiles.node.writeNew(path.join(directory, "missing", "file"), "text"))
      assert.strictEqual(error._tag === "SystemError" ? error.reason : error._tag, "NotFound")
    }).pipe(Effect.provide(platform))
  )
})
