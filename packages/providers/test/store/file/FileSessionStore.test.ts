import {
  Errors,
  LanguageModel,
  ModelRouter,
  Pipeline,
  ResearchConfig,
  ResearchEvents,
  Session,
  SessionStore,
  Summarizer,
  Usage
} from "@deep-research/core"
import { ScriptedModel, StaticWeb } from "@deep-research/core/testing"
import { AnthropicLanguageModel, FileSessionStore } from "@deep-research/providers"
import { Emulator } from "@deep-research/emulator"
import * as PlatformError from "@effect/platform/Error"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import { assert, describe, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Queue from "effect/Queue"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import { spawn, type ChildProcess } from "node:child_process"
import * as os from "node:os"
import * as nodePath from "node:path"
import { fileURLToPath } from "node:url"

// =============================================================================
// Helpers
// =============================================================================

const NodeLayer = Layer.merge(NodeFileSystem.layer, NodePath.layer)

const fixtures = fileURLToPath(new URL("../../fixtures/sessions", import.meta.url))

/** A store over a fresh temporary folder, removed when the test's scope closes. */
const setup = (options: Partial<FileSessionStore.Options> = {}) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const directory = yield* fs.makeTempDirectoryScoped({ prefix: "deep-research-store-" })
    const store = yield* FileSessionStore.make({ directory, ...options })
    return { fs, path, directory, store }
  })

const makeSession = (id: string, fields: Partial<ConstructorParameters<typeof Session.Session>[0]> = {}) =>
  new Session.Session({
    version: Session.currentVersion,
    id,
    query: `What about ${id}?`,
    createdAt: 1_700_000_000_000,
    updatedAt: 1_700_000_000_000,
    config: ResearchConfig.defaults,
    status: "running",
    rounds: [],
    sources: [],
    metrics: [],
    usage: [],
    ...fields
  })

/** Log lines written while `effect` runs, as `LEVEL message`. */
const withLogs = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const lines: Array<string> = []
    const logger = Logger.make(({ logLevel, message }) => {
      lines.push(`${logLevel.label} ${Array.isArray(message) ? message.join(" ") : String(message)}`)
    })
    const result = yield* Effect.provide(effect, Logger.replace(Logger.defaultLogger, logger))
    return { result, lines }
  })

/** Every file under a folder, recursively, with its contents. */
const readTree = (directory: string) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const names = yield* fs.readDirectory(directory, { recursive: true })
    const files: Array<{ readonly name: string; readonly text: string }> = []
    for (const name of names) {
      const file = path.join(directory, name)
      const info = yield* fs.stat(file)
      if (info.type === "File") files.push({ name, text: yield* fs.readFileString(file) })
    }
    return files
  })

const event = (fields: ResearchEvents.EventInput, sessionId: string, timestamp = 1): ResearchEvents.ResearchEvent =>
  Schema.decodeUnknownSync(ResearchEvents.ResearchEvent)({ ...fields, sessionId, timestamp })

// =============================================================================
// Saving and loading
// =============================================================================

