/**
 * What a killed process leaves in the file store, on the real file system: folders with no session (only a lock, a
 * temporary file, `simulated.json`, or nothing) are removed when the store lists its sessions, unless a live process
 * may be making them (a folder that says nothing of its maker is given a minute); a folder holding anything else is listed as corrupt, naming what it holds; temporary files
 * beside a session go when a run next locks it. And a saved session's folders are synced, so that a crash keeps it.
 */
import { ResearchConfig, Session } from "@deep-research/core"
import { FileSessionStore } from "@deep-research/providers"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as fs from "node:fs"

const platform = Layer.merge(NodeFileSystem.layer, NodePath.layer)

/** This process is pid 111; pid 222 is another live process of the host; any other pid is gone. */
const host: FileSessionStore.Host = { pid: 111, hostname: "here", isAlive: (pid) => pid === 111 || pid === 222 }

const lockOf = (pid: number, hostname = "here") =>
  JSON.stringify({ pid, hostname, startedAt: "2026-01-01T00:00:00.000Z", token: `${pid}-1-abc` })

const sessionOf = (id: string) =>
  new Session.Session({
    version: Session.currentVersion,
    id,
    query: `What about ${id}?`,
    createdAt: 1_700_000_000_000,
    updatedAt: 1_700_000_000_000,
    config: ResearchConfig.defaults,
    status: "queued",
    rounds: [],
    sources: [],
    metrics: [],
    usage: []
  })

/** A store over a fresh folder, and a way to lay out session folders in it by hand. */
const setup = Effect.gen(function* () {
  const files = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const directory = yield* files.makeTempDirectoryScoped({ prefix: "deep-research-leftovers-" })
  const store = yield* FileSessionStore.make({ directory, host })
  const folder = (id: string, contents: Record<string, string>, ageMillis = 0) => {
    const dir = path.join(directory, id)
    fs.mkdirSync(dir, { recursive: true })
    for (const [name, text] of Object.entries(contents)) fs.writeFileSync(path.join(dir, name), text)
    const when = new Date(Date.now() - ageMillis)
    fs.utimesSync(dir, when, when)
    return dir
  }
  return { directory, folder, path, store }
})

/** Warnings logged while `effect` runs. */
const warned = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const lines: Array<string> = []
    const logger = Logger.make(({ message }) => {
      lines.push(Array.isArray(message) ? message.join(" ") : String(message))
    })
    const result = yield* Effect.provide(effect, Logger.replace(Logger.defaultLogger, logger))
    return { result, lines }
  })

describe("what a killed process leaves in the file store", () => {
  it.scopedLive("folders stopped processes left without a session are removed on listing, and the log says so", () =>
    Effect.gen(function* () {
      const { folder, store } = yield* setup
      yield* store.save(sessionOf("kept"))
      const left = [
        folder("only-lock", { lock: lockOf(999) }),
        folder("only-temporary", { "session.json.tmp-999-4-xyz": '{"half":' }),
        folder("lock-and-simulated", { lock: lockOf(999), "simulated.json": '{"simulated": true}\n' }),
        folder("only-simulated-long-ago", { "simulated.json": '{"simulated": true}\n' }, 10 * 60_000),
        folder("empty-long-ago", {}, 10 * 60_000)
      ]
      const { lines, result } = yield* warned(store.list)
      assert.deepStrictEqual(
        result.map((summary) => [summary.id, summary.status]),
        [["kept", "queued"]]
      )
      for (const dir of left) {
        assert.isFalse(fs.existsSync(dir), `${dir} is removed`)
        assert.isTrue(
          lines.some((line) => line.includes(`removed ${dir}`)),
          `the log names ${dir}`
        )
      }
    }).pipe(Effect.provide(platform))
  )

  it.scopedLive("a folder a live process may be making is left alone, and not listed", () =>
    Effect.gen(function* () {
      const { folder, store } = yield* setup
      const making = [
        folder("locked-by-a-live-run", { lock: lockOf(222) }),
        folder("locked-on-another-host", { lock: lockOf(999, "elsewhere") }),
        folder("written-by-a-live-run", { "session.json.tmp-222-1-abc": "{" }),
        folder("just-made", {}),
        folder("just-marked-simulated", { "simulated.json": '{"simulated": true}\n' })
      ]
      assert.deepStrictEqual(yield* store.list, [])
      for (const dir of making) assert.isTrue(fs.existsSync(dir), `${dir} is kept`)
    }).pipe(Effect.provide(platform))
  )

  it.scopedLive(
    "a folder with no session file that holds a run's files is listed as corrupt, naming them, and kept",
    () =>
      Effect.gen(function* () {
        const { folder, store } = yield* setup
        const dir = folder("half-deleted", { "events.jsonl": "", "report.md": "# A report\n", lock: lockOf(999) })
        const [listed] = yield* store.list
        assert.strictEqual(listed?.id, "half-deleted")
        assert.strictEqual(listed?.status, "corrupt")
        assert.include(listed?.error, dir)
        assert.include(listed?.error, "events.jsonl, report.md")
        assert.isTrue(fs.existsSync(dir))
      }).pipe(Effect.provide(platform))
  )

  it.scopedLive("a run locking a session removes the temporary files stopped processes left beside it", () =>
    Effect.gen(function* () {
      const { directory, path, store } = yield* setup
      yield* store.save(sessionOf("resumed"))
      const dir = path.join(directory, "resumed")
      fs.writeFileSync(path.join(dir, "session.json.tmp-999-2-q"), "{")
      fs.writeFileSync(path.join(dir, "lock.stale-999-3-r"), lockOf(999))
      fs.writeFileSync(path.join(dir, "evaluation.json.tmp-222-1-z"), "{")
      const { lines } = yield* warned(Effect.scoped(store.lock("resumed")))
      assert.deepStrictEqual(fs.readdirSync(dir).sort(), ["evaluation.json.tmp-222-1-z", "session.json"])
      assert.isTrue(lines.some((line) => line.includes(`removed 2 temporary file(s)`) && line.includes(dir)))
    }).pipe(Effect.provide(platform))
  )

  it.scopedLive("a new session's save syncs its file's folder and the folder that holds it", () =>
    Effect.gen(function* () {
      const files = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      const directory = yield* files.makeTempDirectoryScoped({ prefix: "deep-research-leftovers-" })
      const synced: Array<string> = []
      // The file system's own, with every sync of an opened file or folder noted by its path.
      const noting: FileSystem.FileSystem = {
        ...files,
        open: (file, options) =>
          Effect.map(
            files.open(file, options),
            (handle) =>
              new Proxy(handle, {
                get: (target, key) =>
                  key === "sync"
                    ? Effect.zipRight(
                        Effect.sync(() => synced.push(file)),
                        target.sync
                      )
                    : Reflect.get(target, key)
              })
          )
      }
      const store = yield* FileSessionStore.make({ directory: path.join(directory, "sessions"), host }).pipe(
        Effect.provideService(FileSystem.FileSystem, noting)
      )
      yield* store.save(sessionOf("acknowledged"))
      assert.include(synced, path.join(directory, "sessions", "acknowledged"))
      assert.include(synced, path.join(directory, "sessions"))
      assert.include(synced, directory)
    }).pipe(Effect.provide(platform))
  )
})
