/**
 * A run's hold on a session, as a lease: a row of `deep_research_leases` with the owner (this store, in this process),
 * a token (the run's) and an expiry by the database's clock. Each store renews its leases in one statement every third
 * of their duration, so a lease outlives a killed process by at most one duration, and no connection holds anything
 * (a lease its ended run could not release, the database away, is deleted by the next renewal instead).
 * A session stored queued by a store that holds what it accepts (`holdAccepted`) is leased to that store until a run
 * takes it: a dead process's queue is taken over once the lease lapses (`unheld`). A checkpoint is fenced by its run's
 * token (`sqlStore.ts`), so a run that lost its lease cannot write over the new holder's work.
 */
import * as Errors from "@deep-research/core/Errors"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { randomUUID } from "node:crypto"
import * as os from "node:os"
import { decodeRows, nowMillis, orDie, patiently, throughOutage, wallClock, type Writer } from "./sqlDatabase.js"

/** How long a lease lasts unless renewed: how long a killed process's sessions stay held. */
export const defaultDuration = Duration.seconds(15)

/** The leases of one store. */
export interface Leases {
  /** Holds the session for the life of the scope; `ResearchSessionBusy` while a live lease of another run holds it. */
  readonly lock: (sessionId: string) => Effect.Effect<void, Errors.ResearchSessionBusy, Scope.Scope>
  /** Inside a checkpoint's transaction: a queued session is leased to this store, unless something holds it. */
  readonly holdAccepted: (sessionId: string) => Effect.Effect<void, SqlError>
  /** The token of the run of this store holding the session, if one does: its checkpoints are fenced by it. */
  readonly token: (sessionId: string) => string | undefined
  /** Whether the caller is that run (or a fiber it started): its reads of the session wait through an outage. */
  readonly inRun: (sessionId: string) => Effect.Effect<boolean>
  /**
   * Whether a run of this store holds the session and nothing has renewed its lease for two thirds of its duration:
   * the run stops waiting for the database then, so that it has ended before another process can take the session.
   */
  readonly lapsing: (sessionId: string) => boolean
  /** Sessions stored queued or running that nothing holds: a stopped process's, to be taken over. */
  readonly unheld: Effect.Effect<ReadonlyArray<{ readonly id: string; readonly status: string }>>
}

const LeaseRow = Schema.Struct({ token: Schema.String, holder: Schema.String })
const UnheldRow = Schema.Struct({ id: Schema.String, status: Schema.String })

/**
 * Every lease of the store renewed a third of the way through its duration (one missed renewal loses nothing), for the
 * life of the scope, the first a third of a duration after the store opens; a database out of reach is said once, and
 * tried on. `renewed.at` is when the last renewal that committed began, by this process's clock.
 */
const keepRenewed = (renew: Effect.Effect<unknown, unknown>, millis: number, renewed: { at: number }) => {
  let failing = false
  return Effect.zipLeft(Clock.currentTimeMillis, renew).pipe(
    Effect.tap((startedAt) => {
      failing = false
      renewed.at = startedAt
    }),
    Effect.catchAllCause((cause) => {
      const first = !failing
      failing = true
      return first
        ? Effect.logWarning(`SqlSessionStore: cannot renew this process's leases (${Cause.squash(cause)}); retrying`)
        : Effect.void
    }),
    Effect.schedule(Schedule.spaced(Duration.millis(Math.max(50, Math.floor(millis / 3))))),
    Effect.withClock(wallClock),
    Effect.interruptible,
    Effect.forkScoped
  )
}

/**
 * How the runs of a store let go of their leases, and how its leases are renewed. A release that cannot be committed
 * (the database out of reach) is left to the next renewal that commits, which deletes it: the renewal renews every
 * lease of its store, so such a lease would otherwise hold its session for as long as the process lives, against a
 * runner given the session after the outage.
 */
const releases = (sql: SqlClient.SqlClient, write: Writer, owner: string, millis: number) => {
  const now = nowMillis(sql)
  /** The tokens of ended runs whose leases are still to be deleted. */
  const unreleased = new Set<string>()
  const release = (sessionId: string, token: string) =>
    write(sql`DELETE FROM deep_research_leases WHERE session_id = ${sessionId} AND token = ${token}`).pipe(
      Effect.catchAllCause((cause) =>
        Effect.zipRight(
          Effect.sync(() => unreleased.add(token)),
          Effect.logWarning(
            `SqlSessionStore: could not release session ${sessionId} now; it is released once the database answers`,
            cause
          )
        )
      )
    )
  const renew = Effect.suspend(() => {
    const ended = [...unreleased]
    const deleted: Effect.Effect<unknown, SqlError> =
      ended.length === 0
        ? Effect.void
        : sql`DELETE FROM deep_research_leases WHERE owner = ${owner} AND ${sql.in("token", ended)}`
    return write(
      Effect.zipRight(
        deleted,
        sql`UPDATE deep_research_leases SET expires_at = ${now} + ${millis} WHERE owner = ${owner}`
      )
    ).pipe(Effect.tap(() => Effect.sync(() => ended.forEach((token) => unreleased.delete(token)))))
  })
  return { release, renew }
}

