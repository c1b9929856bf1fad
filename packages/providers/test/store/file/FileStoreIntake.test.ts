/**
 * The file store's intake journal (`intake: true`): a session asked for is durable once a line of the process's
 * journal is synced, read from there until its folder is made, and made in its folder right after; what a stopped
 * process journaled is made by the next store to open, deleted sessions excepted.
 */
import { ResearchConfig, Session } from "@deep-research/core"
import { FileSessionStore } from "@deep-research/providers"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"

const NodeLayer = Layer.merge(NodeFileSystem.layer, NodePath.layer)

/** A host whose processes are alive only when listed. */
const hostWith = (alive: ReadonlyArray<number>): FileSessionStore.Host => ({
  pid: 4242,
  hostname: "intake-test",
  isAlive: (pid) => pid === 4242 || alive.includes(pid)
})

const folder = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(nodePath.join(os.tmpdir(), "deep-research-intake-"))),
  (directory) => Effect.sync(() => fs.rmSync(directory, { recursive: true, force: true }))
)

const queued = (id: string, createdAt = 1_700_000_000_000) =>
  new Session.Session({
    version: Session.currentVersion,
    id,
    query: `What about ${id}?`,
    createdAt,
    updatedAt: createdAt,
    config: ResearchConfig.defaults,
    status: "queued",
    rounds: [],
    sources: [],
    metrics: [],
    usage: [],
    phasesCompleted: []
  })

const storeIn = (directory: string, alive: ReadonlyArray<number> = []) =>
  FileSessionStore.make({
    directory,
    intake: true,
    host: hostWith(alive),
    native: FileSessionStore.nodeNative
  }).pipe(Effect.provide(NodeLayer))

const storedText = (session: Session.Session) =>
  Effect.map(Session.encode(session), (encoded) => `${JSON.stringify(encoded, null, 2)}\n`)

/** A journal as a process of the test host left it: one record a line, a last line cut short. */
const leaveJournal = (directory: string, pid: number, lines: ReadonlyArray<unknown>, token = "abc123") => {
  const intake = nodePath.join(directory, ".intake")
  fs.mkdirSync(intake, { recursive: true })
  const file = nodePath.join(intake, `intake-test-${pid}-${token}.jsonl`)
  fs.writeFileSync(file, `${lines.map((line) => JSON.stringify(line)).join("\n")}\n{"session":"dr-2024`)
  return file
}

const sessionFile = (directory: string, id: string) => nodePath.join(directory, id, "session.json")

