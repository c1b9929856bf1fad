/**
 * The session store contract against the SQL store on both its dialects: SQLite (a file in a temporary folder, as the
 * CLI opens it) and PostgreSQL (a real server when `DEEP_RESEARCH_TEST_DATABASE_URL` is set, else PGlite served over
 * the wire protocol in this process); and what only this store has: migrations, databases that cannot be used, secrets
 * kept out, leases that lapse and are taken over, fenced checkpoints.
 */
import { Errors, SessionStore } from "@deep-research/core"
import { SqlSessionStore } from "@deep-research/providers"
import * as SqlClient from "@effect/sql/SqlClient"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import * as PgDatabase from "../../support/pgDatabase.js"
import { contract, makeSession } from "../../support/sessionStoreContract.js"

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

/** A fresh folder for one test's SQLite file. */
const temporaryFolder = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(nodePath.join(os.tmpdir(), "deep-research-sql-store-"))),
  (folder) => Effect.sync(() => fs.rmSync(folder, { recursive: true, force: true }))
)

type Dialect = "SQLite" | "PostgreSQL"

/** A store with its own client, in the test's scope, as one process would open it. */
const open = (dialect: Dialect, file: string, options: SqlSessionStore.Options = {}) =>
  Effect.gen(function* () {
    const client =
      dialect === "SQLite" ? SqlSessionStore.sqliteClientLayer(file) : SqlSessionStore.pgClientLayer(pgUrl())
    const context = yield* Layer.build(SqlSessionStore.layer(options).pipe(Layer.provideMerge(client)))
    return {
      store: Context.get(context, SessionStore.SessionStore),
      sql: Context.get(context, SqlClient.SqlClient),
      unheld: Context.get(context, SqlSessionStore.Unheld)
    }
  }).pipe(Effect.orDie)

const tables = [
  "deep_research_sessions",
  "deep_research_events",
  "deep_research_reports",
  "deep_research_artefacts",
  "deep_research_leases",
  "deep_research_corrupt_sessions",
  "deep_research_imports"
]

/** A store on an empty database: a new SQLite file, or the PostgreSQL test database with its tables emptied. */
const fresh = (dialect: Dialect, options: SqlSessionStore.Options = {}) =>
  Effect.gen(function* () {
    const file = nodePath.join(yield* temporaryFolder, "deep-research.db")
    const opened = yield* open(dialect, file, options)
    if (dialect === "PostgreSQL") yield* Effect.orDie(opened.sql.unsafe(`TRUNCATE ${tables.join(", ")}`))
    return { ...opened, file, reopen: (more: SqlSessionStore.Options = {}) => open(dialect, file, more) }
  })

