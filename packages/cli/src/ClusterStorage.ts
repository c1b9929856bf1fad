/**
 * The cluster's own tables (`@effect/cluster`'s runners, shard locks, messages and replies), made one process at a
 * time. The cluster's storage creates them when it starts, with `CREATE TABLE IF NOT EXISTS`; PostgreSQL refuses two
 * such statements for one table at once ("duplicate key value violates unique constraint"), so runners and servers
 * started together on an empty database could fail to start. Each now takes a session advisory lock first: the first
 * makes the tables, the others wait for it and find them made.
 */
import * as ShardingConfig from "@effect/cluster/ShardingConfig"
import * as SqlMessageStorage from "@effect/cluster/SqlMessageStorage"
import * as SqlRunnerStorage from "@effect/cluster/SqlRunnerStorage"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

/** An arbitrary constant naming the advisory lock held while the tables are made ("dr-clstr" in ASCII). */
const lockKey = "7238257126815397234"

/**
 * Makes (or finds) the cluster's tables for a member of `config` (its shard locks in a table of their own unless
 * advisory), waiting while another process makes them. The lock goes with its connection, so a process that dies
 * holding it holds nobody up.
 */
export const prepare = (
  config: Partial<ShardingConfig.ShardingConfig["Type"]>
): Effect.Effect<void, SqlError, SqlClient.SqlClient> =>
  Effect.scoped(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const connection = yield* sql.reserve
      yield* connection.executeRaw(`SELECT pg_advisory_lock(${lockKey})`, [])
      // Let go before the connection goes back to the pool (finalizers run last first).
      yield* Effect.addFinalizer(() =>
        Effect.ignore(connection.executeRaw(`SELECT pg_advisory_unlock(${lockKey})`, []))
      )
      yield* Layer.build(
        Layer.merge(SqlRunnerStorage.layer, SqlMessageStorage.layer).pipe(Layer.provide(ShardingConfig.layer(config)))
      )
    })
  )

/** `prepare` as a layer, for a cluster member to depend on before its storage starts. */
export const layer = (
  config: Partial<ShardingConfig.ShardingConfig["Type"]>
): Layer.Layer<never, SqlError, SqlClient.SqlClient> => Layer.effectDiscard(prepare(config))
