/**
 * The cluster's tables made by several processes at once on an empty database (runners and a server started
 * together): every one of them starts, and the tables are made once. Each member here is a client of its own, with a
 * pool of its own, as separate processes are. On a real PostgreSQL server (DEEP_RESEARCH_TEST_DATABASE_URL, as
 * `.ci/run` sets it) concurrent `CREATE TABLE IF NOT EXISTS` of one table fail without the lock; on PGlite (one
 * backend for every connection) they cannot race, and the test shows only that the lock does not stand in the way.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Redacted from "effect/Redacted"
import * as Scope from "effect/Scope"
import * as PgDatabase from "../../providers/test/support/pgDatabase.js"
import * as ClusterStorage from "../src/ClusterStorage.js"

const fileScope = Effect.runSync(Scope.make())
let database: PgDatabase.TestDatabase | undefined

beforeAll(async () => {
  database = await Effect.runPromise(Scope.extend(PgDatabase.make, fileScope))
}, 60_000)

afterAll(() => Effect.runPromise(Scope.close(fileScope, Exit.void)))

const member = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient>) =>
  Effect.provide(
    effect,
    PgClient.layer({ url: Redacted.make(database?.url ?? "postgres://nowhere/none"), maxConnections: 4 })
  )

/** The cluster's tables in the test database. */
const tables = () =>
  Effect.runPromise(
    member(
      Effect.map(
        SqlClient.SqlClient.pipe(
          Effect.flatMap(
            (sql) => sql<{ readonly name: string }>`SELECT table_name AS name FROM information_schema.tables
              WHERE table_schema = 'public' AND table_name LIKE 'cluster%'`
          )
        ),
        (rows) => rows.map((row) => row.name).sort()
      )
    )
  )

/** Five members preparing at once, each with its own pool; what each came back with. */
const fiveAtOnce = (config: Parameters<typeof ClusterStorage.prepare>[0]) =>
  Effect.runPromise(
    Effect.forEach(
      Array.from({ length: 5 }, (_, index) => index),
      (index) => member(Effect.as(ClusterStorage.prepare(config), index)),
      { concurrency: "unbounded" }
    )
  )

describe("the cluster's tables", () => {
  it("are made once when five members start at once on an empty database, and every member starts", async () => {
    assert.deepStrictEqual(await tables(), [])
    assert.deepStrictEqual(await fiveAtOnce({}), [0, 1, 2, 3, 4])
    assert.includeMembers(await tables(), ["cluster_messages", "cluster_replies", "cluster_runners"])
    // Members with shard locks in a table (a database of one backend) add theirs the same way.
    assert.deepStrictEqual(await fiveAtOnce({ shardLockDisableAdvisory: true }), [0, 1, 2, 3, 4])
    assert.include(await tables(), "cluster_locks")
    // A member that starts later finds them made.
    await Effect.runPromise(member(ClusterStorage.prepare({})))
  }, 60_000)
})
