/**
 * The file store's group commit: sessions saved at once are made durable by a sync of the sessions folder they share,
 * each save returning only after a sync begun once its folder was made; a write that fails fails its own save alone,
 * saying which file and why. And the pool gate, which takes a session's creation before other calls.
 */
import { ResearchConfig, Session } from "@deep-research/core"
import { FileSessionStore } from "@deep-research/providers"
import { SystemError } from "@effect/platform/Error"
import * as FileSystem from "@effect/platform/FileSystem"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import { assert, describe, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as nodePath from "node:path"
import * as FolderSyncs from "../../../src/store/file/folderSyncs.js"
import * as NativeFiles from "../../../src/store/file/nativeFiles.js"
import * as PoolGate from "../../../src/store/file/poolGate.js"

const platform = Layer.merge(NodeFileSystem.layer, NodePath.layer)

const queued = (id: string) =>
  new Session.Session({
    version: Session.currentVersion,
    id,
    query: `What about ${id}?`,
    createdAt: 1,
    updatedAt: 1,
    config: ResearchConfig.defaults,
    status: "queued",
    rounds: [],
    sources: [],
    metrics: [],
    usage: []
  })

const ids = Array.from({ length: 12 }, (_, i) => `accepted-${i}`)

describe("FileSessionStore, sessions saved at once", () => {
  it.scopedLive(
    "share a sync of the sessions folder, and each save returns only after one begun once its folder was made",
    () =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const directory = yield* fs.makeTempDirectoryScoped({ prefix: "deep-research-group-" })
        const calls: Array<string> = []
        const allMade = yield* Deferred.make<void>()
        let armed = false
        const native: NativeFiles.NativeFiles = {
          ...NativeFiles.node,
          makeDirectory: (path, mode) =>
            Effect.tap(NativeFiles.node.makeDirectory(path, mode), () =>
              Effect.gen(function* () {
                calls.push(`made ${nodePath.basename(path)}`)
                if (calls.filter((call) => call.startsWith("made accepted-")).length === ids.length) {
                  yield* Deferred.succeed(allMade, undefined)
                }
              })
            ),
          syncFolder: (folder) =>
            folder !== directory
              ? NativeFiles.node.syncFolder(folder)
              : Effect.gen(function* () {
                  calls.push("sync begins")
                  // The first sync is held until every folder is made: the callers that come meanwhile wait for the next.
                  if (armed && calls.filter((call) => call === "sync begins").length === 1)
                    yield* Deferred.await(allMade)
                  yield* NativeFiles.node.syncFolder(folder)
                })
        }
        const store = yield* FileSessionStore.make({ directory, native })
        // The sessions folder itself, made first, so that only the sessions' folders are made below.
        yield* store.saveArtefact("first", "mark.json", "{}")
        calls.length = 0
        armed = true
        yield* Effect.forEach(
          ids,
          (id) => Effect.tap(store.save(queued(id)), () => Effect.sync(() => calls.push(`saved ${id}`))),
          { concurrency: "unbounded" }
        )
        const syncs = calls.flatMap((call, at) => (call === "sync begins" ? [at] : []))
        assert.isAtMost(syncs.length, 2, calls.join("\n"))
        for (const id of ids) {
          const made = calls.indexOf(`made ${id}`)
          const saved = calls.indexOf(`saved ${id}`)
          assert.isTrue(
            syncs.some((sync) => sync > made && sync < saved),
            `${id}: no sync of the sessions folder between its folder and its save\n${calls.join("\n")}`
          )
        }
        const reopened = yield* FileSessionStore.make({ directory })
        for (const id of ids) assert.strictEqual((yield* reopened.load(id)).status, "queued")
      }).pipe(Effect.provide(platform))
  )

  it.scopedLive("one whose write fails fails alone, naming its file and the system's reason", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const directory = yield* fs.makeTempDirectoryScoped({ prefix: "deep-research-group-" })
      const native: NativeFiles.NativeFiles = {
        ...NativeFiles.node,
        writeNew: (file, text) =>
          file.includes("accepted-3")
            ? Effect.fail(
                new SystemError({
                  reason: "Unknown",
                  module: "FileSystem",
                  method: "write",
                  pathOrDescriptor: file,
                  description: "ENOSPC: no space left on device"
                })
              )
            : NativeFiles.node.writeNew(file, text)
      }
      const store = yield* FileSessionStore.make({ directory, native })
      const exits = yield* Effect.forEach(ids, (id) => Effect.exit(store.save(queued(id))), {
        concurrency: "unbounded"
      })
      exits.forEach((exit, i) => {
        if (i !== 3) return assert.isTrue(Exit.isSuccess(exit), `${ids[i]} failed`)
        assert.isTrue(Exit.isFailure(exit))
        if (Exit.isSuccess(exit)) return
        const message = String(Cause.squash(exit.cause))
        assert.include(message, nodePath.join(directory, "accepted-3", "session.json"))
        assert.include(message, "no space left on device")
      })
      const reopened = yield* FileSessionStore.make({ directory })
      for (const id of ids.filter((id) => id !== "accepted-3")) {
        assert.strictEqual((yield* reopened.load(id)).status, "queued")
      }
      assert.strictEqual((yield* Effect.flip(reopened.load("accepted-3")))._tag, "SessionNotFound")
    }).pipe(Effect.provide(platform))
  )
})

describe("FolderSyncs", () => {
  it.live("a caller that asks while a sync runs waits for the next one, which it shares with the others", () =>
    Effect.gen(function* () {
      const log: Array<string> = []
      const release = yield* Deferred.make<void>()
      let count = 0
      const syncs = FolderSyncs.make(() =>
        Effect.gen(function* () {
          const n = ++count
          log.push(`sync ${n} begins`)
          if (n === 1) yield* Deferred.await(release)
          log.push(`sync ${n} ends`)
        })
      )
      const first = yield* Effect.fork(Effect.tap(syncs("/f"), () => Effect.sync(() => log.push("first returns"))))
      while (count === 0) yield* Effect.yieldNow()
      const later = yield* Effect.fork(
        Effect.forEach([1, 2, 3], (i) => Effect.tap(syncs("/f"), () => Effect.sync(() => log.push(`later ${i}`))), {
          concurrency: "unbounded"
        })
      )
      yield* Effect.yieldNow()
      yield* Deferred.succeed(release, undefined)
      yield* Effect.all([first.await, later.await])
      assert.strictEqual(count, 2)
      assert.deepStrictEqual(log.slice(0, 3), ["sync 1 begins", "sync 1 ends", "first returns"])
      assert.strictEqual(log.indexOf("sync 2 ends") < log.indexOf("later 1"), true, log.join("\n"))
    })
  )
})

describe("PoolGate", () => {
  it("lets as many calls in as it has places, and a session's creation before the calls that waited longer", () => {
    const gate = PoolGate.make(1)
    const order: Array<string> = []
    const dones: Array<() => void> = []
    const call = (name: string) => (done: () => void) => {
      order.push(name)
      dones.push(done)
    }
    gate.enter(false, call("checkpoint 1"))
    gate.enter(false, call("checkpoint 2"))
    const withdraw = gate.enter(false, call("withdrawn"))
    gate.enter(true, call("creation"))
    withdraw()
    assert.deepStrictEqual(order, ["checkpoint 1"])
    dones.shift()?.()
    assert.deepStrictEqual(order, ["checkpoint 1", "creation"])
    dones.shift()?.()
    dones.shift()?.()
    assert.deepStrictEqual(order, ["checkpoint 1", "creation", "checkpoint 2"])
  })
})
