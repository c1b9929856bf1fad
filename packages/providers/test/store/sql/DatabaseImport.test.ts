/**
 * Another store's SQLite database brought into a store, as a user moves to PostgreSQL: every session whole (its
 * checkpoint, events, report and artefacts), its sources searchable in the library, a session the store holds already
 * left as it is, an unreadable one named with why, and a path that is no store's database refused with why. Into
 * SQLite always, and into PostgreSQL (a real server when `DEEP_RESEARCH_TEST_DATABASE_URL` is set, else PGlite).
 */
import { ResearchEvents, Session, SessionStore, Source, SourceLibrary } from "@deep-research/core"
import { SqlSessionStore } from "@deep-research/providers"
import * as SqlClient from "@effect/sql/SqlClient"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Scope from "effect/Scope"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import * as PgDatabase from "../../support/pgDatabase.js"
import { makeSession } from "../../support/sessionStoreContract.js"

const fileScope = Effect.runSync(Scope.make())
let database: PgDatabase.TestDatabase | undefined

beforeAll(async () => {
  database = await Effect.runPromise(Scope.extend(PgDatabase.make, fileScope))
}, 60_000)

afterAll(() => Effect.runPromise(Scope.close(fileScope, Exit.void)))

const temporaryFolder = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(nodePath.join(os.tmpdir(), "deep-research-db-import-"))),
  (folder) => Effect.sync(() => fs.rmSync(folder, { recursive: true, force: true }))
)

type Dialect = "SQLite" | "PostgreSQL"

/** A store on a fresh database of the dialect, in the test's scope. */
const target = (dialect: Dialect) =>
  Effect.gen(function* () {
    if (database === undefined) throw new Error("the test database did not start")
    const client =
      dialect === "SQLite"
        ? SqlSessionStore.sqliteClientLayer(nodePath.join(yield* temporaryFolder, "deep-research.db"))
        : SqlSessionStore.pgClientLayer(Redacted.make(database.url))
    const context = yield* Layer.build(SqlSessionStore.layer().pipe(Layer.provideMerge(client)))
    if (dialect === "PostgreSQL") {
      const sql = Context.get(context, SqlClient.SqlClient)
      yield* sql.unsafe(
        "TRUNCATE deep_research_sessions, deep_research_events, deep_research_reports, deep_research_artefacts, " +
          "deep_research_leases, deep_research_passages, deep_research_library_pending"
      )
    }
    return {
      store: Context.get(context, SessionStore.SessionStore),
      library: Context.get(context, SourceLibrary.SourceLibrary)
    }
  }).pipe(Effect.orDie)

const tides = new Source.Source({
  id: "d1-s1",
  url: "https://example.org/tides",
  title: "Tidal ranges",
  content: "The Bay of Fundy has the highest tidal range in the world, over sixteen metres.",
  provider: "static",
  quality: "medium",
  retrievedAt: 1,
  rawLength: 1
})

/** A store folder whose SQLite database holds two sessions, one of them with events, a report and an artefact. */
const source = Effect.gen(function* () {
  const folder = yield* temporaryFolder
  yield* Effect.scoped(
    Effect.gen(function* () {
      const context = yield* Layer.build(SqlSessionStore.layerSqlite(nodePath.join(folder, "deep-research.db")))
      const store = Context.get(context, SessionStore.SessionStore)
      yield* store.save(makeSession("dr-20260101-000000-aaaaaa", { status: "completed", sources: [tides] }))
      yield* store.appendEvents("dr-20260101-000000-aaaaaa", [
        ResearchEvents.SessionStarted.make({ query: "q", timestamp: 1 })
      ])
      yield* store.saveReport("dr-20260101-000000-aaaaaa", "# Tides\n\nFundy's range is the highest [1].\n")
      yield* store.saveArtefact("dr-20260101-000000-aaaaaa", "evaluation.json", '{"score": 7}')
      yield* store.save(makeSession("dr-20260101-000000-bbbbbb", { status: "failed" }))
      yield* store.save(makeSession("dr-20260101-000000-cccccc", { status: "running" }))
    })
  ).pipe(Effect.orDie)
  return folder
})