describe("FileSessionStore", () => {
  it.scopedLive("a saved session loads back equal", () =>
    Effect.gen(function* () {
      const { store } = yield* setup()
      const session = makeSession("round-trip", { status: "completed", briefFallback: true })
      yield* store.save(session)
      const loaded = yield* store.load("round-trip")
      assert.deepStrictEqual(loaded, session)
    }).pipe(Effect.provide(NodeLayer))
  )

  it.scopedLive("save writes session.json in the session's folder and leaves no temporary file", () =>
    Effect.gen(function* () {
      const { fs, path, directory, store } = yield* setup()
      yield* store.save(makeSession("layout"))
      yield* store.save(makeSession("layout", { status: "completed" }))
      const names = yield* fs.readDirectory(path.join(directory, "layout"))
      assert.deepStrictEqual(names, ["session.json"])
      const stored: unknown = JSON.parse(yield* fs.readFileString(path.join(directory, "layout", "session.json")))
      assert.include(JSON.stringify(stored), '"status":"completed"')
    }).pipe(Effect.provide(NodeLayer))
  )

  it.scopedLive("an interrupted save (a temporary file never renamed) leaves the previous checkpoint", () =>
    Effect.gen(function* () {
      const { fs, path, directory, store } = yield* setup()
      yield* store.save(makeSession("crash", { status: "running", updatedAt: 1 }))
      const folder = path.join(directory, "crash")
      // What a kill between writing the temporary file and renaming it leaves behind.
      yield* fs.writeFileString(path.join(folder, "session.json.tmp-123-1-abc"), '{"version":1,"id":"cra')
      const loaded = yield* store.load("crash")
      assert.strictEqual(loaded.updatedAt, 1)
      const listed = yield* store.list
      assert.deepStrictEqual(
        listed.map((s) => s.id),
        ["crash"]
      )
    }).pipe(Effect.provide(NodeLayer))
  )

  it.scopedLive("load of an unknown session fails with SessionNotFound", () =>
    Effect.gen(function* () {
      const { store } = yield* setup()
      const error = yield* Effect.flip(store.load("nobody"))
      assert.strictEqual(error._tag, "SessionNotFound")
    }).pipe(Effect.provide(NodeLayer))
  )

  const badIds = ["../escape", "a/b", "a\\b", "..", ".", "", "-leading", "a b", "naïve", "x".repeat(129), "ok/../../x"]

  it.scopedLive("ids that could name another path are InvalidInput for every method, and nothing is written", () =>
    Effect.gen(function* () {
      const { fs, directory, store } = yield* setup()
      for (const id of badIds) {
        const attempts: ReadonlyArray<Effect.Effect<unknown, { readonly _tag: string }, Scope.Scope>> = [
          store.save(makeSessionUnchecked(id)),
          store.load(id),
          store.appendEvents(id, [event({ _tag: "SessionStarted", query: "q" }, id)]),
          store.events(id),
          store.saveReport(id, "# report"),
          store.delete(id),
          store.lock(id)
        ]
        for (const attempt of attempts) {
          const error = yield* Effect.flip(attempt)
          assert.strictEqual(error._tag, "InvalidInput", `id ${JSON.stringify(id)}`)
        }
      }
      assert.deepStrictEqual(yield* fs.readDirectory(directory), [])
      assert.isFalse(yield* fs.exists(`${directory}/../escape`))
    }).pipe(Effect.provide(NodeLayer))
  )

  // =============================================================================
  // Events and report
  // =============================================================================

  it.scopedLive("appended events read back in order, one JSON line each", () =>
    Effect.gen(function* () {
      const { fs, path, directory, store } = yield* setup()
      const first = [
        event({ _tag: "SessionStarted", query: "q" }, "events", 1),
        event({ _tag: "PhaseStarted", phase: "brief" }, "events", 2)
      ]
      const second = [event({ _tag: "Checkpointed", label: "brief" }, "events", 3)]
      yield* store.appendEvents("events", first)
      yield* store.appendEvents("events", second)
      assert.deepStrictEqual(yield* store.events("events"), [...first, ...second])
      const lines = (yield* fs.readFileString(path.join(directory, "events", "events.jsonl"))).split("\n")
      assert.deepStrictEqual(lines, [...[...first, ...second].map((e) => ResearchEvents.encodeJson(e)), ""])
    }).pipe(Effect.provide(NodeLayer))
  )

  it.scopedLive("concurrent appends to one session all read back once, each caller's in order, in fewer writes", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      let appendWrites = 0
      const counting = FileSystem.FileSystem.of({
        ...fs,
        writeFile: (file, data, options) => {
          if (options?.flag === "a") appendWrites++
          return fs.writeFile(file, data, options)
        }
      })
      const { store } = yield* setup().pipe(Effect.provideService(FileSystem.FileSystem, counting))
      const callers = 20
      const perCaller = 3
      yield* Effect.forEach(
        Array.from({ length: callers }, (_, caller) => caller),
        (caller) =>
          Effect.forEach(
            Array.from({ length: perCaller }, (_, step) => step),
            (step) =>
              store.appendEvents("busy", [
                event({ _tag: "Checkpointed", label: `caller ${caller} step ${step}` }, "busy", caller * 10 + step)
              ]),
            { discard: true }
          ),
        { concurrency: "unbounded", discard: true }
      )
      const labels = (yield* store.events("busy")).flatMap((e) => (e._tag === "Checkpointed" ? [e.label] : []))
      assert.strictEqual(labels.length, callers * perCaller)
      assert.strictEqual(new Set(labels).size, callers * perCaller)
      for (let caller = 0; caller < callers; caller++) {
        const own = labels.filter((label) => label.startsWith(`caller ${caller} `))
        assert.deepStrictEqual(
          own,
          Array.from({ length: perCaller }, (_, step) => `caller ${caller} step ${step}`)
        )
      }
      assert.isAbove(appendWrites, 0)
      assert.isBelow(appendWrites, callers * perCaller)
    }).pipe(Effect.provide(NodeLayer))
  )

  it.scopedLive("a torn last line from a crash is skipped on read, and later appends stay readable", () =>
    Effect.gen(function* () {
      const { fs, path, directory, store } = yield* setup()
      const before = event({ _tag: "SessionStarted", query: "q" }, "torn", 1)
      yield* store.appendEvents("torn", [before])
      const file = path.join(directory, "torn", "events.jsonl")
      const torn = ResearchEvents.encodeJson(event({ _tag: "PhaseStarted", phase: "brief" }, "torn", 2)).slice(0, 25)
      yield* fs.writeFileString(file, torn, { flag: "a" })
      const { result: afterCrash, lines } = yield* withLogs(store.events("torn"))
      assert.deepStrictEqual(afterCrash, [before])
      assert.isTrue(lines.some((line) => line.includes("torn last line") && line.includes(file)))
      // The process that resumes after the crash has a store of its own.
      const resumed = yield* FileSessionStore.make({ directory })
      const after = event({ _tag: "Checkpointed", label: "resumed" }, "torn", 3)
      yield* resumed.appendEvents("torn", [after])
      yield* resumed.appendEvents("torn", [after])
      assert.deepStrictEqual(yield* resumed.events("torn"), [before, after, after])
    }).pipe(Effect.provide(NodeLayer))
  )

  it.scopedLive("the event log is written at once and synced with each checkpoint and when the lock is let go", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      const syncs: Array<string> = []
      const counting = FileSystem.FileSystem.of({
        ...fs,
        open: (file, options) =>
          Effect.map(
            fs.open(file, options),
            (handle) =>
              new Proxy(handle, {
                get: (target, key) =>
                  key === "sync"
                    ? Effect.zipRight(
                        Effect.sync(() => syncs.push(path.basename(file))),
                        target.sync
                      )
                    : Reflect.get(target, key, target)
              })
          )
      })
      const { directory, store } = yield* setup().pipe(Effect.provideService(FileSystem.FileSystem, counting))
      const logSyncs = () => syncs.filter((name) => name === "events.jsonl").length
      const file = path.join(directory, "durable", "events.jsonl")
      yield* Effect.scoped(
        Effect.gen(function* () {
          yield* store.lock("durable")
          yield* store.appendEvents("durable", [event({ _tag: "SessionStarted", query: "q" }, "durable", 1)])
          yield* store.appendEvents("durable", [event({ _tag: "PhaseStarted", phase: "brief" }, "durable", 2)])
          // Written before appendEvents returns: a crash of the process from here on loses neither.
          assert.strictEqual((yield* fs.readFileString(file)).split("\n").length, 3)
          assert.strictEqual(logSyncs(), 0)
          yield* store.save(makeSession("durable"))
          assert.strictEqual(logSyncs(), 1)
          yield* store.save(makeSession("durable"))
          assert.strictEqual(logSyncs(), 1, "nothing new to sync")
          yield* store.appendEvents("durable", [event({ _tag: "Checkpointed", label: "brief" }, "durable", 3)])
          assert.strictEqual(logSyncs(), 1)
        })
      )
      assert.strictEqual(logSyncs(), 2, "the lock's release syncs what the last checkpoint did not")
      assert.strictEqual((yield* store.events("durable")).length, 3)
    }).pipe(Effect.provide(NodeLayer))
  )

  it.scopedLive("a log another process appended to after this store let the session go is checked again", () =>
    Effect.gen(function* () {
      const { fs, path, directory, store } = yield* setup()
      const file = path.join(directory, "shared", "events.jsonl")
      const mine = event({ _tag: "SessionStarted", query: "q" }, "shared", 1)
      yield* Effect.scoped(Effect.zipRight(store.lock("shared"), store.appendEvents("shared", [mine])))
      // Another process resumed the session and was killed in the middle of a line.
      const torn = ResearchEvents.encodeJson(event({ _tag: "PhaseStarted", phase: "brief" }, "shared", 2)).slice(0, 25)
      yield* fs.writeFileString(file, torn, { flag: "a" })
      const later = event({ _tag: "Checkpointed", label: "resumed here again" }, "shared", 3)
      yield* Effect.scoped(Effect.zipRight(store.lock("shared"), store.appendEvents("shared", [later])))
      const { result } = yield* withLogs(store.events("shared"))
      assert.deepStrictEqual(result, [mine, later])
    }).pipe(Effect.provide(NodeLayer))
  )

  it.scopedLive("events of a session that was never stored fail with SessionNotFound", () =>
    Effect.gen(function* () {
      const { store } = yield* setup()
      const error = yield* Effect.flip(store.events("missing"))
      assert.strictEqual(error._tag, "SessionNotFound")
    }).pipe(Effect.provide(NodeLayer))
  )

  it.scopedLive("events of a saved session without events are empty", () =>
    Effect.gen(function* () {
      const { store } = yield* setup()
      yield* store.save(makeSession("quiet"))
      assert.deepStrictEqual(yield* store.events("quiet"), [])
    }).pipe(Effect.provide(NodeLayer))
  )

  it.scopedLive("saveReport writes report.md", () =>
    Effect.gen(function* () {
      const { fs, path, directory, store } = yield* setup()
      yield* store.save(makeSession("reported"))
      yield* store.saveReport("reported", "# Title\n\nBody [1].\n")
      yield* store.saveReport("reported", "# Title\n\nBody, revised [1].\n")
      const text = yield* fs.readFileString(path.join(directory, "reported", "report.md"))
      assert.strictEqual(text, "# Title\n\nBody, revised [1].\n")
    }).pipe(Effect.provide(NodeLayer))
  )

  // =============================================================================
  // Versions and corruption
  // =============================================================================

  const installFixture = (directory: string, name: string) =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      yield* fs.makeDirectory(path.join(directory, name), { recursive: true })
      yield* fs.copyFile(path.join(fixtures, name, "session.json"), path.join(directory, name, "session.json"))
    })

  it.scopedLive("a pre-release (version 0) session is migrated on load", () =>
    Effect.gen(function* () {
      const { directory, store } = yield* setup()
      yield* installFixture(directory, "v0-done")
      const session = yield* store.load("v0-done")
      assert.strictEqual(session.version, Session.currentVersion)
      assert.strictEqual(session.status, "completed")
      assert.isFalse(session.briefFallback)
      assert.strictEqual(session.config.maxSupervisionRounds, 3)
      assert.strictEqual(session.rounds[0]?.results[0]?.findings, "Field studies report a COP of about 2 at -15 C [1].")
      const researcher = session.usage.find((u) => u.role === "researcher")
      assert.deepStrictEqual(
        researcher,
        new Usage.RoleUsage({
          role: "researcher",
          calls: 5,
          inputTokens: 13_000,
          outputTokens: 1_600,
          cachedInputTokens: 2_000,
          reasoningTokens: 50,
          costUsd: 0.032
        })
      )
      assert.deepStrictEqual(
        session.usage.map((u) => u.role),
        ["supervisor", "researcher", "report"]
      )
      const summary = (yield* store.list)[0]
      assert.strictEqual(summary?.costUsd, 0.021 + 0.032 + 0.036)
      // Stored before grounding and failed tool calls were recorded: neither is made up.
      assert.isUndefined(session.report?.grounding)
      assert.isUndefined(summary?.grounding)
      assert.strictEqual(session.rounds[0]?.results[0]?.failedToolCalls, 0)
    }).pipe(Effect.provide(NodeLayer))
  )

  it.scopedLive("saving a migrated session keeps the old file as session.json.v0", () =>
    Effect.gen(function* () {
      const { fs, path, directory, store } = yield* setup()
      yield* installFixture(directory, "v0-done")
      const original = yield* fs.readFileString(path.join(directory, "v0-done", "session.json"))
      const session = yield* store.load("v0-done")
      yield* store.save(session)
      assert.strictEqual(yield* fs.readFileString(path.join(directory, "v0-done", "session.json.v0")), original)
      const reloaded = yield* store.load("v0-done")
      assert.deepStrictEqual(reloaded, session)
    }).pipe(Effect.provide(NodeLayer))
  )

  const writeSessionFile = (directory: string, id: string, text: string) =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      yield* fs.makeDirectory(path.join(directory, id), { recursive: true })
      const file = path.join(directory, id, "session.json")
      yield* fs.writeFileString(file, text)
      return file
    })

  it.scopedLive("a truncated session.json is SessionCorrupt naming the file", () =>
    Effect.gen(function* () {
      const { directory, store } = yield* setup()
      const full = JSON.stringify(yield* encodeSession(makeSession("truncated")))
      const file = yield* writeSessionFile(directory, "truncated", full.slice(0, full.length / 2))
      const error = yield* Effect.flip(store.load("truncated"))
      assert.instanceOf(error, Errors.SessionCorrupt)
      assert.strictEqual(error.path, file)
      assert.include(error.message, file)
      assert.include(error.reason, "truncated")
    }).pipe(Effect.provide(NodeLayer))
  )

  it.scopedLive("an empty session.json is SessionCorrupt", () =>
    Effect.gen(function* () {
      const { directory, store } = yield* setup()
      yield* writeSessionFile(directory, "empty", "")
      const error = yield* Effect.flip(store.load("empty"))
      assert.strictEqual(error._tag, "SessionCorrupt")
    }).pipe(Effect.provide(NodeLayer))
  )

  it.scopedLive("JSON of the wrong shape is SessionCorrupt saying what is wrong", () =>
    Effect.gen(function* () {
      const { directory, store } = yield* setup()
      yield* writeSessionFile(directory, "shape", JSON.stringify({ version: 1, id: "shape", query: 42 }))
      const error = yield* Effect.flip(store.load("shape"))
      assert.instanceOf(error, Errors.SessionCorrupt)
      assert.include(error.reason, "query")
    }).pipe(Effect.provide(NodeLayer))
  )

  it.scopedLive("a session written by a newer version is SessionCorrupt saying so", () =>
    Effect.gen(function* () {
      const { directory, store } = yield* setup()
      yield* writeSessionFile(
        directory,
        "future",
        JSON.stringify({ version: Session.currentVersion + 1, id: "future" })
      )
      const error = yield* Effect.flip(store.load("future"))
      assert.instanceOf(error, Errors.SessionCorrupt)
      assert.include(error.reason, "newer")
    }).pipe(Effect.provide(NodeLayer))
  )

  it.scopedLive("a session.json holding another session's id is SessionCorrupt", () =>
    Effect.gen(function* () {
      const { directory, store } = yield* setup()
      yield* writeSessionFile(directory, "copied", JSON.stringify(yield* encodeSession(makeSession("other"))))
      const error = yield* Effect.flip(store.load("copied"))
      assert.instanceOf(error, Errors.SessionCorrupt)
      assert.include(error.reason, "other")
    }).pipe(Effect.provide(NodeLayer))
  )

  it.scopedLive("save over a corrupt file moves it aside to session.json.corrupt-<timestamp> and says so", () =>
    Effect.gen(function* () {
      const { fs, path, directory, store } = yield* setup()
      const garbage = '{"version":1,"id":"damaged","que'
      const file = yield* writeSessionFile(directory, "damaged", garbage)
      const session = makeSession("damaged")
      const { lines } = yield* withLogs(store.save(session))
      const names = yield* fs.readDirectory(path.join(directory, "damaged"))
      const aside = names.filter((name) => name.startsWith("session.json.corrupt-"))
      assert.strictEqual(aside.length, 1)
      const asidePath = path.join(directory, "damaged", aside[0] ?? "")
      assert.strictEqual(yield* fs.readFileString(asidePath), garbage)
      assert.deepStrictEqual(yield* store.load("damaged"), session)
      assert.isTrue(lines.some((line) => line.startsWith("WARN") && line.includes(file) && line.includes(asidePath)))
    }).pipe(Effect.provide(NodeLayer))
  )

  it.scopedLive("a file replaced behind the store's back is checked again before it is overwritten", () =>
    Effect.gen(function* () {
      const { fs, path, directory, store } = yield* setup()
      yield* store.save(makeSession("replaced"))
      yield* store.load("replaced")
      yield* writeSessionFile(directory, "replaced", "not json at all")
      yield* store.save(makeSession("replaced", { status: "completed" }))
      const names = yield* fs.readDirectory(path.join(directory, "replaced"))
      assert.strictEqual(names.filter((name) => name.startsWith("session.json.corrupt-")).length, 1)
    }).pipe(Effect.provide(NodeLayer))
  )

  // =============================================================================
  // Listing and deleting
  // =============================================================================

  it.scopedLive("a session saved as running that no run holds is listed as interrupted", () =>
    Effect.gen(function* () {
      const { store } = yield* setup()
      yield* store.save(makeSession("left", { createdAt: 1_000 }))
      assert.strictEqual((yield* store.list)[0]?.status, "interrupted")
      yield* Effect.scoped(
        Effect.gen(function* () {
          yield* store.lock("left")
          assert.strictEqual((yield* store.list)[0]?.status, "running")
        })
      )
      assert.strictEqual((yield* store.list)[0]?.status, "interrupted")
    }).pipe(Effect.provide(NodeLayer))
  )

  it.scopedLive("list gives id, status, question, created and cost, newest first", () =>
    Effect.gen(function* () {
      const { store } = yield* setup()
      const cost = new Usage.RoleUsage({
        role: "report",
        calls: 1,
        inputTokens: 10,
        outputTokens: 5,
        cachedInputTokens: 0,
        reasoningTokens: 0,
        costUsd: 0.25
      })
      yield* store.save(makeSession("older", { createdAt: 1_000, status: "completed", usage: [cost] }))
      yield* store.save(makeSession("newer", { createdAt: 2_000, query: "Newest question" }))
      // A running session is listed as running while a run holds it.
      yield* store.lock("newer")
      const listed = yield* store.list
      assert.deepStrictEqual(
        listed.map((s) => [s.id, s.status, s.query, s.createdAt, s.costUsd]),
        [
          ["newer", "running", "Newest question", 2_000, 0],
          ["older", "completed", "What about older?", 1_000, 0.25]
        ]
      )
    }).pipe(Effect.provide(NodeLayer))
  )

  it.scopedLive("a corrupt session is listed with status corrupt and the reason, not breaking the list", () =>
    Effect.gen(function* () {
      const { directory, store } = yield* setup()
      yield* store.save(makeSession("fine"))
      yield* writeSessionFile(directory, "broken", "{")
      const listed = yield* store.list
      const broken = listed.find((s) => s.id === "broken")
      assert.strictEqual(broken?.status, "corrupt")
      assert.include(broken?.error ?? "", "JSON")
      // Saved as running with no run holding it: interrupted.
      assert.strictEqual(listed.find((s) => s.id === "fine")?.status, "interrupted")
    }).pipe(Effect.provide(NodeLayer))
  )

  it.scopedLive("list of a store that has never written anything is empty", () =>
    Effect.gen(function* () {
      const { path, directory } = yield* setup()
      const store = yield* FileSessionStore.make({ directory: path.join(directory, "not-yet") })
      assert.deepStrictEqual(yield* store.list, [])
    }).pipe(Effect.provide(NodeLayer))
  )

  it.scopedLive("delete removes the session's folder", () =>
    Effect.gen(function* () {
      const { fs, path, directory, store } = yield* setup()
      yield* store.save(makeSession("doomed"))
      yield* store.appendEvents("doomed", [event({ _tag: "SessionStarted", query: "q" }, "doomed")])
      yield* store.saveReport("doomed", "# r")
      yield* store.delete("doomed")
      assert.isFalse(yield* fs.exists(path.join(directory, "doomed")))
      assert.strictEqual((yield* Effect.flip(store.load("doomed")))._tag, "SessionNotFound")
    }).pipe(Effect.provide(NodeLayer))
  )

  it.scopedLive("delete of an absent session fails with SessionNotFound", () =>
    Effect.gen(function* () {
      const { store } = yield* setup()
      const error = yield* Effect.flip(store.delete("absent"))
      assert.strictEqual(error._tag, "SessionNotFound")
    }).pipe(Effect.provide(NodeLayer))
  )

  it.scopedLive("delete of a session a live run holds fails with SessionBusy and removes nothing", () =>
    Effect.gen(function* () {
      const { fs, path, directory, store } = yield* setup()
      const other = yield* FileSessionStore.make({ directory })
      yield* store.save(makeSession("in-use"))
      yield* store.lock("in-use")
      const error = yield* Effect.flip(other.delete("in-use"))
      assert.strictEqual(error._tag, "SessionBusy")
      assert.isTrue(yield* fs.exists(path.join(directory, "in-use", "session.json")))
    }).pipe(Effect.provide(NodeLayer))
  )

  // =============================================================================
  // Locking
  // =============================================================================

  it.scopedLive(
    "lock writes the holder's pid, hostname and start time, and removes the file when the scope closes",
    () =>
      Effect.gen(function* () {
        const { fs, path, directory, store } = yield* setup()
        const file = path.join(directory, "held", "lock")
        const scope = yield* Scope.make()
        yield* Scope.extend(store.lock("held"), scope)
        const holder: unknown = JSON.parse(yield* fs.readFileString(file))
        assert.deepInclude(holder, { pid: process.pid, hostname: os.hostname() })
        assert.match(JSON.stringify(holder), /"startedAt":"\d{4}-\d\d-\d\dT/)
        yield* Scope.close(scope, Exit.void)
        assert.isFalse(yield* fs.exists(file))
      }).pipe(Effect.provide(NodeLayer))
  )

  it.scopedLive("a second lock while the holder is alive fails with SessionBusy naming the holder", () =>
    Effect.gen(function* () {
      const { directory, store } = yield* setup()
      const other = yield* FileSessionStore.make({ directory })
      yield* store.lock("contended")
      const error = yield* Effect.flip(Effect.scoped(other.lock("contended")))
      assert.instanceOf(error, Errors.SessionBusy)
      assert.include(error.holder, `pid ${process.pid}`)
      const again = yield* Effect.flip(Effect.scoped(store.lock("contended")))
      assert.strictEqual(again._tag, "SessionBusy")
    }).pipe(Effect.provide(NodeLayer))
  )

  it.scopedLive("a lock can be taken again once its scope has closed", () =>
    Effect.gen(function* () {
      const { directory, store } = yield* setup()
      const other = yield* FileSessionStore.make({ directory })
      yield* Effect.scoped(store.lock("passed-on"))
      yield* Effect.scoped(other.lock("passed-on"))
    }).pipe(Effect.provide(NodeLayer))
  )

  it.scopedLive("of many runs racing for one session exactly one gets the lock", () =>
    Effect.gen(function* () {
      const { directory } = yield* setup()
      const stores = yield* Effect.forEach(Array.from({ length: 8 }), () => FileSessionStore.make({ directory }))
      const outcomes = yield* Effect.forEach(stores, (store) => Effect.either(store.lock("raced")), {
        concurrency: "unbounded"
      })
      assert.strictEqual(outcomes.filter((o) => o._tag === "Right").length, 1)
      for (const outcome of outcomes) {
        if (outcome._tag === "Left") assert.strictEqual(outcome.left._tag, "SessionBusy")
      }
    }).pipe(Effect.provide(NodeLayer))
  )

  it.scopedLive("a lock held by a live process is busy; once that process died it is taken over", () =>
    Effect.gen(function* () {
      const { path, directory, store } = yield* setup()
      yield* store.save(makeSession("crashed"))
      const child = yield* holdLockInChild(path.join(directory, "crashed", "lock"))
      const busy = yield* Effect.flip(Effect.scoped(store.lock("crashed")))
      assert.instanceOf(busy, Errors.SessionBusy)
      assert.include(busy.holder, `pid ${child.pid}`)
      yield* killAndWait(child)
      const { lines } = yield* withLogs(Effect.scoped(store.lock("crashed")))
      assert.isTrue(lines.some((line) => line.includes("took over") && line.includes(`pid ${child.pid}`)))
    }).pipe(Effect.provide(NodeLayer))
  )

  it.scopedLive("a lock held on another host is busy, and the error says how to clear it", () =>
    Effect.gen(function* () {
      const { fs, path, directory, store } = yield* setup()
      const file = path.join(directory, "remote", "lock")
      yield* fs.makeDirectory(path.join(directory, "remote"))
      const remote = { pid: 4242, hostname: "elsewhere.example", startedAt: "2026-01-01T00:00:00.000Z", token: "x" }
      yield* fs.writeFileString(file, JSON.stringify(remote))
      const error = yield* Effect.flip(Effect.scoped(store.lock("remote")))
      assert.instanceOf(error, Errors.SessionBusy)
      assert.include(error.holder, "elsewhere.example")
      assert.include(error.holder, file)
      assert.isTrue(yield* fs.exists(file))
    }).pipe(Effect.provide(NodeLayer))
  )

  it.scopedLive("a lock of a dead process on this host is taken over (host says the pid is gone)", () =>
    Effect.gen(function* () {
      const host: FileSessionStore.Host = { pid: 100, hostname: "here", isAlive: (pid) => pid === 100 }
      const { fs, path, directory, store } = yield* setup({ host })
      const file = path.join(directory, "stale", "lock")
      yield* fs.makeDirectory(path.join(directory, "stale"))
      const dead = { pid: 99, hostname: "here", startedAt: "2026-01-01T00:00:00.000Z", token: "dead" }
      yield* fs.writeFileString(file, JSON.stringify(dead))
      yield* store.lock("stale")
      const holder: unknown = JSON.parse(yield* fs.readFileString(file))
      assert.deepInclude(holder, { pid: 100, hostname: "here" })
    }).pipe(Effect.provide(NodeLayer))
  )

  it.scopedLive("locking works on a file system without hard links", () =>
    Effect.gen(function* () {
      const { path, directory } = yield* setup()
      const noLinks = Layer.effect(
        FileSystem.FileSystem,
        Effect.map(FileSystem.FileSystem, (fs) => ({
          ...fs,
          link: (from: string) =>
            Effect.fail(
              new PlatformError.SystemError({
                reason: "PermissionDenied",
                module: "FileSystem",
                method: "link",
                pathOrDescriptor: from
              })
            )
        }))
      )
      const [first, second] = yield* Effect.all([
        FileSessionStore.make({ directory }),
        FileSessionStore.make({ directory })
      ]).pipe(Effect.provide(noLinks))
      yield* first.lock("no-links")
      const holder: unknown = JSON.parse(
        yield* FileSystem.FileSystem.pipe(
          Effect.flatMap((fs) => fs.readFileString(path.join(directory, "no-links", "lock")))
        )
      )
      assert.deepInclude(holder, { pid: process.pid })
      assert.strictEqual((yield* Effect.flip(Effect.scoped(second.lock("no-links"))))._tag, "SessionBusy")
    }).pipe(Effect.provide(NodeLayer))
  )

  it.scopedLive("a lock naming this process's pid but not held by it is an earlier process's, and is taken over", () =>
    Effect.gen(function* () {
      const { fs, path, directory, store } = yield* setup()
      const file = path.join(directory, "reused-pid", "lock")
      yield* fs.makeDirectory(path.join(directory, "reused-pid"))
      const earlier = { pid: process.pid, hostname: os.hostname(), startedAt: "2026-01-01T00:00:00.000Z", token: "old" }
      yield* fs.writeFileString(file, JSON.stringify(earlier))
      const { lines } = yield* withLogs(store.lock("reused-pid"))
      assert.isTrue(lines.some((line) => line.includes("took over") && line.includes("earlier process")))
      assert.notInclude(yield* fs.readFileString(file), '"token":"old"')
    }).pipe(Effect.provide(NodeLayer))
  )

  it.scopedLive("an unreadable lock file is busy, not silently taken", () =>
    Effect.gen(function* () {
      const { fs, path, directory, store } = yield* setup()
      yield* fs.makeDirectory(path.join(directory, "garbled"))
      yield* fs.writeFileString(path.join(directory, "garbled", "lock"), "{ not json")
      const error = yield* Effect.flip(Effect.scoped(store.lock("garbled")))
      assert.instanceOf(error, Errors.SessionBusy)
      assert.include(error.holder, "unreadable")
    }).pipe(Effect.provide(NodeLayer))
  )

  // =============================================================================
  // Secrets
  // =============================================================================

  const key = "sk-test-SECRET-1234567890"

  it.scopedLive("anything shaped like a vendor API key is stripped from everything written, with a warning", () =>
    Effect.gen(function* () {
      const { directory, store } = yield* setup()
      const leaky = makeSession("leaky", {
        status: "failed",
        error: new Errors.AuthenticationFailed({ provider: "openai", detail: `Incorrect API key provided: ${key}` })
      })
      const { lines } = yield* withLogs(
        Effect.all([
          store.save(leaky),
          store.appendEvents("leaky", [event({ _tag: "SessionFailed", error: `key ${key} refused` }, "leaky")]),
          store.saveReport("leaky", `The key was ${key}.`)
        ])
      )
      for (const file of yield* readTree(directory)) assert.notInclude(file.text, key, file.name)
      assert.include((yield* store.load("leaky")).error?.message ?? "", "[redacted]")
      assert.strictEqual(lines.filter((line) => line.includes("removed") && line.includes("secret")).length, 3)
    }).pipe(Effect.provide(NodeLayer))
  )

  it.scopedLive("a Redacted value where a session or an event holds text is refused, and nothing is written", () =>
    Effect.gen(function* () {
      const { fs, directory, store } = yield* setup()
      const secret = Redacted.make(key)
      // Forged on purpose, past the types and the constructor's checks: what a careless caller could hand over.
      const session = new Session.Session({ ...makeSession("refused"), query: secret as unknown as string }, true)
      assert.strictEqual((yield* Effect.flip(store.save(session)))._tag, "InvalidInput")
      const started = { _tag: "SessionStarted", query: secret, sessionId: "refused", timestamp: 1 } as const
      const appended = store.appendEvents("refused", [started as unknown as ResearchEvents.ResearchEvent])
      assert.strictEqual((yield* Effect.flip(appended))._tag, "InvalidInput")
      assert.deepStrictEqual(yield* fs.readDirectory(directory), [])
    }).pipe(Effect.provide(NodeLayer))
  )

  it.scopedLive("secrets given to the store are replaced wherever they appear, whatever their shape", () =>
    Effect.gen(function* () {
      const exaKey = "3f1c2a4b-0000-4d5e-9a8b-7c6d5e4f3a2b"
      const { directory, store } = yield* setup({ secrets: [Redacted.make(exaKey)] })
      yield* store.save(makeSession("exa", { query: `why does ${exaKey} fail?` }))
      for (const file of yield* readTree(directory)) assert.notInclude(file.text, exaKey, file.name)
    }).pipe(Effect.provide(NodeLayer))
  )

  it.scopedLive("a failed call to a real provider with a fake API key in the environment writes the key nowhere", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const home = yield* fs.makeTempDirectoryScoped({ prefix: "deep-research-home-" })
      const emulator = yield* Emulator.start()
      yield* withEnvironment({
        ANTHROPIC_API_KEY: key,
        ANTHROPIC_BASE_URL: emulator.baseUrl("anthropic"),
        DEEP_RESEARCH_HOME: home
      })
      yield* emulator.enqueue("anthropic.messages", Emulator.anthropicText("Heat pumps keep a COP of 2 at -15 C [1]."))
      yield* emulator.enqueue("anthropic.messages", Emulator.fault({ type: "auth" }))

      const run = Effect.gen(function* () {
        const store = yield* SessionStore.SessionStore
        const model = yield* LanguageModel.LanguageModel
        const events = yield* ResearchEvents.ResearchEvents
        const subscription = yield* events.subscribe
        const id = "with-key"
        yield* store.lock(id)
        const program = Effect.gen(function* () {
          yield* ResearchEvents.publish({ _tag: "SessionStarted", query: "Heat pumps in the cold?" })
          const request = { messages: [LanguageModel.user("Heat pumps in the cold?")] }
          const completion = yield* model.generate(request)
          const failure = yield* Effect.flip(model.generate(request))
          yield* ResearchEvents.publish({ _tag: "ResearcherFailed", directiveId: "r1-d1", error: failure.message })
          yield* ResearchEvents.publish({ _tag: "SessionFailed", error: failure.message })
          const session = makeSession(id, {
            status: "failed",
            config: ResearchConfig.defaults,
            usage: [Usage.addToRole(Usage.emptyRoleUsage("researcher"), completion.usage, 0.01)],
            error: failure
          })
          yield* store.save(session)
          yield* store.saveReport(id, completion.text)
        }).pipe(ResearchEvents.withSessionId(id))
        yield* program
        yield* store.appendEvents(id, Array.from(yield* Queue.takeAll(subscription)))
        return id
      }).pipe(
        Effect.provide(
          Layer.mergeAll(
            FileSessionStore.layerConfig(),
            AnthropicLanguageModel.layerConfig({ model: "claude-sonnet-4-6" }),
            ResearchEvents.layer
          )
        )
      )
      const { result: id, lines } = yield* withLogs(Effect.scoped(run))

      const requests = yield* emulator.requests("anthropic.messages")
      assert.strictEqual(requests.length, 2)
      // The key really was in play: it went out with every request.
      for (const request of requests) {
        assert.isTrue(Object.values(request.headers).some((value) => value.includes(key)))
      }
      const written = yield* readTree(home)
      assert.includeMembers(
        written.map((f) => f.name.replaceAll("\\", "/")),
        [`sessions/${id}/session.json`, `sessions/${id}/events.jsonl`, `sessions/${id}/report.md`]
      )
      assert.isAbove(written.find((f) => f.name.endsWith("events.jsonl"))?.text.split("\n").length ?? 0, 3)
      for (const file of written) assert.notInclude(file.text, key, file.name)
      // Nothing had to be scrubbed: the key never reached the store in the first place.
      assert.isFalse(lines.some((line) => line.includes("FileSessionStore: removed")))
    }).pipe(Effect.provide(NodeLayer))
  )

  it.scopedLive(
    "a whole research run with a fake API key in the environment and a provider writes the key nowhere",
    () =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const home = yield* fs.makeTempDirectoryScoped({ prefix: "deep-research-home-" })
        const emulator = yield* Emulator.start()
        yield* withEnvironment({
          ANTHROPIC_API_KEY: key,
          ANTHROPIC_BASE_URL: emulator.baseUrl("anthropic"),
          DEEP_RESEARCH_HOME: home
        })
        // The report is written by a real provider (the Anthropic SDK against the emulator) holding the key.
        yield* emulator.respond(
          "anthropic.messages",
          Emulator.anthropicText(
            "# Heat pumps in the cold\n\nThey keep a coefficient of performance of about 2 at -15 C [1]."
          )
        )
        const world = Layer.mergeAll(
          Layer.provideMerge(Summarizer.layer, researchRouter),
          StaticWeb.layer({ pages: [heatPumpPage] }),
          FileSessionStore.layerConfig(),
          ResearchEvents.layer
        )
        const { result: session, lines } = yield* withLogs(
          Pipeline.research("How do heat pumps perform in cold climates?", { sessionId: "full-run" }).pipe(
            Effect.provide(world)
          )
        )

        assert.strictEqual(session.status, "completed")
        const requests = yield* emulator.requests("anthropic.messages")
        assert.isAbove(requests.length, 0)
        for (const request of requests) {
          assert.isTrue(Object.values(request.headers).some((value) => value.includes(key)))
        }
        const written = yield* readTree(home)
        assert.sameMembers(
          written.map((f) => f.name.replaceAll("\\", "/")),
          ["sessions/full-run/session.json", "sessions/full-run/events.jsonl", "sessions/full-run/report.md"]
        )
        assert.include(written.find((f) => f.name.endsWith("report.md"))?.text ?? "", "coefficient of performance")
        for (const file of written) assert.notInclude(file.text, key, file.name)
        // Nothing had to be scrubbed: the key never reached the store in the first place.
        assert.isFalse(lines.some((line) => line.includes("FileSessionStore: removed")))
      }).pipe(Effect.provide(NodeLayer))
  )

  it.scopedLive("a run interrupted mid-round resumes from its files through a fresh store, keeping every event", () =>
    Effect.gen(function* () {
      const { fs, path, directory } = yield* setup()
      const observer = yield* FileSessionStore.make({ directory })
      const release = yield* Deferred.make<void>()
      const bravoStarted = yield* Deferred.make<void>()
      const run = Effect.gen(function* () {
        const fiber = yield* Effect.fork(
          Pipeline.research("Measure ALPHA and BRAVO", { sessionId: "interrupted" }).pipe(
            Effect.provide(FileSessionStore.layerNode({ directory }))
          )
        )
        // ALPHA's unit is checkpointed while BRAVO's researcher is still at work: the run is stopped there.
        yield* Deferred.await(bravoStarted)
        yield* eventually(
          Effect.map(observer.load("interrupted"), (s) => s.rounds.flatMap((r) => r.results).length === 1)
        )
        yield* Fiber.interrupt(fiber)
        const stopped = yield* observer.load("interrupted")
        assert.strictEqual(stopped.status, "cancelled")
        assert.isFalse(yield* fs.exists(path.join(directory, "interrupted", "lock")))
        const before = (yield* ScriptedModel.calls).length

        yield* Deferred.succeed(release, undefined)
        const resumed = yield* Pipeline.resume("interrupted").pipe(
          Effect.provide(FileSessionStore.layerNode({ directory }))
        )
        const after = (yield* ScriptedModel.calls).slice(before)
        assert.strictEqual(resumed.status, "completed")
        assert.deepStrictEqual(
          resumed.rounds[0]?.results.map((r) => r.status),
          ["completed", "completed"]
        )
        const researched = after.filter((c) => c.role === "researcher").map((c) => topicOf(c.request))
        assert.notInclude(researched, "ALPHA")
        assert.include(researched, "BRAVO")
        assert.deepStrictEqual(yield* observer.load("interrupted"), resumed)
        const report = yield* fs.readFileString(path.join(directory, "interrupted", "report.md"))
        assert.strictEqual(report, resumed.report?.markdown)
        // Both runs' events are in the one log, every line readable.
        const lines = (yield* fs.readFileString(path.join(directory, "interrupted", "events.jsonl"))).trim().split("\n")
        const events = yield* observer.events("interrupted")
        assert.strictEqual(events.length, lines.length)
        const tags = events.map((e) => e._tag)
        assert.strictEqual(tags[0], "SessionStarted")
        assert.include(tags, "SessionCancelled")
        assert.strictEqual(tags[tags.length - 1], "SessionCompleted")
      })
      yield* run.pipe(Effect.provide(interruptibleWorld(release, bravoStarted)))
    }).pipe(Effect.provide(NodeLayer))
  )

  // =============================================================================
  // Configuration
  // =============================================================================

  it.scopedLive("layerConfig keeps sessions under $DEEP_RESEARCH_HOME/sessions", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      const home = yield* fs.makeTempDirectoryScoped({ prefix: "deep-research-home-" })
      yield* withEnvironment({ DEEP_RESEARCH_HOME: home })
      yield* Effect.provide(
        Effect.flatMap(SessionStore.SessionStore, (store) => store.save(makeSession("configured"))),
        FileSessionStore.layerConfig()
      )
      assert.isTrue(yield* fs.exists(path.join(home, "sessions", "configured", "session.json")))
    }).pipe(Effect.provide(NodeLayer))
  )

  it.effect("a DEEP_RESEARCH_HOME starting with ~ is under the user's home", () =>
    Effect.gen(function* () {
      yield* withEnvironment({ DEEP_RESEARCH_HOME: "~/research" })
      const directory = yield* FileSessionStore.directoryConfig
      assert.strictEqual(directory, nodePath.join(os.homedir(), "research", "sessions"))
    }).pipe(Effect.scoped)
  )

  it.effect("the default folder is .deep-research/sessions in the user's home", () =>
    Effect.gen(function* () {
      yield* withEnvironment({ DEEP_RESEARCH_HOME: undefined })
      const directory = yield* FileSessionStore.directoryConfig
      assert.strictEqual(directory, nodePath.join(os.homedir(), ".deep-research", "sessions"))
    }).pipe(Effect.scoped)
  )
})

