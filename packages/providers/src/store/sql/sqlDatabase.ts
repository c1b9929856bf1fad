/**
 * What the session store asks of its database beyond plain statements: its clock (leases are judged by it, so that
 * processes on several machines agree), the waits for a busy file or a server out of reach, how writes are committed,
 * and how a failure that no caller can act on ends.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import type * as ParseResult from "effect/ParseResult"
import * as Queue from "effect/Queue"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { isBusyCode } from "./sqliteConnection.js"

/** The database's clock in milliseconds since the epoch, as an SQL expression of its dialect. */
export const nowMillis = (sql: SqlClient.SqlClient) =>
  sql.onDialectOrElse({
    pg: () => sql.literal("(extract(epoch from clock_timestamp()) * 1000)::bigint"),
    orElse: () => sql.literal("CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)")
  })

/** An integer column: PostgreSQL's driver gives a `bigint` as text. */
export const Integer = Schema.Union(Schema.Number, Schema.NumberFromString)

/** A query's rows, decoded. */
export const decodeRows =
  <A, I>(schema: Schema.Schema<A, I>) =>
  <E, R>(query: Effect.Effect<ReadonlyArray<unknown>, E, R>) =>
    Effect.flatMap(query, (rows) => Schema.decodeUnknown(Schema.Array(schema))(rows))

/** A failure and the causes beneath it (the driver's error inside `SqlError`, the socket's inside the driver's). */
const chainOf = (error: unknown, depth = 0): ReadonlyArray<{ readonly code?: unknown; readonly message?: unknown }> =>
  typeof error !== "object" || error === null || depth > 5
    ? []
    : [error, ...("cause" in error ? chainOf(error.cause, depth + 1) : [])]

/** A failure that passes by itself: SQLite's file held by another process's writer (not a server out of reach). */
const isPassing = (error: unknown): boolean => chainOf(error).some((link) => isBusyCode(String(link.code ?? "")))

/**
 * A server out of reach: the connection refused or cut, or the server shutting down or starting (57P0x, 08xxx), in a
 * failure or a defect, or beneath the defect that a store's operation makes of it (`orDie`).
 */
export const isUnreachable = (error: unknown): boolean =>
  chainOf(error).some(
    (link) =>
      /^(ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|57P0[123]|08\d\d\d)$/.test(String(link.code ?? "")) ||
      /Connection terminated|connection error|not queryable/i.test(String(link.message ?? ""))
  )

/** The clock of the database's waits: the wall clock, even under a test's `TestClock` (which drives the research). */
export const wallClock = Clock.make()

/**
 * A statement or transaction that waits out a busy file, for 60 s: the SQLite store's busy timeout, on timers (SQLite's
 * own handler waits only briefly, inside the native call that holds Node's event loop, `sqliteConnection.ts`).
 */
export const patiently = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.retry(effect, {
    schedule: Schedule.exponential("10 millis", 2).pipe(
      Schedule.jittered,
      Schedule.either(Schedule.spaced("2 seconds")),
      Schedule.upTo("60 seconds")
    ),
    while: isPassing
  }).pipe(Effect.withClock(wallClock))

/** How long a run's write waits for a database out of reach before its run fails. */
export const outagePatience = "120 seconds"

/**
 * A run's write that meets a database out of reach waits for it (saying so once) rather than ending the run; an
 * acceptance does not, its client is told at once. It stops waiting once the run's hold may lapse (`lapsing`): another
 * process may take the session over then, and this run must have ended by that time (it resumes from its checkpoint).
 */