for (const dialect of ["SQLite", "PostgreSQL"] as const) {
  describe(`another store's database imported into ${dialect}`, () => {
    it.scoped("brings every session whole, its sources into the library, and leaves those it holds", () =>
      Effect.gen(function* () {
        const folder = yield* source
        const { library, store } = yield* target(dialect)
        yield* store.save(makeSession("dr-20260101-000000-bbbbbb", { status: "completed", query: "Kept as it is" }))

        const done = yield* SqlSessionStore.importDatabase(store, folder)
        assert.deepStrictEqual(done, {
          imported: 2,
          present: 1,
          unreadable: [],
          unfinished: ["dr-20260101-000000-cccccc"]
        })
        const session = yield* store.load("dr-20260101-000000-aaaaaa")
        assert.strictEqual(session.status, "completed")
        assert.lengthOf(yield* store.events(session.id), 1)
        assert.deepStrictEqual(yield* store.artefact(session.id, "evaluation.json"), Option.some('{"score": 7}'))
        assert.strictEqual((yield* store.load("dr-20260101-000000-bbbbbb")).query, "Kept as it is")
        const found = yield* library.search("Fundy tidal range")
        assert.deepStrictEqual(
          found.map((passage) => [passage.sessionId, passage.url]),
          [["dr-20260101-000000-aaaaaa", "https://example.org/tides"]]
        )

        // Again: nothing brought twice.
        const again = yield* SqlSessionStore.importDatabase(store, nodePath.join(folder, "deep-research.db"))
        assert.deepStrictEqual(again, { imported: 0, present: 3, unreadable: [], unfinished: [] })
        assert.lengthOf(yield* store.events(session.id), 1)
      })
    )
  })
}

describe("an import from what is no store's database", () => {
  it.scoped("is refused with why, and makes no file where there was none", () =>
    Effect.gen(function* () {
      const { store } = yield* target("SQLite")
      const folder = yield* temporaryFolder
      const missing = nodePath.join(folder, "nothing-here.db")
      const none = yield* Effect.flip(SqlSessionStore.importDatabase(store, missing))
      assert.strictEqual(none.message, `cannot import the sessions of ${missing}: no such file`)
      assert.isFalse(fs.existsSync(missing))
      const text = nodePath.join(folder, "notes.db")
      fs.writeFileSync(text, "These are notes, not a database.\n".repeat(200))
      const notes = yield* Effect.flip(SqlSessionStore.importDatabase(store, text))
      assert.strictEqual(notes.message, `cannot import the sessions of ${text}: SQLITE_NOTADB: file is not a database`)
      // Another program's SQLite database is refused, and left as it was.
      const other = nodePath.join(folder, "other.db")
      yield* Effect.scoped(
        Effect.flatMap(SqlClient.SqlClient, (sql) => sql`CREATE TABLE notes (text TEXT)`).pipe(
          Effect.provide(SqlSessionStore.sqliteClientLayer(other))
        )
      ).pipe(Effect.orDie)
      const foreign = yield* Effect.flip(SqlSessionStore.importDatabase(store, other))
      assert.include(foreign.message, "it holds no deep-research sessions")
      const left = yield* Effect.scoped(
        Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT name FROM sqlite_master WHERE type = 'table'`).pipe(
          Effect.provide(SqlSessionStore.sqliteClientLayer(other))
        )
      ).pipe(Effect.orDie)
      assert.deepStrictEqual(left, [{ name: "notes" }])

      // A session whose row cannot be read is named, and the others come.
      const broken = yield* source
      yield* Effect.scoped(
        Effect.flatMap(
          SqlClient.SqlClient,
          (sql) => sql`UPDATE deep_research_sessions SET data = '{ torn' WHERE id = 'dr-20260101-000000-bbbbbb'`
        ).pipe(Effect.provide(SqlSessionStore.sqliteClientLayer(nodePath.join(broken, "deep-research.db"))))
      ).pipe(Effect.orDie)
      const some = yield* SqlSessionStore.importDatabase(store, broken)
      assert.strictEqual(some.imported, 2)
      assert.deepStrictEqual(some.unreadable, ["dr-20260101-000000-bbbbbb (its row is not JSON)"])
      assert.strictEqual(Session.summarize(yield* store.load("dr-20260101-000000-aaaaaa")).status, "completed")
    })
  )
})
