/**
 * The files the file store keeps open while a run holds a session: its event log, kept open for appending, and its
 * folder, kept open for syncing; both closed when the run lets the session go, and everything written through them read
 * back by another store (another process) afterwards. Also `HeldHandles` alone.
 */
import { ResearchConfig, ResearchEvents, Session } from "@deep-research/core"
import { FileSessionStore } from "@deep-research/providers"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import { assert, describe, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"

import * as HeldHandles from "../../../src/store/file/heldHandles.js"

const platform = Layer.merge(NodeFileSystem.layer, NodePath.layer)

const checkpointed = (label: string, timestamp: number) =>
  Schema.decodeUnknownSync(ResearchEvents.ResearchEvent)({ _tag: "Checkpointed", label, sessionId: "held", timestamp })

const session = new Session.Session({
  version: Session.currentVersion,
  id: "held",
  query: "q",
  createdAt: 1,
  updatedAt: 1,
  config: ResearchConfig.defaults,
  status: "running",
  rounds: [],
  sources: [],
  metrics: [],
  usage: []
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

const labelsOf = (events: ReadonlyArray<ResearchEvents.ResearchEvent>) =>
  events.flatMap((event) => (event._tag === "Checkpointed" ? [event.label] : []))

describe("FileSessionStore, the event log of a held session", () => {
  /** The held log's case, with the store writing through the FileSystem or through `writeSync`. */
  const heldLog = (writeSync: FileSessionStore.Options["writeSync"]) =>
    Effect.gen(function* () {
      const files = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      const directory = yield* files.makeTempDirectoryScoped({ prefix: "deep-research-held-log-" })
      const log = path.join(directory, "held", "events.jsonl")
      const store = yield* FileSessionStore.make({ directory, writeSync })
      yield* Effect.scoped(
        Effect.gen(function* () {
          yield* store.lock("held")
          yield* store.appendEvents("held", [checkpointed("1", 1)])
          // Appends one after the other, appends at once (queued behind each other and behind a checkpoint), and a
          // checkpoint between them: all through the one open log.
          yield* store.appendEvents("held", [checkpointed("2", 2)])
          yield* Effect.all(
            [store.save(session), ...[3, 4, 5, 6].map((n) => store.appendEvents("held", [checkpointed(String(n), n)]))],
            { concurrency: "unbounded", discard: true }
          )
          yield* store.appendEvents("held", [checkpointed("7", 7)])
          assert.strictEqual(descriptorsOn(log), 1)
        })
      )
      assert.strictEqual(descriptorsOn(log), 0, "letting the session go closes its log")
      // Another process reads every event: nothing stayed in this one.
      const other = yield* FileSessionStore.make({ directory })
      const labels = labelsOf(yield* other.events("held"))
      assert.deepStrictEqual([...labels].sort(), ["1", "2", "3", "4", "5", "6", "7"])
      assert.deepStrictEqual(labels.slice(0, 2), ["1", "2"])
      assert.strictEqual(labels[6], "7")
      // Nothing holds the file any more: it can be moved away, and the next run of the session starts a new log.
      fs.renameSync(log, `${log}.old`)
      yield* Effect.scoped(Effect.zipRight(store.lock("held"), store.appendEvents("held", [checkpointed("8", 8)])))
      assert.deepStrictEqual(labelsOf(yield* other.events("held")), ["8"])
    }).pipe(Effect.provide(platform))

  it.scoped("stays open while the run holds the session, is closed when it lets go, and reads back whole", () =>
    heldLog(undefined)
  )

  it.scoped("the same, appended with a synchronous write on the open descriptor (as on Node)", () =>
    Effect.gen(function* () {
      let writes = 0
      yield* heldLog((fd, bytes, offset) => {
        writes++
        return fs.writeSync(fd, bytes, offset)
      })
      assert.isAtLeast(writes, 3, "the held runs' appends (those queued together in one write) went through writeSync")
    })
  )

  it.scoped("a synchronous write that fails ends the run with the log's path and the system's reason", () =>
    Effect.gen(function* () {
      const files = yield* FileSystem.FileSystem
      const directory = yield* files.makeTempDirectoryScoped({ prefix: "deep-research-held-log-" })
      const store = yield* FileSessionStore.make({
        directory,
        writeSync: () => {
          throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" })
        }
      })
      const exit = yield* Effect.exit(
        Effect.scoped(Effect.zipRight(store.lock("held"), store.appendEvents("held", [checkpointed("1", 1)])))
      )
      assert.isTrue(Exit.isFailure(exit))
      const message = Exit.isFailure(exit) ? Cause.pretty(exit.cause) : ""
      assert.include(message, "cannot append to")
      assert.include(message, "events.jsonl")
      assert.include(message, "no space left on device")
    }).pipe(Effect.provide(platform))
  )

  it.scoped(
    "appends of a held session while nothing else writes it go to its log at once, a write each, in order",
    () =>
      Effect.gen(function* () {
        const files = yield* FileSystem.FileSystem
        const directory = yield* files.makeTempDirectoryScoped({ prefix: "deep-research-held-log-" })
        let writes = 0
        const store = yield* FileSessionStore.make({
          directory,
          writeSync: (fd, bytes, offset) => {
            writes++
            return fs.writeSync(fd, bytes, offset)
          }
        })
        yield* Effect.scoped(
          Effect.gen(function* () {
            yield* store.lock("held")
            for (const n of [1, 2, 3, 4, 5]) yield* store.appendEvents("held", [checkpointed(String(n), n)])
            yield* store.appendEvents("held", [checkpointed("6", 6), checkpointed("7", 7)])
          })
        )
        assert.strictEqual(writes, 6)
        assert.deepStrictEqual(labelsOf(yield* store.events("held")), ["1", "2", "3", "4", "5", "6", "7"])
      }).pipe(Effect.provide(platform))
  )

  it.scoped(
    "a held log's append torn by a failed write ends the run, and the next append starts a line of its own",
    () =>
      Effect.gen(function* () {
        const files = yield* FileSystem.FileSystem
        const directory = yield* files.makeTempDirectoryScoped({ prefix: "deep-research-held-log-" })
        let calls = 0
        const store = yield* FileSessionStore.make({
          directory,
          writeSync: (fd, bytes, offset) => {
            calls++
            // The third append: ten bytes reach the disk, then the disk is full.
            if (calls === 3) return fs.writeSync(fd, bytes, offset, 10)
            if (calls === 4)
              throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" })
            return fs.writeSync(fd, bytes, offset)
          }
        })
        yield* Effect.scoped(
          Effect.gen(function* () {
            yield* store.lock("held")
            yield* store.appendEvents("held", [checkpointed("1", 1)])
            yield* store.appendEvents("held", [checkpointed("2", 2)])
            const exit = yield* Effect.exit(store.appendEvents("held", [checkpointed("3", 3)]))
            assert.isTrue(Exit.isFailure(exit))
            const message = Exit.isFailure(exit) ? Cause.pretty(exit.cause) : ""
            assert.include(message, "cannot append to")
            assert.include(message, "events.jsonl")
            assert.include(message, "no space left on device")
            yield* store.appendEvents("held", [checkpointed("4", 4)])
          })
        )
        assert.deepStrictEqual(labelsOf(yield* store.events("held")), ["1", "2", "4"])
      }).pipe(Effect.provide(platform))
  )

  it.scoped("a second run of the session appends after the first run's events, through a log of its own", () =>
    Effect.gen(function* () {
      const files = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      const directory = yield* files.makeTempDirectoryScoped({ prefix: "deep-research-held-log-" })
      const log = path.join(directory, "held", "events.jsonl")
      const first = yield* FileSessionStore.make({ directory })
      yield* Effect.scoped(Effect.zipRight(first.lock("held"), first.appendEvents("held", [checkpointed("1", 1)])))
      // The next run is another process, which finds a log written by someone else.
      const second = yield* FileSessionStore.make({ directory })
      yield* Effect.scoped(
        Effect.gen(function* () {
          yield* second.lock("held")
          yield* second.appendEvents("held", [checkpointed("2", 2)])
          yield* second.appendEvents("held", [checkpointed("3", 3)])
        })
      )
      assert.strictEqual(descriptorsOn(log), 0)
      assert.deepStrictEqual(labelsOf(yield* first.events("held")), ["1", "2", "3"])
      assert.strictEqual(fs.statSync(log).mode & 0o777, 0o600)
    }).pipe(Effect.provide(platform))
  )
})

describe("FileSessionStore, the folder of a held session", () => {
  it.scoped(
    "stays open for the checkpoints' syncs while the run holds the session, and is closed when it lets go",
    () =>
      Effect.gen(function* () {
        const files = yield* FileSystem.FileSystem
        const path = yield* Path.Path
        const directory = yield* files.makeTempDirectoryScoped({ prefix: "deep-research-held-folder-" })
        const folder = path.join(directory, "held")
        const store = yield* FileSessionStore.make({ directory })
        yield* Effect.scoped(
          Effect.gen(function* () {
            yield* store.lock("held")
            yield* store.save(session)
            yield* store.saveArtefact("held", "notes.json", "{}")
            yield* store.save(session)
            assert.strictEqual(descriptorsOn(folder), 1)
          })
        )
        assert.strictEqual(descriptorsOn(folder), 0)
        // Without the lock, each replaced file still syncs the folder, which is left closed.
        yield* store.save(session)
        assert.strictEqual(descriptorsOn(folder), 0)
        const other = yield* FileSessionStore.make({ directory })
        assert.deepStrictEqual(yield* other.load("held"), session)
        assert.deepStrictEqual(yield* other.artefact("held", "notes.json"), Option.some("{}"))
        assert.deepStrictEqual(fs.readdirSync(folder).sort(), ["notes.json", "session.json"])
      }).pipe(Effect.provide(platform))
  )
})

describe("HeldHandles", () => {
  it.scoped("opens a held session's file at its first use, keeps that one open, and closes it on release", () =>
    Effect.gen(function* () {
      const files = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      const directory = yield* files.makeTempDirectoryScoped({ prefix: "deep-research-held-handles-" })
      const fileOf = (id: string) => path.join(directory, id)
      let opens = 0
      const handles = HeldHandles.make((id) =>
        Effect.zipRight(
          Effect.sync(() => opens++),
          files.open(fileOf(id), { flag: "a" })
        )
      )
      assert.isTrue(Option.isNone(handles.get("a")), "not held: the caller opens the file itself")
      yield* handles.hold("a")
      assert.strictEqual(handles.opened("a"), undefined)
      assert.strictEqual(opens, 0, "holding opens nothing")
      const first = yield* Option.getOrThrow(handles.get("a"))
      const second = yield* Option.getOrThrow(handles.get("a"))
      assert.strictEqual(first, second)
      assert.strictEqual(handles.opened("a"), first)
      assert.strictEqual(opens, 1)
      assert.strictEqual(descriptorsOn(fileOf("a")), 1)
      yield* handles.release("a")
      assert.strictEqual(descriptorsOn(fileOf("a")), 0)
      assert.isTrue(Option.isNone(handles.get("a")))
      // A file that cannot be opened fails its use, and is tried again at the next.
      const failing = HeldHandles.make((id) => files.open(path.join(directory, "no-such-folder", id), { flag: "r" }))
      yield* failing.hold("b")
      assert.isTrue((yield* Effect.either(Option.getOrThrow(failing.get("b"))))._tag === "Left")
      assert.strictEqual(failing.opened("b"), undefined)
      yield* failing.release("b")
    }).pipe(Effect.provide(platform))
  )
})
