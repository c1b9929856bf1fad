/**
 * The research library of the SQL store, on SQLite always and on PostgreSQL (a real server when
 * `DEEP_RESEARCH_TEST_DATABASE_URL` is set, else PGlite): a session's sources are indexed as passages when it is saved,
 * searched by full text and ranked, leave with the session (a page another session holds stays through that
 * session's rows), and sessions stored before the library are indexed when the store first opens.
 */
import { Errors, Source, SourceLibrary, SessionStore } from "@deep-research/core"
import { SqlSessionStore } from "@deep-research/providers"
import * as SqlClient from "@effect/sql/SqlClient"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
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

const pgUrl = () => {
  if (database === undefined) throw new Error("the test database did not start")
  return Redacted.make(database.url)
}

type Dialect = "SQLite" | "PostgreSQL"

const temporaryFolder = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(nodePath.join(os.tmpdir(), "deep-research-library-"))),
  (folder) => Effect.sync(() => fs.rmSync(folder, { recursive: true, force: true }))
)

const open = (dialect: Dialect, file: string, options: SqlSessionStore.Options = {}) =>
  Effect.gen(function* () {
    const client =
      dialect === "SQLite" ? SqlSessionStore.sqliteClientLayer(file) : SqlSessionStore.pgClientLayer(pgUrl())
    const context = yield* Layer.build(SqlSessionStore.layer(options).pipe(Layer.provideMerge(client)))
    return {
      store: Context.get(context, SessionStore.SessionStore),
      library: Context.get(context, SourceLibrary.SourceLibrary),
      sql: Context.get(context, SqlClient.SqlClient)
    }
  }).pipe(Effect.orDie)

const fresh = (dialect: Dialect) =>
  Effect.gen(function* () {
    const file = nodePath.join(yield* temporaryFolder, "deep-research.db")
    const opened = yield* open(dialect, file)
    if (dialect === "PostgreSQL") {
      yield* Effect.orDie(
        opened.sql.unsafe(
          "TRUNCATE deep_research_sessions, deep_research_passages, deep_research_library_pending, deep_research_leases"
        )
      )
    }
    return { ...opened, reopen: (options: SqlSessionStore.Options = {}) => open(dialect, file, options) }
  })

const source = (id: string, url: string, title: string, content: string) =>
  new Source.Source({ id, url, title, content, provider: "static", quality: "medium", retrievedAt: 1, rawLength: 1 })

const perovskite = source(
  "d1-s1",
  "https://example.org/perovskite",
  "Perovskite solar cells",
  "Perovskite tandem cells reached a record efficiency of 33.9 percent in 2023. Stability under heat remains the " +
    "open problem for perovskite modules."
)
const silicon = source(
  "d1-s2",
  "https://example.org/silicon",
  "Silicon wafers",
  "Crystalline silicon dominates the market; its cells convert about 22 percent of sunlight, and the efficiency " +
    "record for silicon alone is 26.8 percent."
)
const whales = source("d1-s1", "https://example.org/whales", "Whale songs", "Humpback whales sing in long cycles.")