describe("the file store's intake journal", () => {
  it.scoped("a session asked for is read and listed at once, and its folder made right after", () =>
    Effect.gen(function* () {
      // A store whose folders do not exist yet: the journal makes them.
      const directory = nodePath.join(yield* folder, "store", "sessions")
      const store = yield* storeIn(directory)
      const id = "dr-20261128-120000-abcdef"
      yield* store.save(queued(id))
      yield* store.saveArtefact(id, "mark.json", '{"mark": true}\n')
      assert.strictEqual((yield* store.load(id)).query, `What about ${id}?`)
      const listed = yield* store.list
      assert.deepStrictEqual(
        listed.map((summary) => [summary.id, summary.status]),
        [[id, "queued"]]
      )
      assert.deepStrictEqual(yield* store.artefact(id, "mark.json"), Option.some('{"mark": true}\n'))
      // A lock waits for the folder; then the session's file and its artefact are there, the journal gone.
      yield* Effect.scoped(store.lock(id))
      assert.isTrue(fs.existsSync(sessionFile(directory, id)))
      assert.strictEqual(fs.readFileSync(nodePath.join(directory, id, "mark.json"), "utf8"), '{"mark": true}\n')
      assert.deepStrictEqual(fs.readdirSync(nodePath.join(directory, ".intake")), [], "the journal is removed")
      // The journal is no session: nothing else is listed.
      assert.deepStrictEqual(
        (yield* store.list).map((summary) => summary.id),
        [id]
      )
    })
  )

  it.scoped("a session already stored is saved in its folder, not journaled", () =>
    Effect.gen(function* () {
      const directory = yield* folder
      const store = yield* storeIn(directory)
      const id = "dr-20261128-120001-abcdef"
      yield* store.save(queued(id))
      yield* Effect.scoped(store.lock(id))
      yield* store.save(new Session.Session({ ...queued(id), status: "cancelled" }))
      assert.strictEqual((yield* store.load(id)).status, "cancelled")
      const onDisk = Schema.decodeUnknownSync(Schema.Struct({ status: Schema.String }))(
        JSON.parse(fs.readFileSync(sessionFile(directory, id), "utf8"))
      )
      assert.strictEqual(onDisk.status, "cancelled")
    })
  )

  it.scoped("what a stopped process journaled is made when a store opens; deletions and live journals are kept", () =>
    Effect.gen(function* () {
      const directory = yield* folder
      const kept = "dr-20261128-120002-abcdef"
      const deleted = "dr-20261128-120003-abcdef"
      const onDisk = "dr-20261128-120004-abcdef"
      const live = "dr-20261128-120005-abcdef"
      // One of the sessions has its folder already, with a later state than the journal's.
      fs.mkdirSync(nodePath.join(directory, onDisk), { recursive: true })
      fs.writeFileSync(
        sessionFile(directory, onDisk),
        yield* storedText(new Session.Session({ ...queued(onDisk), status: "completed" }))
      )
      const stopped = leaveJournal(directory, 991, [
        { session: kept, text: yield* storedText(queued(kept)) },
        { artefact: "simulated.json", of: kept, text: '{"simulated": true}\n' },
        { session: deleted, text: yield* storedText(queued(deleted)) },
        { gone: deleted },
        { session: onDisk, text: yield* storedText(queued(onDisk)) }
      ])
      const running = leaveJournal(directory, 77, [{ session: live, text: yield* storedText(queued(live)) }])
      // Left by an earlier process that had this one's pid (a restarted container): not this process's own.
      const restarted = "dr-20261128-120008-abcdef"
      const samePid = leaveJournal(
        directory,
        4242,
        [{ session: restarted, text: yield* storedText(queued(restarted)) }],
        "old999"
      )
      const store = yield* storeIn(directory, [77])
      assert.strictEqual((yield* store.load(kept)).status, "queued")
      assert.deepStrictEqual(yield* store.artefact(kept, "simulated.json"), Option.some('{"simulated": true}\n'))
      assert.isFalse(fs.existsSync(nodePath.join(directory, deleted)))
      assert.strictEqual((yield* store.load(onDisk)).status, "completed")
      assert.isFalse(fs.existsSync(stopped), "the replayed journal is removed")
      assert.isFalse(fs.existsSync(samePid), "so is the journal of an earlier process with this pid")
      assert.strictEqual((yield* store.load(restarted)).status, "queued")
      assert.isTrue(fs.existsSync(running), "a running process's journal is its own")
      assert.isFalse(fs.existsSync(nodePath.join(directory, live)))
      assert.sameMembers(
        (yield* store.list).map((summary) => summary.id),
        [kept, onDisk, restarted]
      )
    })
  )

  it.scoped("a session deleted after it was journaled is not made again by a replay of the journal", () =>
    Effect.gen(function* () {
      const directory = yield* folder
      const store = yield* storeIn(directory)
      const id = "dr-20261128-120006-abcdef"
      yield* store.save(queued(id))
      yield* store.delete(id)
      // The journal as the next store would find it had this process stopped now (removed, or holding the deletion).
      const intake = nodePath.join(directory, ".intake")
      for (const own of fs.readdirSync(intake)) {
        fs.renameSync(nodePath.join(intake, own), nodePath.join(intake, "intake-test-992-zzz.jsonl"))
      }
      const reopened = yield* storeIn(directory)
      assert.isTrue(Option.isNone(yield* Effect.option(reopened.load(id))))
      assert.deepStrictEqual(yield* reopened.list, [])
    })
  )

  it.scoped(
    "a session deleted while a running process's journal holds it is not made when that journal is replayed",
    () =>
      Effect.gen(function* () {
        const directory = yield* folder
        const id = "dr-20261128-120009-abcdef"
        // Accepted by another process, which made its folder and still holds its record.
        fs.mkdirSync(nodePath.join(directory, id), { recursive: true })
        fs.writeFileSync(sessionFile(directory, id), yield* storedText(queued(id)))
        const running = leaveJournal(directory, 77, [{ session: id, text: yield* storedText(queued(id)) }])
        const store = yield* storeIn(directory, [77])
        yield* store.delete(id)
        const tombstone = nodePath.join(directory, ".intake", `${id}.gone`)
        assert.isTrue(fs.existsSync(tombstone))
        // That process stops; the next store to open replays its journal.
        const reopened = yield* storeIn(directory, [])
        assert.isTrue(Option.isNone(yield* Effect.option(reopened.load(id))))
        assert.isFalse(fs.existsSync(running))
        assert.isFalse(fs.existsSync(tombstone), "the tombstone goes once no journal holds the session")
      })
  )
})