// =============================================================================
// More helpers
// =============================================================================

const encodeSession = (session: Session.Session) =>
  Effect.orDie(Effect.suspend(() => Schema.encode(Session.Session)(session)))

/** A session value with any id, bypassing the constructor's validation, to feed bad ids to `save`. */
const makeSessionUnchecked = (id: string): Session.Session =>
  new Session.Session({ ...makeSession("placeholder"), id }, true)

/** Sets environment variables for the test's scope (undefined removes one), restoring them afterwards. */
const withEnvironment = (values: Record<string, string | undefined>) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const previous = Object.fromEntries(Object.keys(values).map((name) => [name, process.env[name]]))
      for (const [name, value] of Object.entries(values)) {
        if (value === undefined) delete process.env[name]
        else process.env[name] = value
      }
      return previous
    }),
    (previous) =>
      Effect.sync(() => {
        for (const [name, value] of Object.entries(previous)) {
          if (value === undefined) delete process.env[name]
          else process.env[name] = value
        }
      })
  )

/** Yields until `condition` holds, while the run under test makes progress on other fibers. */
const eventually = <E, R>(condition: Effect.Effect<boolean, E, R>) =>
  Effect.gen(function* () {
    for (let i = 0; i < 100_000; i++) {
      if (yield* Effect.orElseSucceed(condition, () => false)) return
      yield* Effect.yieldNow()
    }
    return yield* Effect.dieMessage("the condition never held")
  })

