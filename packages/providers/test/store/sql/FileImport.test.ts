/**
 * Sessions of the earlier file store, imported into the database once when it is first opened: each session folder
 * with its checkpoint, event log, report and artefacts, and a session a killed process had only journaled; a folder
 * that cannot be read is named with why; the old folders are left in place; a second opening imports nothing again.
 */
import { SessionStore } from "@deep-research/core"
import { SqlSessionStore } from "@deep-research/providers"
import { assert, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { Session } from "@deep-research/core"
import { makeSession } from "../../support/sessionStoreContract.js"

const encodeSession = (session: Session.Session) => JSON.stringify(Schema.encodeSync(Session.Session)(session))

/** A store folder as the file store left it. */
const fileStore = () => {
  const store = fs.mkdtempSync(nodePath.join(os.tmpdir(), "deep-research-import-"))
  const sessions = nodePath.join(store, "sessions")
  const folder = (id: string) => {
    fs.mkdirSync(nodePath.join(sessions, id), { recursive: true })
    return nodePath.join(sessions, id)
  }
  const done = folder("dr-20260101-000000-aaaaaa")
  fs.writeFileSync(
    nodePath.join(done, "session.json"),
    encodeSession(makeSession("dr-20260101-000000-aaaaaa", { status: "completed" }))
  )
  fs.writeFileSync(
    nodePath.join(done, "events.jsonl"),
    `${JSON.stringify({ _tag: "SessionStarted", query: "q", timestamp: 1 })}\n{"torn`
  )
  fs.writeFileSync(nodePath.join(done, "report.md"), "# The report\n")
  fs.writeFileSync(nodePath.join(done, "evaluation.json"), '{"score": 7}')
  fs.writeFileSync(nodePath.join(folder("dr-20260101-000000-bbbbbb"), "session.json"), "{ not json")
  fs.mkdirSync(nodePath.join(sessions, ".intake"))
  const journaled = makeSession("dr-20260101-000000-cccccc", { status: "queued" })
  fs.writeFileSync(
    nodePath.join(sessions, ".intake", "host-1-abc.jsonl"),
    `${JSON.stringify({ session: journaled.id, text: encodeSession(journaled) })}\n` +
      `${JSON.stringify({ artefact: "simulated.json", of: journaled.id, text: '{"simulated": true}' })}\n`
  )
  return { store, sessions }
}

const opened = (store: string) =>
  Effect.gen(function* () {
    const lines: Array<string> = []
    const logger = Logger.make(({ message }) =>
      lines.push(String(Array.isArray(message) ? message.join(" ") : message))
    )
    const context = yield* Layer.build(
      SqlSessionStore.layerSqlite(nodePath.join(store, "deep-research.db"), {
        importFrom: nodePath.join(store, "sessions")
      }).pipe(Layer.provide(Logger.replace(Logger.defaultLogger, logger)))
    )
    return { store: Context.get(context, SessionStore.SessionStore), lines }
  }).pipe(Effect.orDie)

describe("the file store's sessions", () => {
  it.scopedLive("are imported once, with a line saying how many and which could not be read, and why", () =>
    Effect.gen(function* () {
      const { sessions, store: folder } = fileStore()
      yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(folder, { recursive: true, force: true })))
      const { lines, store } = yield* opened(folder)
      const said = lines.join("\n")
      assert.include(said, "imported 2 session(s) of the earlier file store")
      assert.include(said, "1 could not be read: dr-20260101-000000-bbbbbb")
      assert.include(said, "The old folders are left in place")
      assert.strictEqual((yield* store.load("dr-20260101-000000-aaaaaa")).status, "completed")
      assert.lengthOf(yield* store.events("dr-20260101-000000-aaaaaa"), 1)
      assert.deepStrictEqual(
        yield* store.artefact("dr-20260101-000000-aaaaaa", "evaluation.json"),
        Option.some('{"score": 7}')
      )
      assert.strictEqual((yield* store.load("dr-20260101-000000-cccccc")).status, "queued")
      assert.isTrue(Option.isSome(yield* store.artefact("dr-20260101-000000-cccccc", "simulated.json")))
      assert.isTrue(
        fs.existsSync(nodePath.join(sessions, "dr-20260101-000000-aaaaaa", "session.json")),
        "left in place"
      )

      const again = yield* opened(folder)
      assert.notInclude(again.lines.join("\n"), "imported")
      assert.lengthOf(yield* again.store.events("dr-20260101-000000-aaaaaa"), 1, "nothing imported twice")
    })
  )
})