for (const dialect of ["SQLite", "PostgreSQL"] as const) {
  describe(`the library on ${dialect}`, () => {
    it.scoped("a saved session's sources are searchable as ranked passages with their session, title and URL", () =>
      Effect.gen(function* () {
        const { library, store } = yield* fresh(dialect)
        yield* store.save(makeSession("solar", { sources: [perovskite, silicon] }))
        yield* store.save(makeSession("ocean", { sources: [whales] }))
        const found = yield* library.search("efficiency record perovskite")
        assert.deepStrictEqual(
          found.map((passage) => [passage.sessionId, passage.sourceId, passage.url, passage.title]),
          [["solar", "d1-s1", "https://example.org/perovskite", "Perovskite solar cells"]]
        )
        assert.include(found[0]?.snippet ?? "", "**")
        // Any of the words: both pages, the one matching more of them first.
        const either = yield* library.search("perovskite efficiency stability", { match: "any" })
        assert.deepStrictEqual(
          either.map((passage) => passage.url),
          ["https://example.org/perovskite", "https://example.org/silicon"]
        )
        assert.isAbove(either[0]?.score ?? 0, either[1]?.score ?? 0)
        // Stemmed: "whale" finds "whales".
        assert.deepStrictEqual(
          (yield* library.search("whale")).map((passage) => passage.sessionId),
          ["ocean"]
        )
        assert.deepStrictEqual(yield* library.search("whale", { excludeSession: "ocean" }), [])
      })
    )

    it.scoped(
      "a checkpoint indexes only the sources it adds, and a session's later checkpoints keep its passages",
      () =>
        Effect.gen(function* () {
          const { library, sql, store } = yield* fresh(dialect)
          yield* store.save(makeSession("growing", { sources: [perovskite] }))
          yield* store.save(makeSession("growing", { sources: [perovskite, silicon] }))
          yield* store.save(makeSession("growing", { sources: [perovskite, silicon], status: "completed" }))
          const rows = yield* Effect.orDie(
            sql`SELECT source_id, COUNT(*) AS n FROM deep_research_passages GROUP BY source_id ORDER BY source_id`
          )
          assert.deepStrictEqual(
            rows.map((row) => [row["source_id"], Number(row["n"])]),
            [
              ["d1-s1", 1],
              ["d1-s2", 1]
            ]
          )
          assert.lengthOf(yield* library.search("silicon wafers"), 1)
        })
    )

    it.scoped("a deleted session's passages leave the library; a page another session holds stays through it", () =>
      Effect.gen(function* () {
        const { library, store } = yield* fresh(dialect)
        yield* store.save(makeSession("first", { status: "completed", sources: [perovskite, silicon] }))
        yield* store.save(makeSession("second", { status: "completed", sources: [perovskite] }))
        yield* store.delete("first")
        assert.deepStrictEqual(
          (yield* library.search("perovskite")).map((passage) => passage.sessionId),
          ["second"]
        )
        assert.deepStrictEqual(yield* library.search("silicon"), [])
        yield* store.delete("second")
        assert.deepStrictEqual(yield* library.search("perovskite"), [])
      })
    )

    it.scoped("a search kept to the sessions it reaches gives `limit` of theirs however many others outrank them", () =>
      Effect.gen(function* () {
        const { library, store } = yield* fresh(dialect)
        // Another caller's passages, each about glaciers through and through, far more than a page of the search.
        for (let n = 0; n < 6; n++) {
          const sources = Array.from({ length: 10 }, (_, i) =>
            source(
              `d1-s${i}`,
              `https://other.example/${n}/${i}`,
              "Glacier retreat",
              "Glacier glacier retreat. ".repeat(8)
            )
          )
          yield* store.save(makeSession(`other-${n}`, { sources }))
        }
        // The caller's own: glaciers mentioned once in a page about something else.
        const own = Array.from({ length: 4 }, (_, i) =>
          source(
            `d1-s${i}`,
            `https://own.example/${i}`,
            `Alpine valleys ${i}`,
            `Valleys of the Alps hold farms, villages and roads, and above them lies a glacier (note ${i}).`
          )
        )
        yield* store.save(makeSession("own", { sources: own }))
        assert.isTrue((yield* library.search("glacier", { limit: 3 })).every((p) => p.sessionId.startsWith("other")))
        const asked: Array<string> = []
        const reaches = (sessionId: string) =>
          Effect.sync(() => {
            asked.push(sessionId)
            return sessionId === "own"
          })
        const found = yield* library.search("glacier", { limit: 3, reaches })
        assert.deepStrictEqual(
          found.map((passage) => passage.sessionId),
          ["own", "own", "own"]
        )
        assert.isTrue(found.every((passage, i) => i === 0 || passage.score <= (found[i - 1]?.score ?? 0)))
        // Each session asked about once, however many of its passages the search passed over.
        assert.strictEqual(new Set(asked).size, asked.length)
        // A search that reaches nothing passes over every match and gives none.
        assert.deepStrictEqual(yield* library.search("glacier", { limit: 3, reaches: () => Effect.succeed(false) }), [])
      })
    )

    it.scoped("terms with no word to search for are refused, saying why", () =>
      Effect.gen(function* () {
        const { library } = yield* fresh(dialect)
        const refused = yield* Effect.flip(library.search("  the of ... "))
        assert.instanceOf(refused, Errors.ResearchInvalidInput)
        assert.include(refused.message, "nothing to search for")
        // Quotes and operators are words or nothing: no query syntax reaches the database.
        assert.deepStrictEqual(yield* library.search(`perovskite" OR "x * NEAR(`), [])
      })
    )

    it.scoped("sessions stored before the library are indexed when the store first opens", () =>
      Effect.gen(function* () {
        const { reopen, sql, store } = yield* fresh(dialect)
        yield* store.save(makeSession("older", { status: "completed", sources: [perovskite] }))
        // What migration 3 finds in a store of an earlier version: the session, no passages, listed as waiting.
        yield* Effect.orDie(sql`DELETE FROM deep_research_passages`)
        yield* Effect.orDie(sql`INSERT INTO deep_research_library_pending (session_id) VALUES ('older')`)
        const { library } = yield* reopen()
        assert.deepStrictEqual(
          (yield* library.search("perovskite")).map((passage) => passage.sessionId),
          ["older"]
        )
        const waiting = yield* Effect.orDie(sql`SELECT session_id FROM deep_research_library_pending`)
        assert.lengthOf(waiting, 0)
      })
    )
  })
}
