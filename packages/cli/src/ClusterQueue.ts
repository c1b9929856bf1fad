/**
 * Sessions sent to a cluster that no runner has started yet: their `Run` is in the cluster's message table, not
 * answered, and the store has no session of that id (a runner saves it when it starts). `list`, `show` and `delete`
 * with `--database` read them here, so that a session sent with `--detach` while no worker runs is seen as queued
 * rather than missing. Read from `@effect/cluster`'s SQL message storage (`cluster_messages`), by its columns.
 */
import * as Snowflake from "@effect/cluster/Snowflake"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { ResearchSession } from "./Cluster.js"
import type { Listed } from "./RunSchema.js"

/** A session waiting for a runner: its id, its question, its research settings (as sent) and when it was sent. */
export interface Waiting {
  readonly id: string
  readonly query: string
  readonly config: unknown
  readonly sentAt: number
}

const RunPayload = Schema.parseJson(Schema.Struct({ question: Schema.String, config: Schema.optional(Schema.Unknown) }))
const decodePayload = Schema.decodeUnknownOption(RunPayload)

/**
 * The sessions of the cluster's unanswered `Run` messages (one of them when `id` is given), oldest first; none when
 * the database holds no cluster. Whether the store has them is the caller's to check, after reading these: a runner
 * that starts one in between saves it first. A failure to read them leaves them out, with a warning: what waits is
 * shown where it can be, never in the way of the stored sessions.
 */
export const waiting = (id?: string): Effect.Effect<ReadonlyArray<Waiting>, never, SqlClient.SqlClient> =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const [found] = yield* sql<{ readonly clustered: boolean }>`
      SELECT to_regclass('cluster_messages') IS NOT NULL AS clustered`
    if (found?.clustered !== true) return []
    const rows = yield* sql<{ readonly id: string; readonly entity_id: string; readonly payload: string | null }>`
      SELECT id::text AS id, entity_id, payload FROM cluster_messages
      WHERE entity_type = ${ResearchSession.type} AND tag = 'Run' AND NOT processed
      ${id === undefined ? sql`` : sql`AND entity_id = ${id}`}
      ORDER BY id`
    return rows.flatMap((row): Array<Waiting> => {
      const payload = decodePayload(row.payload)
      if (payload._tag === "None") return []
      return [
        {
          id: row.entity_id,
          query: payload.value.question,
          config: payload.value.config,
          sentAt: Snowflake.timestamp(Snowflake.Snowflake(row.id))
        }
      ]
    })
  }).pipe(
    Effect.catchAllCause((cause) =>
      Effect.as(Effect.logWarning("cluster: the sessions waiting for a runner could not be read", cause), [])
    )
  )

/** A session waiting for a runner as a listing shows it: queued, nothing spent, sent when it was created. */
export const listed = (waiting: Waiting): Listed => ({
  id: waiting.id,
  status: "queued",
  query: waiting.query,
  createdAt: waiting.sentAt,
  updatedAt: waiting.sentAt,
  costUsd: 0
})