const topics = ["ALPHA", "BRAVO"] as const

/** The topic a researcher or compression request works on. */
const topicOf = (request: LanguageModel.GenerateRequest): string => {
  const text = [request.system ?? "", ...request.messages.map((m) => m.content)].join("\n")
  const assignment = /## Your assignment\n(.+)/.exec(text)?.[1] ?? /The research assignment:\n(.+)/.exec(text)?.[1]
  return topics.find((topic) => assignment?.includes(topic)) ?? "UNKNOWN"
}

/**
 * A scripted world of two topics, where BRAVO's researcher tells `started` and then waits for `release`: ALPHA's
 * unit finishes while BRAVO's is still running.
 */
const interruptibleWorld = (release: Deferred.Deferred<void>, started: Deferred.Deferred<void>) => {
  const pageOf = (topic: string): StaticWeb.Page => ({
    url: `https://${topic.toLowerCase()}.example.org/facts`,
    title: `Facts about ${topic}`,
    content: `${topic} was measured at 42 units in 2024 by the ${topic} institute.`
  })
  const directiveOf = (topic: string) => ({
    name: "conductResearch",
    arguments: {
      topic: `Investigate ${topic}: the latest measurements and who made them.`,
      perspective: "measurements",
      evidenceNeeded: "primary measurements",
      priority: 1
    }
  })
  const researcher: ScriptedModel.Script = (request) =>
    Effect.gen(function* () {
      const topic = topicOf(request)
      if (topic === "BRAVO") {
        yield* Deferred.succeed(started, undefined)
        yield* Deferred.await(release)
      }
      return request.messages.some((m) => m._tag === "assistant")
        ? ScriptedModel.toolCalls({
            name: "researchComplete",
            arguments: { summary: `${topic} was measured at 42 units [1].` }
          })
        : ScriptedModel.toolCalls({ name: "webSearch", arguments: { queries: [`${topic} measured`] } })
    })
  const compression: ScriptedModel.Script = (request) => {
    const topic = topicOf(request)
    return [
      "## Findings",
      `${topic} was measured at 42 units in 2024 by the ${topic} institute [1], a primary measurement [1].`,
      "",
      "## Supervisor brief",
      `Covered: ${topic}. Key findings: 42 units [1]. Confidence: medium. Gaps: none.`
    ].join("\n")
  }
  const router = ScriptedModel.layerRouter({
    default: ["unexpected call"],
    roles: {
      clarification: [ScriptedModel.json({ needClarification: false, question: "", verification: "Both topics." })],
      brief: [
        ScriptedModel.json({
          brief: "The latest measurements of ALPHA and BRAVO, and who made them.",
          scope: { include: ["measurements"], exclude: [] },
          sourcePreferences: ["the institutes"],
          language: "English"
        })
      ],
      supervisor: [
        ScriptedModel.toolCalls(directiveOf("ALPHA"), directiveOf("BRAVO")),
        ScriptedModel.toolCalls({ name: "researchComplete", arguments: {} })
      ],
      researcher,
      compression,
      summarization: [ScriptedModel.json({ summary: "summary", excerpts: [] })],
      report: ["# Measurements\n\nALPHA measured 42 units [1]. BRAVO too [2]."]
    }
  })
  return Layer.mergeAll(
    Layer.provideMerge(Summarizer.layer, router),
    StaticWeb.layer({
      pages: topics.map(pageOf),
      route: (query) => topics.filter((topic) => query.includes(topic)).map((topic) => pageOf(topic).url)
    }),
    ResearchEvents.layer
  )
}

