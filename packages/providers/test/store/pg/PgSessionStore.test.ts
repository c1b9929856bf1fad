/**
 * The session store contract against the PostgreSQL store, on a real PostgreSQL server when
 * `DEEP_RESEARCH_TEST_DATABASE_URL` is set (a fresh database for this file), else on PGlite served over the wire
 * protocol in this process; and what only this store has: migrations, unreachable databases, secrets kept out.
 */
import { SessionStore } from "@deep-research/core"
import { PgSessionStore } from "@deep-research/providers"
import * as SqlClient from "@effect/sql/SqlClient"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as PgDatabase from "../../support/pgDatabase.js"
import { contract, makeSession } from "../../support/sessionStoreContract.js"

const fileScope = Effect.runSync(Scope.make())
let database: PgDatabase.TestDatabase | undefined

beforeAll(async () => {
  database = await Effect.runPromise(Scope.extend(PgDatabase.make, fileScope))
}, 60_000)

afterAll(() => Effect.runPromise(Scope.close(fileScope, Exit.void)))

const urlOf = () => {
  if (database === undefined) throw new Error("the test database did not start")
  return Redacted.make(database.url)
}

/** A store with its own client, in the test's scope, as one process would open it. */
const open = (options: PgSessionStore.Options = {}) =>
  Effect.gen(function* () {
    const context = yield* Layer.build(
      PgSessionStore.layer(options).pipe(Layer.provideMerge(PgSessionStore.clientLayer(urlOf())))
    )
    return { store: Context.get(context, SessionStore.SessionStore), sql: Context.get(context, SqlClient.SqlClient) }
  }).pipe(Effect.orDie)

const tables = [
  "deep_research_sessions",
  "deep_research_events",
  "deep_research_reports",
  "deep_research_artefacts",
  "deep_research_locks",
  "deep_research_corrupt_sessions"
]

contract(
  "PostgreSQL",
  Effect.gen(function* () {
    const { store, sql } = yield* open()
    // Each test starts from empty tables: the file's database is shared by its tests, one after another.
    yield* Effect.orDie(sql.unsafe(`TRUNCATE ${tables.join(", ")}`))
    return {
      store,
      reopen: Effect.map(open(), (opened) => opened.store),
      corrupt: (id: string) =>
        Effect.orDie(
          sql`UPDATE deep_research_sessions SET data = ${'{"version": 2, "id": "' + id + '", "query": 7}'}::jsonb
            WHERE id = ${id}`
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

describe("PgSessionStore", () => {
  it.scoped("the schema is made by versioned migrations, once, however many stores start at once", () =>
    Effect.gen(function* () {
      const opened = yield* Effect.all([open(), open(), open()], { concurrency: "unbounded" })
      const sql = opened[0].sql
      const rows = yield* Effect.orDie(
        sql`SELECT migration_id, name FROM deep_research_migrations ORDER BY migration_id`
      )
      assert.deepStrictEqual(
        rows.map((row) => [Number(row["migration_id"]), row["name"]]),
        [[1, "create_tables"]]
      )
    })
  )

  it.scoped("secret values never reach the database", () =>
    Effect.gen(function* () {
      const secret = "sk-test-0123456789abcdefghijklmnop"
      const { store, sql } = yield* open({ secrets: [Redacted.make("my-own-secret-value")] })
      yield* store.save(makeSession("secretive", { query: `key ${secret} and my-own-secret-value` }))
      yield* store.saveReport("secretive", `report with ${secret}`)
      yield* store.saveArtefact("secretive", "evaluation.json", `{"note":"my-own-secret-value"}`)
      const dump = yield* Effect.orDie(
        sql`SELECT (SELECT data::text FROM deep_research_sessions WHERE id = 'secretive') || 
          (SELECT markdown FROM deep_research_reports WHERE session_id = 'secretive') ||
          (SELECT content FROM deep_research_artefacts WHERE session_id = 'secretive') AS text`
      )
      const text = Schema.decodeUnknownSync(Schema.String)(dump[0]?.["text"])
      assert.notInclude(text, secret)
      assert.notInclude(text, "my-own-secret-value")
      assert.include(text, "[redacted]")
    })
  )

  it.effect("an unreachable database is a clear error naming its address and why, never its password", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(
        Layer.build(PgSessionStore.layerUrl(Redacted.make("postgres://someone:hunter22@127.0.0.1:1/nowhere"))).pipe(
          Effect.scoped
        )
      )
      assert.strictEqual(error._tag, "DatabaseUnavailable")
      assert.include(error.message, "127.0.0.1:1")
      assert.include(error.message, "ECONNREFUSED", "the driver's reason is said")
      assert.notInclude(error.message, "hunter22")
    })
  )
})