/** The leases of a store over the client in context, renewed for the life of the scope. */
export const make = (options: {
  readonly duration?: Duration.DurationInput | undefined
  readonly holdAccepted?: boolean | undefined
  readonly write: Writer
}): Effect.Effect<Leases, never, SqlClient.SqlClient | Scope.Scope> =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const now = nowMillis(sql)
    const millis = Duration.toMillis(Duration.decode(options.duration ?? defaultDuration))
    const owner = `${os.hostname()}/${process.pid}/${randomUUID()}`
    const holder = `pid ${process.pid} on host ${os.hostname()}`
    /** The runs of this store holding a session, by session: their tokens, and when they took it (by `wallClock`). */
    const held = new Map<string, { readonly token: string; readonly takenAt: number }>()
    /** The sessions the current fiber's run holds, set for the life of each lock's scope (and seen by its children). */
    const runHolds = FiberRef.unsafeMake<ReadonlySet<string>>(new Set())
    /** Leases the session, unless a live lease of another store holds it (`replaceOwn`: or one of this store). */
    const take = (sessionId: string, token: string, replaceOwn: boolean) =>
      sql`INSERT INTO deep_research_leases (session_id, owner, token, holder, expires_at)
        VALUES (${sessionId}, ${owner}, ${token}, ${holder}, ${now} + ${millis})
        ON CONFLICT (session_id) DO UPDATE SET owner = excluded.owner, token = excluded.token,
          holder = excluded.holder, expires_at = excluded.expires_at
        WHERE deep_research_leases.expires_at < ${now}${replaceOwn ? sql` OR deep_research_leases.owner = ${owner}` : sql``}`

    const acquire = (sessionId: string, token: string) =>
      Effect.gen(function* () {
        // Two runs of one store never share a session; the database decides between stores and processes.
        if (held.has(sessionId))
          return yield* new Errors.ResearchSessionBusy({ sessionId, holder: `another run of ${holder}` })
        held.set(sessionId, { token, takenAt: wallClock.unsafeCurrentTimeMillis() })
        const rows = yield* options
          .write(
            Effect.zipRight(
              take(sessionId, token, true),
              sql`SELECT token, holder FROM deep_research_leases WHERE session_id = ${sessionId}`
            )
          )
          .pipe(
            // A run that starts while the database is out of reach waits for it, as its checkpoints do; a shard that
            // moves on meanwhile still stops it.
            throughOutage(`lock session ${sessionId}`),
            Effect.interruptible,
            decodeRows(LeaseRow),
            orDie(`cannot lock session ${sessionId}`),
            // A lock that could not be taken (the database out of reach) leaves the session free for a later try.
            Effect.onError(() => Effect.sync(() => held.delete(sessionId)))
          )
        if (rows[0]?.token === token) return
        held.delete(sessionId)
        return yield* new Errors.ResearchSessionBusy({ sessionId, holder: rows[0]?.holder ?? "another run" })
      })
    const letGo = releases(sql, options.write, owner, millis)
    const release = (sessionId: string, token: string) =>
      Effect.suspend(() => {
        if (held.get(sessionId)?.token === token) held.delete(sessionId)
        return letGo.release(sessionId, token)
      })

    const renewed = { at: 0 }
    yield* keepRenewed(letGo.renew, millis, renewed)
    return {
      lock: (sessionId) =>
        Effect.suspend(() => {
          const token = randomUUID()
          return Effect.acquireRelease(acquire(sessionId, token), () => release(sessionId, token)).pipe(
            Effect.zipRight(FiberRef.get(runHolds)),
            Effect.flatMap((holds) => Effect.locallyScoped(runHolds, new Set([...holds, sessionId])))
          )
        }),
      holdAccepted: (sessionId) =>
        options.holdAccepted === true ? Effect.asVoid(take(sessionId, `accepted/${randomUUID()}`, false)) : Effect.void,
      token: (sessionId) => held.get(sessionId)?.token,
      inRun: (sessionId) => FiberRef.getWith(runHolds, (holds) => Effect.succeed(holds.has(sessionId))),
      lapsing: (sessionId) => {
        const run = held.get(sessionId)
        return (
          run !== undefined &&
          wallClock.unsafeCurrentTimeMillis() - Math.max(renewed.at, run.takenAt) > (millis * 2) / 3
        )
      },
      unheld: sql`SELECT s.id AS id, s.status AS status FROM deep_research_sessions s
        LEFT JOIN deep_research_leases l ON l.session_id = s.id
        WHERE s.status IN ('queued', 'running') AND (l.session_id IS NULL OR l.expires_at < ${now})
        ORDER BY s.created_at, s.id`.pipe(
        decodeRows(UnheldRow),
        patiently,
        orDie("cannot read which sessions nothing holds")
      )
    }
  })