/** A page the scripted researcher finds. */
const heatPumpPage: StaticWeb.Page = {
  url: "https://example.org/cold-climate-heat-pumps",
  title: "Cold-climate heat pumps in the field",
  content: "Heat pumps in cold climates kept a coefficient of performance of about 2 at -15 C in a two-year study."
}

/** Every role scripted except the report, which the Anthropic model configured from the environment writes. */
const researchRouter = Layer.unwrapEffect(
  Effect.gen(function* () {
    const log = yield* ScriptedModel.makeLog
    const scripted = (role: Usage.Role, script: ScriptedModel.Script) => ScriptedModel.make({ script }, log, role)
    const report = yield* LanguageModel.LanguageModel
    const roles = {
      clarification: yield* scripted("clarification", [
        ScriptedModel.json({ needClarification: false, question: "", verification: "Heat pumps below -15 C." })
      ]),
      brief: yield* scripted("brief", [
        ScriptedModel.json({
          brief: "How efficient are air-source heat pumps below -15 C?",
          scope: { include: ["field studies"], exclude: [] },
          sourcePreferences: ["field studies"],
          language: "English"
        })
      ]),
      supervisor: yield* scripted("supervisor", [
        ScriptedModel.toolCalls({
          name: "conductResearch",
          arguments: {
            topic: "Measured efficiency of heat pumps in cold climates, from field studies.",
            perspective: "engineering",
            evidenceNeeded: "coefficient of performance below -15 C",
            priority: 1
          }
        }),
        ScriptedModel.toolCalls({ name: "researchComplete", arguments: {} })
      ]),
      researcher: yield* scripted("researcher", (request) =>
        request.messages.some((m) => m._tag === "assistant")
          ? ScriptedModel.toolCalls({
              name: "researchComplete",
              arguments: { summary: "Heat pumps keep a coefficient of performance of about 2 at -15 C [1]." }
            })
          : ScriptedModel.toolCalls({ name: "webSearch", arguments: { queries: ["heat pumps cold climates"] } })
      ),
      compression: yield* scripted("compression", [
        [
          "## Findings",
          "Heat pumps in cold climates kept a coefficient of performance of about 2 at -15 C over two years [1].",
          "",
          "## Supervisor brief",
          "Covered: field efficiency. Key findings: COP about 2 at -15 C [1]. Confidence: medium. Gaps: none."
        ].join("\n")
      ]),
      summarization: yield* scripted("summarization", [ScriptedModel.json({ summary: "summary", excerpts: [] })])
    }
    return ModelRouter.layer({ default: report, roles: { ...roles, report } })
  }).pipe(Effect.provide(AnthropicLanguageModel.layerConfig({ model: "claude-sonnet-4-6" })))
)

