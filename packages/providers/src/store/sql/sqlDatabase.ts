/**
 * What the session store asks of its database beyond plain statements: the database's own clock (leases are judged
 * by it, so that processes on several machines agree), the retry schedule that waits out a busy SQLite file, how the
 * store's writes are committed, and how a failure that no caller can act on ends.
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
import type * as Scope from "effect/Scope"
import { isBusyCode } from "./sqliteConnection.js"

/** The database's clock in milliseconds since the epoch, as an SQL expression of its dialect. */
export const nowMillis = (sql: SqlClient.SqlClient) =>
  sql.onDialectOrElse({
    pg: () => sql.literal("(extract(epoch from clock_timestamp()) * 1000)::bigint"),
    orElse: () => sql.literal("CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)")
  })

/** The codes, anywhere in a failure's chain of causes. */
const codesOf = (error: unknown, depth = 0): ReadonlyArray<string> =>
  typeof error !== "object" || error === null || depth > 5
    ? []
    : [...("code" in error ? [String(error.code)] : []), ...("cause" in error ? codesOf(error.cause, depth + 1) : [])]

/** A failure that passes by itself: SQLite's file held by another process's writer (not a server out of reach). */
const isPassing = (error: unknown): boolean =>
  typeof error === "object" &&
  error !== null &&
  "_tag" in error &&
  error._tag === "SqlError" &&
  codesOf(error).some(isBusyCode)

/**
 * The clock of the database's waits: the wall clock, whatever clock the caller runs on (a test's `TestClock` drives
 * the research, not how long another process holds a file).
 */
export const wallClock = Clock.make()

/**
 * A statement or transaction that waits out a busy file: from 10 ms, doubling, jittered, at most 2 s apart, for 60 s
 * (the SQLite store's busy timeout; SQLite's own handler waits only briefly, inside the native call that holds Node's
 * event loop, `sqliteConnection.ts`).
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

/** A server out of reach: the connection refused, cut, or the server shutting down or starting (PostgreSQL's 57P0x, 08xxx). */
const isUnreachable = (error: unknown): boolean =>
  codesOf(error).some((code) => /^(ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|57P0[123]|08\d\d\d)$/.test(code)) ||
  /Connection terminated|connection error|not queryable/i.test(messagesOf(error))

/** The messages, anywhere in a failure's chain of causes. */
const messagesOf = (error: unknown, depth = 0): string =>
  typeof error !== "object" || error === null || depth > 5
    ? ""
    : `${"message" in error ? String(error.message) : ""} ${"cause" in error ? messagesOf(error.cause, depth + 1) : ""}`

/** How long a run's write waits for a database out of reach before its run fails. */
export const outagePatience = "120 seconds"

/**
 * A run's write (a checkpoint, events, a report) that meets a database out of reach waits for it, trying again every
 * second, for `outagePatience`, and says so once, rather than ending the run. An acceptance does not wait: its client
 * is told at once. A run whose hold on its session may lapse meanwhile (`lapsing`) stops waiting then, as a defect
 * that says why: another process may take the session over once the hold has lapsed, and the session's run must have
 * ended here by then (it resumes from its last checkpoint wherever it is taken up next).
 */
export const throughOutage =
  (what: string, lapsing: () => boolean = () => false) =>
  <A, E>(effect: Effect.Effect<A, E>): Effect.Effect<A, E> => {
    let said = false
    // Sandboxed: a transaction whose connection broke fails its rollback too, which the driver raises as a defect.
    const unreachable = (cause: Cause.Cause<E>) => isUnreachable(Cause.squash(cause))
    return Effect.sandbox(effect).pipe(
      Effect.tapError((cause) =>
        said || !unreachable(cause)
          ? Effect.void
          : Effect.zipRight(
              Effect.sync(() => (said = true)),
              Effect.logWarning(
                `SqlSessionStore: the database cannot be reached to ${what}; waiting for it (up to ${outagePatience})`
              )
            )
      ),
      Effect.retry({
        schedule: Schedule.spaced("1 second").pipe(Schedule.upTo(outagePatience)),
        while: (cause) => unreachable(cause) && !lapsing()
      }),
      Effect.catchAll((cause) =>
        unreachable(cause) && lapsing()
          ? Effect.dieMessage(
              `the database stayed out of reach for longer than this process's hold on the session lasts, so it ` +
                `cannot ${what}: the run stops here, to be resumed from its last checkpoint`
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
 * The store's writes. PostgreSQL: each its own transaction, any number at once. SQLite has one writer and syncs each
 * commit: the writes of this process that wait at the same moment (a burst of acceptances, the checkpoints of many
 * runs) are committed together, one transaction and one sync, each in a savepoint of its own so that one that fails
 * leaves the others; each caller returns only once the transaction holding its write is committed.
 */
export const makeWriter = (sql: SqlClient.SqlClient): Effect.Effect<Writer, never, Scope.Scope> =>
  sql.onDialectOrElse({
    pg: () =>
      Effect.succeed<Writer>((transaction) => patiently(Effect.uninterruptible(sql.withTransaction(transaction)))),
    orElse: () => groupCommit(sql)
  })

const groupCommit = (sql: SqlClient.SqlClient): Effect.Effect<Writer, never, Scope.Scope> =>
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
    const writer: Writer = <A, E>(transaction: Effect.Effect<A, E>) =>
      Effect.flatMap(Deferred.make<A, E | SqlError>(), (done) =>
        Effect.zipRight(
          Queue.offer(queue, {
            run: Effect.map(Effect.exit(sql.withTransaction(transaction)), (exit) => Deferred.done(done, exit)),
            fail: (cause) => Deferred.failCause(done, cause)
          }),
          Deferred.await(done)
        )
      )
    return writer
  })

/**
 * A failure no caller can act on, as a defect that says what the store could not do and why; a failure the driver
 * raises as a defect (a commit the database refuses) is said the same way.
 */
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