export const throughOutage =
  (what: string, lapsing: () => boolean = () => false) =>
  <A, E>(effect: Effect.Effect<A, E>): Effect.Effect<A, E> => {
    let said = false
    // Sandboxed: a transaction whose connection broke fails its rollback too, which the driver raises as a defect.
    const unreachable = (cause: Cause.Cause<E>) => isUnreachable(Cause.squash(cause))
    return Effect.sandbox(effect).pipe(
      Effect.tapError((cause) => {
        if (said || !unreachable(cause)) return Effect.void
        said = true
        return Effect.logWarning(
          `SqlSessionStore: the database cannot be reached to ${what}; waiting for it (up to ${outagePatience})`
        )
      }),
      Effect.retry({
        schedule: Schedule.spaced("1 second").pipe(Schedule.upTo(outagePatience)),
        while: (cause) => unreachable(cause) && !lapsing()
      }),
      Effect.catchAll((cause) =>
        unreachable(cause) && lapsing()
          ? // With the outage beneath it, so that whoever runs the run again knows to wait for the database first.
            Effect.die(
              new Error(
                `the database stayed out of reach for longer than this process's hold on the session lasts, so it ` +
                  `cannot ${what}: the run stops here, to be resumed from its last checkpoint`,
                { cause: Cause.squash(cause) }
              )
            )
          : Effect.fail(cause)
      ),
      Effect.unsandbox,
      Effect.withClock(wallClock)
    )
  }

/** Runs a write of the store as a transaction, and returns once it is committed. */
export type Writer = <A, E>(transaction: Effect.Effect<A, E>) => Effect.Effect<A, E | SqlError>

/** A write waiting for the next commit: it runs in the batch's transaction and settles its caller once that ends. */
interface Pending {
  readonly run: Effect.Effect<Effect.Effect<void>>
  readonly fail: (cause: Cause.Cause<SqlError>) => Effect.Effect<void>
}

/** How many writes one commit carries at most. */
const batchSize = 128

/**
 * The store's writes. PostgreSQL: each its own transaction. SQLite has one writer and syncs each commit: the writes
 * waiting at the same moment (a burst of acceptances) are committed together, each in a savepoint of its own so that
 * one that fails leaves the others, and each caller returns once the transaction holding its write is committed.
 */
export const makeWriter = (sql: SqlClient.SqlClient): Effect.Effect<Writer, never, Scope.Scope> =>
  sql.onDialectOrElse({
    pg: () =>
      Effect.succeed<Writer>((transaction) => patiently(Effect.uninterruptible(sql.withTransaction(transaction)))),
    orElse: () => groupCommit(sql)
  })

const groupCommit = (sql: SqlClient.SqlClient) =>
  Effect.gen(function* () {
    const queue = yield* Effect.acquireRelease(Queue.unbounded<Pending>(), Queue.shutdown)
    const commit = (batch: Iterable<Pending>) =>
      sql.withTransaction(Effect.forEach(batch, (pending) => pending.run)).pipe(
        patiently,
        Effect.matchCauseEffect({
          onFailure: (cause) => Effect.forEach(batch, (pending) => pending.fail(cause), { discard: true }),
          onSuccess: (settles) => Effect.all(settles, { discard: true })
        }),
        Effect.uninterruptible
      )
    yield* Queue.takeBetween(queue, 1, batchSize).pipe(Effect.flatMap(commit), Effect.forever, Effect.forkScoped)
    return <A, E>(transaction: Effect.Effect<A, E>) =>
      Effect.flatMap(Deferred.make<A, E | SqlError>(), (done) =>
        Effect.zipRight(
          Queue.offer(queue, {
            run: Effect.map(Effect.exit(sql.withTransaction(transaction)), (exit) => Deferred.done(done, exit)),
            fail: (cause: Cause.Cause<SqlError>) => Deferred.failCause(done, cause)
          }),
          Deferred.await(done)
        )
      )
  })

/** A failure no caller can act on (or a driver's defect, a commit refused), as a defect saying what and why. */
export const orDie =
  (what: string) =>
  <A, R>(effect: Effect.Effect<A, SqlError | ParseResult.ParseError, R>): Effect.Effect<A, never, R> =>
    Effect.catchAllCause(effect, (cause) => {
      if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause as Cause.Cause<never>)
      const error = Cause.squash(cause)
      const said = error instanceof Error ? messageOf(error) : String(error)
      return Effect.die(new Error(`SqlSessionStore: ${what}: ${said}`, { cause: error }))
    })

/** A failure's message with what the driver said beneath it (`SqlError`'s own is only "Failed to execute statement"). */
export const messageOf = (error: { readonly message: string; readonly cause?: unknown }): string => {
  const beneath = error.cause instanceof Error && error.cause.message !== "" ? error.cause.message : undefined
  return beneath === undefined || error.message.includes(beneath) ? error.message : `${error.message}: ${beneath}`
}
