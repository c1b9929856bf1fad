/**
 * A run's hold on a session, as a lease: a row of `deep_research_leases` with the owner (this store, in this process),
 * a token (the run's) and an expiry by the database's clock. Each store renews the leases it owns in one statement
 * every third of the lease's duration, so a lease outlives its owner by at most one duration: a process killed
 * (`kill -9`, a machine lost) leaves nothing held for long, and a connection that breaks holds nothing at all, since
 * every statement goes through the client's pool.
 *
 * A session stored queued by a store that holds what it accepts (`holdAccepted`) is leased to that store until a run
 * takes it: a live process's queue is its own, and a dead one's is taken over once the lease lapses (`unheld`).
 * A checkpoint is fenced: a run that lost its lease (an outage longer than the lease, during which another process
 * took the session over) cannot write over the new holder's work.
 */
import * as Errors from "@deep-research/core/Errors"
import * as SqlClient from "@effect/sql/SqlClient"
import type * as Statement from "@effect/sql/Statement"
import type { SqlError } from "@effect/sql/SqlError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as ParseResult from "effect/ParseResult"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { randomUUID } from "node:crypto"
import * as os from "node:os"
import { nowMillis, orDie, patiently, wallClock, type Writer } from "./sqlDatabase.js"

/** How long a lease lasts unless renewed: how long a killed process's sessions stay held. */
export const defaultDuration = Duration.seconds(15)

/** The leases of one store. */
export interface Leases {
  /** This store's name in the leases it owns. */
  readonly owner: string
  /** Holds the session for the life of the scope; `SessionBusy` while a live lease of another run holds it. */
  readonly lock: (sessionId: string) => Effect.Effect<void, Errors.SessionBusy, Scope.Scope>
  /** Inside a checkpoint's transaction: a queued session is leased to this store, unless something holds it. */
  readonly holdAccepted: (sessionId: string) => Effect.Effect<void, SqlError>
  /** Inside a checkpoint's transaction: fails when a run of this store held the session and lost its lease. */
  readonly fence: (sessionId: string) => Effect.Effect<void, SqlError | ParseResult.ParseError | LeaseLost>
  /** Sessions stored queued or running that nothing holds: a stopped process's, to be taken over. */
  readonly unheld: Effect.Effect<ReadonlyArray<{ readonly id: string; readonly status: string }>>
}

/** A run's lease was taken by another process while this one could not renew it. */
export class LeaseLost extends Schema.TaggedError<LeaseLost>()("LeaseLost", { sessionId: Schema.String }) {
  override get message(): string {
    return (
      `this process lost its hold on session ${this.sessionId} (it could not renew it in time, and another ` +
      "process has taken the session over): its run stops here"
    )
  }
}

const LeaseRow = Schema.Struct({ token: Schema.String, holder: Schema.String })
const UnheldRow = Schema.Struct({ id: Schema.String, status: Schema.String })

/** What the leases of a store share. */
interface Holder {
  readonly sql: SqlClient.SqlClient
  readonly now: Statement.Fragment
  readonly millis: number
  readonly owner: string
  readonly holder: string
  readonly writes: Writer
  /** The runs of this store holding a session now, by session: their tokens. */
  readonly held: Map<string, string>
  /** Sessions whose lease a run of this store lost. */
  readonly lost: Set<string>
}

const holderOf = (h: Holder, sessionId: string) =>
  h.sql`SELECT token, holder FROM deep_research_leases WHERE session_id = ${sessionId}`.pipe(
    Effect.flatMap(Schema.decodeUnknown(Schema.Array(LeaseRow))),
    patiently
  )

const acquire = (h: Holder, sessionId: string, token: string) =>
  Effect.gen(function* () {
    // Two runs of one store never share a session; the database decides between stores and processes.
    if (h.held.has(sessionId)) {
      return yield* new Errors.SessionBusy({ sessionId, holder: `another run of ${h.holder}` })
    }
    h.held.set(sessionId, token)
    const rows = yield* h.sql
      .withTransaction(
        Effect.zipRight(
          h.sql`INSERT INTO deep_research_leases (session_id, owner, token, holder, expires_at)
            VALUES (${sessionId}, ${h.owner}, ${token}, ${h.holder}, ${h.now} + ${h.millis})
            ON CONFLICT (session_id) DO UPDATE SET owner = excluded.owner, token = excluded.token,
              holder = excluded.holder, expires_at = excluded.expires_at
            WHERE deep_research_leases.expires_at < ${h.now} OR deep_research_leases.owner = ${h.owner}`,
          holderOf(h, sessionId)
        )
      )
      .pipe(patiently, h.writes, orDie(`cannot lock session ${sessionId}`))
    const row = rows[0]
    if (row?.token === token) {
      h.lost.delete(sessionId)
      return
    }
    h.held.delete(sessionId)
    return yield* new Errors.SessionBusy({ sessionId, holder: row?.holder ?? "another run" })
  })