for (const dialect of ["SQLite", "PostgreSQL"] as const) {
  contract(
    dialect,
    Effect.gen(function* () {
      const { reopen, sql, store } = yield* fresh(dialect)
      const jsonText = dialect === "SQLite" ? sql.literal("") : sql.literal("::jsonb")
      return {
        store,
        reopen: Effect.map(reopen(), (opened) => opened.store),
        // A row damaged by hand: its data, and the summary kept for listing it.
        corrupt: (id: string) =>
          Effect.orDie(
            sql`UPDATE deep_research_sessions SET summary = NULL,
              data = ${'{"version": 2, "id": "' + id + '", "query": 7}'}${jsonText} WHERE id = ${id}`
          ),
        corruptKept: (id: string) =>
          Effect.orDie(
            Effect.map(sql`SELECT reason FROM deep_research_corrupt_sessions WHERE session_id = ${id}`, (rows) =>
              rows.map((row) => String(row["reason"]))
            )
          )
      }
    }),
    { corruptible: true }
  )

  describe(`SqlSessionStore on ${dialect}`, () => {
    it.scoped("the schema is made by versioned migrations, once, however many stores start at once", () =>
      Effect.gen(function* () {
        const { reopen } = yield* fresh(dialect)
        const opened = yield* Effect.all([reopen(), reopen(), reopen()], { concurrency: "unbounded" })
        const rows = yield* Effect.orDie(
          opened[0].sql`SELECT migration_id, name FROM deep_research_migrations ORDER BY migration_id`
        )
        assert.deepStrictEqual(
          rows.map((row) => [Number(row["migration_id"]), row["name"]]),
          [
            [1, "create_tables"],
            [2, "leases_and_summaries"],
            [3, "library"],
            [4, "listing_index"]
          ]
        )
      })
    )

    it.scoped("secret values never reach the database", () =>
      Effect.gen(function* () {
        const secret = "sk-test-0123456789abcdefghijklmnop"
        const { reopen } = yield* fresh(dialect)
        const { sql, store } = yield* reopen({ secrets: [Redacted.make("my-own-secret-value")] })
        yield* store.save(makeSession("secretive", { query: `key ${secret} and my-own-secret-value` }))
        yield* store.saveReport("secretive", `report with ${secret}`)
        yield* store.saveArtefact("secretive", "evaluation.json", `{"note":"my-own-secret-value"}`)
        const data = dialect === "SQLite" ? sql.literal("data") : sql.literal("data::text")
        const dump = yield* Effect.orDie(
          sql`SELECT (SELECT ${data} FROM deep_research_sessions WHERE id = 'secretive') ||
            (SELECT summary FROM deep_research_sessions WHERE id = 'secretive') ||
            (SELECT markdown FROM deep_research_reports WHERE session_id = 'secretive') ||
            (SELECT content FROM deep_research_artefacts WHERE session_id = 'secretive') AS text`
        )
        const text = Schema.decodeUnknownSync(Schema.String)(dump[0]?.["text"])
        assert.notInclude(text, secret)
        assert.notInclude(text, "my-own-secret-value")
        assert.include(text, "[redacted]")
      })
    )

    it.scoped("a session held by a process that stopped is free once its lease lapses, never before", () =>
      Effect.gen(function* () {
        const { reopen, sql, store } = yield* fresh(dialect)
        yield* store.save(makeSession("orphan", { status: "running" }))
        // What a killed process leaves: its lease, no longer renewed.
        yield* Effect.orDie(sql`INSERT INTO deep_research_leases (session_id, owner, token, holder, expires_at)
          VALUES ('orphan', 'gone/1/x', 't', 'pid 1 on host gone', 0)`)
        yield* Effect.orDie(sql`UPDATE deep_research_leases SET expires_at = ${Date.now() + 60_000}`)
        const busy = yield* Effect.flip(Effect.scoped(store.lock("orphan")))
        assert.instanceOf(busy, Errors.ResearchSessionBusy)
        assert.include(busy.message, "pid 1 on host gone")
        assert.strictEqual((yield* store.list).find((s) => s.id === "orphan")?.status, "running")
        yield* Effect.orDie(sql`UPDATE deep_research_leases SET expires_at = 0`)
        assert.strictEqual((yield* store.list).find((s) => s.id === "orphan")?.status, "interrupted")
        const other = yield* reopen()
        assert.deepStrictEqual(yield* other.unheld, [{ id: "orphan", status: "running" }])
        yield* Effect.scoped(other.store.lock("orphan"))
      })
    )

    it.scoped("a queued session stays its accepting process's while it lives, and is taken over after", () =>
      Effect.gen(function* () {
        const { reopen, sql } = yield* fresh(dialect)
        // A lease long enough that the accepting store's renewal (a third of it, on the wall clock) cannot come between
        // the lapse this test writes and the takeover it checks, however slow the machine.
        const accepting = yield* reopen({ holdAccepted: true, leaseDuration: "1 hour" })
        const other = yield* reopen()
        yield* accepting.store.save(makeSession("accepted", { status: "queued" }))
        assert.deepStrictEqual(yield* other.unheld, [])
        assert.instanceOf(yield* Effect.flip(Effect.scoped(other.store.lock("accepted"))), Errors.ResearchSessionBusy)
        // The accepting process's own run takes it, and completes it.
        yield* Effect.scoped(
          Effect.zipRight(
            accepting.store.lock("accepted"),
            accepting.store.save(makeSession("accepted", { status: "completed" }))
          )
        )
        yield* accepting.store.save(makeSession("accepted-too", { status: "queued" }))
        // Lapsed long ago: the database's clock, read to the millisecond through a floating-point day, may stand a
        // millisecond behind this process's, so a lease lapsed a millisecond ago could still be live to it.
        yield* Effect.orDie(sql`UPDATE deep_research_leases SET expires_at = 0`)
        assert.deepStrictEqual(yield* other.unheld, [{ id: "accepted-too", status: "queued" }])
      })
    )

    it.scopedLive("a lease is renewed while its process lives, past its duration", () =>
      Effect.gen(function* () {
        const { reopen } = yield* fresh(dialect)
        const holder = yield* reopen({ leaseDuration: "600 millis" })
        const other = yield* reopen()
        yield* holder.store.save(makeSession("renewed"))
        yield* holder.store.lock("renewed")
        yield* Effect.sleep("1500 millis")
        assert.instanceOf(yield* Effect.flip(Effect.scoped(other.store.lock("renewed"))), Errors.ResearchSessionBusy)
        assert.strictEqual((yield* other.store.list).find((s) => s.id === "renewed")?.status, "running")
      })
    )

    it.scoped("a run that lost its lease to another process cannot write over the new holder's checkpoint", () =>
      Effect.gen(function* () {
        const { reopen, sql, store } = yield* fresh(dialect)
        yield* store.save(makeSession("fenced", { query: "first" }))
        yield* store.lock("fenced")
        // Taken over while this process could not renew (its lease lapsed during an outage, say): the new holder's
        // row, as its lock writes it.
        yield* Effect.orDie(
          sql`UPDATE deep_research_leases SET owner = 'other/2/y', token = 'theirs', holder = 'pid 2 on host other'`
        )
        const exit = yield* Effect.exit(store.save(makeSession("fenced", { query: "stale" })))
        assert.isTrue(Exit.isFailure(exit))
        assert.include(String(Exit.isFailure(exit) ? exit.cause : ""), "lost its hold on session fenced")
        assert.strictEqual((yield* (yield* reopen()).store.load("fenced")).query, "first")
      })
    )
  })
}