/** A real second process holding a lock file in the store's format, until it is killed. */
const holdLockInChild = (file: string) =>
  Effect.acquireRelease(
    Effect.async<ChildProcess, Error>((resume) => {
      const script = [
        'const fs = require("node:fs")',
        'const os = require("node:os")',
        "const holder = { pid: process.pid, hostname: os.hostname(), startedAt: new Date().toISOString(), token: `child-${process.pid}` }",
        'fs.writeFileSync(process.argv[1], JSON.stringify(holder), { flag: "wx" })',
        'process.stdout.write("ready\\n")',
        "setInterval(() => {}, 60000)"
      ].join("\n")
      const child = spawn(process.execPath, ["-e", script, file], { stdio: ["ignore", "pipe", "inherit"] })
      child.stdout?.once("data", () => resume(Effect.succeed(child)))
      child.once("error", (error) => resume(Effect.fail(error)))
      child.once("exit", (code) => resume(Effect.fail(new Error(`the lock holder exited early (${code})`))))
    }),
    (child) => Effect.sync(() => child.kill("SIGKILL"))
  )

const killAndWait = (child: ChildProcess) =>
  Effect.async<void>((resume) => {
    if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
    child.once("exit", () => resume(Effect.void))
    child.kill("SIGKILL")
  })
