/**
 * What the session store asks of its database beyond plain statements: the database's own clock (leases are judged
 * by it, so that processes on several machines agree), which failures are passing (a busy SQLite file, a PostgreSQL
 * server restarting) and the retry schedule that waits them out, and how a failure that no caller can act on ends.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as ParseResult from "effect/ParseResult"
import * as Schedule from "effect/Schedule"

/** The database's clock in milliseconds since the epoch, as an SQL expression of its dialect. */
export const nowMillis = (sql: SqlClient.SqlClient) =>
  sql.onDialectOrElse({
    pg: () => sql.literal("(extract(epoch from clock_timestamp()) * 1000)::bigint"),
    orElse: () => sql.literal("CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)")
  })

/** The codes, anywhere in a failure's chain of causes. */
const codesOf = (error: unknown, depth = 0): ReadonlyArray<string> => {
  if (typeof error !== "object" || error === null || depth > 5) return []
  const code = "code" in error && typeof error.code === "string" ? [error.code] : []
  return [...code, ...("cause" in error ? codesOf(error.cause, depth + 1) : [])]
}

/**
 * A failure that passes by itself: SQLite's file held by another writer (`SQLITE_BUSY`, `SQLITE_LOCKED`). A PostgreSQL
 * server that cannot be reached is not waited out here: a client is told at once (a 503 naming the database), and the
 * pool's next connection finds the server when it is back.
 */
export const isPassing = (error: SqlError): boolean =>
  codesOf(error).some((code) => code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED"))

/**
 * How long a statement waits out a passing failure: the busy timeout of the SQLite store. SQLite's own busy handler
 * waits only briefly (`sqliteConnection.ts`): it waits inside the native call, holding Node's event loop; these waits
 * are timers.
 */
export const patience = Duration.seconds(60)

/** Retries of a passing failure: from 10 ms, doubling, jittered, at most 2 s apart, until `patience` is spent. */
export const passingSchedule = Schedule.exponential("10 millis", 2).pipe(
  Schedule.jittered,
  Schedule.either(Schedule.spaced("2 seconds")),
  Schedule.upTo(patience)
)

const isSqlError = (error: unknown): error is SqlError =>
  typeof error === "object" && error !== null && "_tag" in error && error._tag === "SqlError"

/**
 * The clock of the database's waits: the wall clock, whatever clock the caller runs on (a test's `TestClock` drives
 * the research, not how long another process holds a file).
 */
export const wallClock = Clock.make()

/** A statement or transaction that waits out passing failures. */
export const patiently = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.retry(effect, { schedule: passingSchedule, while: (error) => isSqlError(error) && isPassing(error) }).pipe(
    Effect.withClock(wallClock)
  )

/** Runs the writes of a store one at a time: SQLite has one writer, and a second one of the same process only waits. */
export type Writer = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>

/** One writer at a time on SQLite (the process's writes queue here, not in SQLite's lock); any number on PostgreSQL. */
export const makeWriter = (sql: SqlClient.SqlClient): Effect.Effect<Writer> =>
  sql.onDialectOrElse({
    pg: () => Effect.succeed((effect) => effect),
    orElse: () => Effect.map(Effect.makeSemaphore(1), (semaphore): Writer => semaphore.withPermits(1))
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
