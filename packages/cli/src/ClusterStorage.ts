/**
 * The cluster's own tables (`@effect/cluster`'s runners, shard locks, messages and replies), made one process at a
 * time. The cluster's storage creates them when it starts, with `CREATE TABLE IF NOT EXISTS`; PostgreSQL refuses two
 * such statements for one table at once ("duplicate key value violates unique constraint"), so runners and servers
 * started together on an empty database could fail to start. Each builds its storages while it holds a session advisory
 * lock: the first makes the tables, the others wait for it and find them made. A runner's storage keeps, once the runner
 * has left the cluster, the membership it saw then (`leaving`).
 */
import * as ShardingConfig from "@effect/cluster/ShardingConfig"
import type * as MessageStorage from "@effect/cluster/MessageStorage"
import type { Runner } from "@effect/cluster/Runner"
import * as RunnerStorage from "@effect/cluster/RunnerStorage"
import * as SqlMessageStorage from "@effect/cluster/SqlMessageStorage"
import * as SqlRunnerStorage from "@effect/cluster/SqlRunnerStorage"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
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
          const storages = yield* Layer.buildWithScope(
            Layer.merge(SqlRunnerStorage.layer, SqlMessageStorage.layer).pipe(
              Layer.provide(ShardingConfig.layerFromEnv(config))
            ),
            member
          )
          return Context.add(
            storages,
            RunnerStorage.RunnerStorage,
            leaving(Context.get(storages, RunnerStorage.RunnerStorage))
          )
        })
      )
    })
  )

/**
 * A runner's storage that, once the runner has left the cluster (its shutdown unregisters it first, then stops its
 * entities), answers its membership as it was when the runner left. Read live, the stopping runner saw itself gone:
 * alone, it warned "No healthy runners available" every second until it stopped, and either way it gave up its shards
 * one query each, all at once on the one connection that holds their locks (the PostgreSQL driver's warning "Calling
 * client.query() when the client is already executing a query"), where the cluster's shutdown releases them together,
 * last (`releaseAll`), once its entities have stopped.
 */
export const leaving = (storage: RunnerStorage.RunnerStorage["Type"]): RunnerStorage.RunnerStorage["Type"] => {
  let left = false
  let seen: ReadonlyArray<readonly [runner: Runner, healthy: boolean]> = []
  return {
    ...storage,
    getRunners: Effect.suspend(() =>
      left
        ? Effect.succeed([...seen])
        : Effect.tap(storage.getRunners, (runners) => Effect.sync(() => (seen = runners)))
    ),
    unregister: (address) =>
      Effect.zipRight(
        Effect.sync(() => (left = true)),
        storage.unregister(address)
      )
  }
}

/** Makes (or finds) the cluster's tables for a member of `config`, waiting while another process makes them. */
export const prepare = (
  config: Partial<ShardingConfig.ShardingConfig["Type"]>
): Effect.Effect<void, SqlError | ConfigError.ConfigError, SqlClient.SqlClient> =>
  Effect.scoped(Effect.asVoid(Layer.build(layer(config))))