describe("SqlSessionStore on SQLite: the file", () => {
  it.scoped("a file the database cannot open is a clear error naming the file and why", () =>
    Effect.gen(function* () {
      const folder = yield* temporaryFolder
      // A folder where the database file should be.
      const file = nodePath.join(folder, "deep-research.db")
      fs.mkdirSync(file)
      const error = yield* Effect.flip(Layer.build(SqlSessionStore.layerSqlite(file)))
      assert.strictEqual(error._tag, "DatabaseUnavailable")
      assert.include(error.message, file)
    })
  )

  it.scoped("the database is in WAL mode with synchronous commits", () =>
    Effect.gen(function* () {
      const file = nodePath.join(yield* temporaryFolder, "deep-research.db")
      const { sql } = yield* open("SQLite", file)
      const [mode] = yield* Effect.orDie(sql`PRAGMA journal_mode`)
      const [synchronous] = yield* Effect.orDie(sql`PRAGMA synchronous`)
      assert.strictEqual(mode?.["journal_mode"], "wal")
      assert.strictEqual(synchronous?.["synchronous"], 2, "FULL")
    })
  )
})

describe("SqlSessionStore on PostgreSQL: the server", () => {
  it.effect("an unreachable database is a clear error naming its address and why, never its password", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(
        Layer.build(
          SqlSessionStore.layerPostgres(Redacted.make("postgres://someone:hunter22@127.0.0.1:1/nowhere"))
        ).pipe(Effect.scoped)
      )
      assert.strictEqual(error._tag, "DatabaseUnavailable")
      assert.include(error.message, "127.0.0.1:1")
      assert.include(error.message, "ECONNREFUSED", "the driver's reason is said")
      assert.notInclude(error.message, "hunter22")
    })
  )
})
