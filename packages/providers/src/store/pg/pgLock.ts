/**
 * One run at a time per session, for the PostgreSQL store: a session-level advisory lock, taken on one connection
 * that the store keeps for its whole life. PostgreSQL lets an advisory lock go when its connection closes, so a
 * process that dies (even by `kill -9`) leaves no lock behind, and no lease has to expire.
 *
 * Advisory locks are re-entrant on their connection, so the locks held in this process are also kept in a set: a
 * second run of the same session in this process is refused here, before PostgreSQL is asked. The
 * `deep_research_locks` table only says who holds a lock, for the message of a refused run; the advisory lock decides.
 */
import { Errors } from "@deep-research/core"
import * as SqlClient from "@effect/sql/SqlClient"
import type * as SqlConnection from "@effect/sql/SqlConnection"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import type * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { createHash, randomUUID } from "node:crypto"
import * as os from "node:os"

/** The locks this process holds, by database and session, over all its stores. */
const heldHere = new Set<string>()

/**
 * An advisory lock key: 64 bits of a hash of what it locks (`session` for a run, `events` for appending to the log)
 * and the session's id, as PostgreSQL's signed bigint.
 */
export const keyOf = (sessionId: string, what: "session" | "events" = "session"): string =>
  createHash("sha256").update(`deep-research/${what}/${sessionId}`).digest().readBigInt64BE(0).toString()

const HolderRow = Schema.Struct({ holder: Schema.String, since: Schema.Union(Schema.DateFromSelf, Schema.String) })
const AcquiredRow = Schema.Struct({ acquired: Schema.Boolean })
const IdentityRow = Schema.Struct({ identity: Schema.String })

const orDie =
  (what: string) =>
  <A, R>(effect: Effect.Effect<A, SqlError | ParseResult.ParseError, R>): Effect.Effect<A, never, R> =>
    Effect.orDieWith(effect, (error) => new Error(`PgSessionStore: ${what}: ${error.message}`, { cause: error }))

/** Locks sessions; made once per store, in the store's scope. */
export const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const connection: SqlConnection.Connection = yield* orDie("cannot open the connection that holds locks")(sql.reserve)
  const one = <A, I>(schema: Schema.Schema<A, I>, text: string, params: ReadonlyArray<unknown>) =>
    connection.execute(text, params, undefined).pipe(Effect.flatMap((rows) => Schema.decodeUnknown(schema)(rows[0])))
  // Which server and database this is: two stores on the same database share the set of locks held here.
  const { identity } = yield* orDie("cannot read the server's identity")(
    one(
      IdentityRow,
      "SELECT current_database() || '@' || pg_postmaster_start_time()::text || '@' || " +
        "coalesce(inet_server_port()::text, '') AS identity",
      []
    )
  )
  const busy = (sessionId: string) =>
    sql`SELECT holder, since FROM deep_research_locks WHERE session_id = ${sessionId}`.pipe(
      Effect.flatMap((rows) => Schema.decodeUnknown(Schema.Array(HolderRow))(rows)),
      orDie(`cannot read who holds session ${sessionId}`),
      Effect.flatMap((rows) =>
        Effect.fail(
          new Errors.SessionBusy({
            sessionId,
            holder: Option.match(Option.fromNullable(rows[0]), {
              onNone: () => "another run on this database",
              onSome: (row) => `${row.holder} since ${row.since instanceof Date ? row.since.toISOString() : row.since}`
            })
          })
        )
      )
    )
  const semaphore = yield* Effect.makeSemaphore(1)
  const holder = `pid ${process.pid} on host ${os.hostname()}`

  const acquire = (sessionId: string, token: string) =>
    semaphore.withPermits(1)(
      Effect.gen(function* () {
        const here = `${identity}/${sessionId}`
        // Claimed here first, in one step, so that two stores of this process never both ask PostgreSQL.
        if (heldHere.has(here)) return yield* busy(sessionId)
        heldHere.add(here)
        const { acquired } = yield* orDie(`cannot lock session ${sessionId}`)(
          one(AcquiredRow, "SELECT pg_try_advisory_lock($1::bigint) AS acquired", [keyOf(sessionId)])
        ).pipe(
          Effect.onExit((exit) =>
            Exit.isSuccess(exit) && exit.value.acquired ? Effect.void : Effect.sync(() => heldHere.delete(here))
          )
        )
        if (!acquired) return yield* busy(sessionId)
        yield* orDie(`cannot record the holder of session ${sessionId}`)(
          sql`INSERT INTO deep_research_locks (session_id, token, holder, since)
            VALUES (${sessionId}, ${token}, ${holder}, now())
            ON CONFLICT (session_id) DO UPDATE SET token = excluded.token, holder = excluded.holder,
            since = excluded.since`
        )
        return here
      })
    )

  const release = (sessionId: string, token: string, here: string) =>
    semaphore
      .withPermits(1)(
        Effect.gen(function* () {
          yield* sql`DELETE FROM deep_research_locks WHERE session_id = ${sessionId} AND token = ${token}`
          yield* connection.execute("SELECT pg_advisory_unlock($1::bigint)", [keyOf(sessionId)], undefined)
        })
      )
      .pipe(
        Effect.ensuring(Effect.sync(() => heldHere.delete(here))),
        Effect.catchAllCause((cause) => Effect.logWarning(`PgSessionStore: could not release ${sessionId}`, cause))
      )

  /** Holds the session for the life of the scope; `SessionBusy` while another run holds it. */
  const lock = (sessionId: string): Effect.Effect<void, Errors.SessionBusy, Scope.Scope> =>
    Effect.suspend(() => {
      const token = randomUUID()
      return Effect.asVoid(Effect.acquireRelease(acquire(sessionId, token), (here) => release(sessionId, token, here)))
    })

  return { lock } as const
})
