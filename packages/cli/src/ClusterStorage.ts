/**
 * The cluster's own tables (`@effect/cluster`'s runners, shard locks, messages and replies), made one process at a
 * time. The cluster's storage creates them when it starts, with `CREATE TABLE IF NOT EXISTS`; PostgreSQL refuses two
 * such statements for one table at once ("duplicate key value violates unique constraint"), so runners and servers
 * started together on an empty database could fail to start. Each builds its storages while it holds a session advisory
 * lock: the first makes the tables, the others wait for it and find them made.
 */
import * as ShardingConfig from "@effect/cluster/ShardingConfig"
import type * as MessageStorage from "@effect/cluster/MessageStorage"
import type * as RunnerStorage from "@effect/cluster/RunnerStorage"
import * as SqlMessageStorage from "@effect/cluster/SqlMessageStorage"
import * as SqlRunnerStorage from "@effect/cluster/SqlRunnerStorage"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

/** An arbitrary constant naming the advisory lock held while the tables are made ("dr-clstr" in ASCII). */
const lockKey = "7238257126815397234"

/**
 * The cluster's storages for a member of `config` (its runners and shard locks, its messages and replies), for the
 * member's cluster layer to take as its own (`storage: "byo"`): made while the lock is held, so that their tables are
 * made (or found) one process at a time, and kept for as long as the layer. Their sharding config is read as the
 * cluster layer reads its own (`layerFromEnv` over `config`), so the two agree. The lock goes with its connection: a
 * process that dies holding it holds nobody up.
 */
export const layer = (
  config: Partial<ShardingConfig.ShardingConfig["Type"]>
): Layer.Layer<
  MessageStorage.MessageStorage | RunnerStorage.RunnerStorage,
  SqlError | ConfigError.ConfigError,
  SqlClient.SqlClient
> =>
  Layer.scopedContext(
    Effect.gen(function* () {
      const member = yield* Effect.scope
      return yield* Effect.scoped(
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const connection = yield* sql.reserve
          yield* connection.executeRaw(`SELECT pg_advisory_lock(${lockKey})`, [])
          // Let go before the connection goes back to the pool (finalizers run last first).
          yield* Effect.addFinalizer(() =>
            Effect.ignore(connection.executeRaw(`SELECT pg_advisory_unlock(${lockKey})`, []))
          )
          // Built into the member's scope: the storages outlive the lock.
          return yield* Layer.buildWithScope(
            Layer.merge(SqlRunnerStorage.layer, SqlMessageStorage.layer).pipe(
              Layer.provide(ShardingConfig.layerFromEnv(config))
            ),
            member
          )
        })
      )
    })
  )

/** Makes (or finds) the cluster's tables for a member of `config`, waiting while another process makes them. */
export const prepare = (
  config: Partial<ShardingConfig.ShardingConfig["Type"]>
): Effect.Effect<void, SqlError | ConfigError.ConfigError, SqlClient.SqlClient> =>
  Effect.scoped(Effect.asVoid(Layer.build(layer(config))))