const release = (h: Holder, sessionId: string, token: string) =>
  Effect.suspend(() => {
    if (h.held.get(sessionId) === token) h.held.delete(sessionId)
    return h.sql`DELETE FROM deep_research_leases WHERE session_id = ${sessionId} AND token = ${token}`.pipe(
      patiently,
      h.writes,
      Effect.catchAllCause((cause) =>
        Effect.logWarning(`SqlSessionStore: could not release session ${sessionId}; its lease lapses`, cause)
      )
    )
  })

const fence = (h: Holder, sessionId: string) =>
  Effect.gen(function* () {
    const token = h.held.get(sessionId)
    if (token === undefined) return
    const rows = yield* holderOf(h, sessionId)
    if (h.lost.has(sessionId) || rows[0]?.token !== token) {
      h.lost.add(sessionId)
      return yield* new LeaseLost({ sessionId })
    }
  })

const unheld = (h: Holder) =>
  h.sql`SELECT s.id AS id, s.status AS status FROM deep_research_sessions s
    LEFT JOIN deep_research_leases l ON l.session_id = s.id
    WHERE s.status IN ('queued', 'running') AND (l.session_id IS NULL OR l.expires_at < ${h.now})
    ORDER BY s.created_at, s.id`.pipe(
    Effect.flatMap(Schema.decodeUnknown(Schema.Array(UnheldRow))),
    patiently,
    orDie("cannot read which sessions nothing holds")
  )

/**
 * Renews every lease of the store a third of the way through its duration (so that one missed renewal, a slow
 * statement, loses nothing), for the life of the scope; a database that cannot be reached is said once, and tried on.
 */
const renewing = (h: Holder) => {
  const renew = h.writes(
    patiently(h.sql`UPDATE deep_research_leases SET expires_at = ${h.now} + ${h.millis} WHERE owner = ${h.owner}`)
  )
  let failing = false
  return renew.pipe(
    Effect.tap(() => Effect.sync(() => (failing = false))),
    Effect.catchAll((error) =>
      failing
        ? Effect.void
        : Effect.zipRight(
            Effect.sync(() => (failing = true)),
            Effect.logWarning(`SqlSessionStore: cannot renew this process's leases (${error.message}); retrying`)
          )
    ),
    Effect.repeat(Schedule.spaced(Duration.millis(Math.max(50, Math.floor(h.millis / 3))))),
    Effect.withClock(wallClock),
    Effect.interruptible,
    Effect.forkScoped
  )
}

/** The leases of a store over the client in context, renewed for the life of the scope. */
export const make = (options: {
  readonly duration?: Duration.DurationInput | undefined
  readonly holdAccepted?: boolean | undefined
  readonly writes: Writer
}): Effect.Effect<Leases, never, SqlClient.SqlClient | Scope.Scope> =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const h: Holder = {
      sql,
      now: nowMillis(sql),
      millis: Duration.toMillis(Duration.decode(options.duration ?? defaultDuration)),
      owner: `${os.hostname()}/${process.pid}/${randomUUID()}`,
      holder: `pid ${process.pid} on host ${os.hostname()}`,
      writes: options.writes,
      held: new Map(),
      lost: new Set()
    }
    yield* renewing(h)
    const holdAccepted = (sessionId: string) =>
      options.holdAccepted !== true
        ? Effect.void
        : Effect.asVoid(h.sql`INSERT INTO deep_research_leases (session_id, owner, token, holder, expires_at)
            VALUES (${sessionId}, ${h.owner}, ${`accepted/${randomUUID()}`}, ${h.holder}, ${h.now} + ${h.millis})
            ON CONFLICT (session_id) DO UPDATE SET owner = excluded.owner, token = excluded.token,
              holder = excluded.holder, expires_at = excluded.expires_at
            WHERE deep_research_leases.expires_at < ${h.now}`)
    return {
      owner: h.owner,
      lock: (sessionId) =>
        Effect.suspend(() => {
          const token = randomUUID()
          return Effect.acquireRelease(acquire(h, sessionId, token), () => release(h, sessionId, token))
        }),
      holdAccepted,
      fence: (sessionId) => fence(h, sessionId),
      unheld: unheld(h)
    }
  })
