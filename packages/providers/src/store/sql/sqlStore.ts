/**
 * The session store's operations (`SqlSessionStore` is its public face), the same for SQLite and PostgreSQL except
 * where a column's type differs (`jsonb` against text). Reads wait out a busy file (`patiently`), writes go through
 * the writer (committed before they return); a failure that lasts is a defect naming what could not be done.
 */
import * as Errors from "@deep-research/core/Errors"
import * as ResearchEvents from "@deep-research/core/ResearchEvents"
import * as Session from "@deep-research/core/Session"
import * as SessionStore from "@deep-research/core/SessionStore"
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type * as Statement from "@effect/sql/Statement"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import type { Scrubbed } from "../secretScrubber.js"
import { decodeStored } from "../sessionMigrations.js"
import { decodeRows, Integer, nowMillis, orDie, patiently, throughOutage, type Writer } from "./sqlDatabase.js"
import type { Leases } from "./sqlLeases.js"
import * as SqlLibrary from "./sqlLibrary.js"

/** What a store holds between calls. */
export interface Store {
  readonly sql: SqlClient.SqlClient
  readonly leases: Leases
  readonly scrubbed: Scrubbed
  readonly write: Writer
  /** The revision of each session as this store last wrote or read it: a row changed by another is checked first. */
  readonly known: Map<string, number>
  /** The sources of each session indexed in the library (`sqlLibrary.ts`). */
  readonly indexed: Map<string, ReadonlySet<string>>
}

const DataRow = Schema.Struct({ data: Schema.String, revision: Integer })
const ListedRow = Schema.Struct({
  id: Schema.String,
  summary: Schema.NullOr(Schema.String),
  live: Schema.Number,
  simulated: Schema.Number
})
const decodeSummary = Schema.decodeUnknownEither(Schema.parseJson(Session.SessionSummary))
const encodeSummary = Schema.encodeSync(Schema.parseJson(Session.SessionSummary))

/** A statement or transaction of the store, failing as the database or a row's decoding may. */
type Query<A> = Effect.Effect<A, SqlError | ParseResult.ParseError>

/** A read, waiting out a busy file; a lasting failure is a defect saying what could not be read. */
const read = <A>(what: string, query: Query<A>) => orDie(what)(patiently(query))

/**
 * A read of session `id`, which waits through an outage, as a run's writes do, when the run holding the session reads
 * it (its checkpoint, its request journal): the run waits for the database rather than stopping. Anyone else's read (a
 * server's answer about the session) is told at once.
 */
const readOf = <A>(store: Store, id: string, what: string, query: Query<A>) =>
  Effect.flatMap(store.leases.inRun(id), (inRun) =>
    inRun
      ? orDie(`cannot ${what}`)(throughOutage(what, () => store.leases.lapsing(id))(patiently(query)))
      : read(`cannot ${what}`, query)
  )

/** A JSON column's value as text, in either dialect. */
const dataText = (sql: SqlClient.SqlClient) =>
  sql.onDialectOrElse({ pg: () => sql.literal("data::text"), orElse: () => sql.literal("data") })

const corrupt = (id: string, reason: string) =>
  new Errors.ResearchSessionCorrupt({ sessionId: id, path: `deep_research_sessions/${id}`, reason })

const decodeRow = (id: string, text: string) =>
  Effect.gen(function* () {
    const data = yield* Effect.try({ try: (): unknown => JSON.parse(text), catch: () => corrupt(id, "not JSON") })
    const session = yield* Effect.mapError(decodeStored(data), (error) => corrupt(id, error.reason))
    if (session.id !== id) return yield* corrupt(id, `the row holds session ${session.id}`)
    return session
  })

const selectRow = (store: Store, id: string) =>
  decodeRows(DataRow)(
    store.sql`SELECT ${dataText(store.sql)} AS data, revision FROM deep_research_sessions WHERE id = ${id}`
  )

/** `ResearchSessionNotFound` unless the store holds the session: its row, or anything kept before its checkpoint. */
const mustExist = (store: Store, id: string) =>
  Effect.gen(function* () {
    const found = yield* read(
      `cannot look for session ${id}`,
      store.sql`SELECT id FROM deep_research_sessions WHERE id = ${id}
        UNION ALL SELECT session_id FROM deep_research_artefacts WHERE session_id = ${id}
        UNION ALL SELECT session_id FROM deep_research_events WHERE session_id = ${id} LIMIT 1`
    )
    if (found.length === 0) return yield* new Errors.ResearchSessionNotFound({ sessionId: id })
  })

/** Inside a checkpoint's transaction: a row this store did not write or read last is checked, and kept aside if unreadable. */
const protectExisting = (store: Store, id: string) =>
  Effect.gen(function* () {
    const row = (yield* selectRow(store, id))[0]
    if (row === undefined) return
    const decoded = yield* Effect.either(decodeRow(id, row.data))
    if (Either.isRight(decoded)) return
    yield* store.sql`INSERT INTO deep_research_corrupt_sessions (session_id, reason, data)
      SELECT id, ${decoded.left.reason}, data FROM deep_research_sessions WHERE id = ${id}`
    yield* Effect.logWarning(
      `SqlSessionStore: session ${id} was corrupt (${decoded.left.reason}); its row was kept in ` +
        "deep_research_corrupt_sessions and not overwritten"
    )
  })

/**
 * A checkpoint's transaction. The row is replaced in one statement when it is as this store last left it and the run
 * saving it still holds its lease; otherwise the lease is checked (a run that lost it stops: another process has taken
 * the session over) and a row another wrote is checked before it is replaced.
 */
const checkpoint = (store: Store, session: Session.Session, text: string, summary: string) =>
  Effect.gen(function* () {
    const { sql } = store
    const id = session.id
    const token = store.leases.token(id)
    const fence =
      token === undefined
        ? sql.literal("1 = 1")
        : sql`EXISTS (SELECT 1 FROM deep_research_leases WHERE session_id = ${id} AND token = ${token})`
    const data = sql.onDialectOrElse({ pg: () => sql`${text}::jsonb`, orElse: () => sql`${text}` })
    const upsert = (condition: Statement.Fragment) =>
      decodeRows(Schema.Struct({ revision: Integer }))(
        sql`INSERT INTO deep_research_sessions (id, version, data, status, summary, revision, updated_at)
          VALUES (${id}, ${Session.currentVersion}, ${data}, ${session.status}, ${summary}, 1, CURRENT_TIMESTAMP)
          ON CONFLICT (id) DO UPDATE SET version = excluded.version, data = excluded.data, status = excluded.status,
            summary = excluded.summary, revision = deep_research_sessions.revision + 1, updated_at = CURRENT_TIMESTAMP
          WHERE ${condition} RETURNING revision`
      )
    let saved = yield* upsert(sql`deep_research_sessions.revision = ${store.known.get(id) ?? -1} AND ${fence}`)
    if (saved.length === 0) {
      if (token !== undefined) {
        const held = yield* sql`SELECT 1 FROM deep_research_leases WHERE session_id = ${id} AND token = ${token}`
        if (held.length === 0)
          return yield* Effect.dieMessage(
            `this process lost its hold on session ${id} (it could not renew it in time, and another process has ` +
              "taken the session over): its run stops here"
          )
      }
      yield* protectExisting(store, id)
      saved = yield* upsert(sql.literal("1 = 1"))
    }
    if (session.status === "queued") yield* store.leases.holdAccepted(id)
    // The session's sources enter the library with the checkpoint that stores them.
    const indexed = yield* SqlLibrary.index(store, session)
    return { revision: saved[0]?.revision, indexed }
  })

/** A write, committed before it returns; a failure that lasts is a defect saying what could not be done. */
const write = <A>(store: Store, what: string, transaction: Query<A>) =>
  orDie(`cannot ${what}`)(store.write(transaction))

/** A run's write, which waits through an outage while the run's hold on session `id` lasts. */
const runWrite = <A>(store: Store, id: string, what: string, transaction: Query<A>) =>
  orDie(`cannot ${what}`)(throughOutage(what, () => store.leases.lapsing(id))(store.write(transaction)))

/** A named artefact's name, and the session's id, checked. */
const named = (id: string, name: string) =>
  Effect.all([Session.validateId(id), SessionStore.validateArtefactName(name)])

/** A listed row as its summary: `interrupted` for a run nothing holds, `corrupt` for a row that cannot be read. */
const summaryOf = (store: Store, row: typeof ListedRow.Type) =>
  Effect.match(
    row.summary === null
      ? // A row stored before summaries were kept.
        read(`cannot list session ${row.id}`, selectRow(store, row.id)).pipe(
          Effect.flatMap((found) => decodeRow(row.id, found[0]?.data ?? "")),
          Effect.map(Session.summarize)
        )
      : Either.mapLeft(decodeSummary(row.summary), () => corrupt(row.id, "unreadable summary")),
    {
      onFailure: (error) =>
        new Session.SessionSummary({
          ...{ id: row.id, status: "corrupt", query: "", createdAt: 0, updatedAt: 0, costUsd: 0 },
          error: error.reason
        }),
      onSuccess: (summary) => {
        const interrupted = row.live === 0 && summary.status === "running"
        return interrupted || row.simulated === 1
          ? new Session.SessionSummary({
              ...summary,
              ...(interrupted ? { status: "interrupted" as const } : {}),
              ...(row.simulated === 1 ? { simulated: true } : {})
            })
          : summary
      }
    }
  )

/** What the store keeps beside a session: its event log, its report and its named artefacts. */
const keptBeside = (
  store: Store
): Pick<
  SessionStore.Service,
  "appendEvents" | "events" | "saveReport" | "saveArtefact" | "artefact" | "artefactOfEach" | "deleteArtefact"
> => {
  const { sql } = store
  return {
    appendEvents: Effect.fn("SqlSessionStore.appendEvents")(function* (id, events) {
      const valid = yield* Session.validateId(id)
      if (events.length === 0) return
      const lines = yield* Effect.try({
        try: () => events.map((event) => ResearchEvents.encodeJson(event)),
        catch: (error) =>
          new Errors.ResearchInvalidInput({ reason: `an event of session ${valid} cannot be stored: ${String(error)}` })
      })
      const texts = yield* Effect.forEach(lines, (line) => store.scrubbed(`an event of session ${valid}`, line))
      const insert = sql.onDialectOrElse({
        // A transaction-scoped advisory lock numbers a log in the order its appends commit, each call's together.
        pg: () =>
          Effect.zipRight(
            sql`SELECT pg_advisory_xact_lock(hashtextextended(${`deep-research/events/${valid}`}, 0))`,
            sql`INSERT INTO deep_research_events (session_id, data)
              SELECT ${valid}, value FROM jsonb_array_elements(${`[${texts.join(",")}]`}::jsonb)
              WITH ORDINALITY AS t(value, n) ORDER BY n`
          ),
        // SQLite has one writer at a time: a statement's rows are numbered in their order.
        orElse: () =>
          sql`INSERT INTO deep_research_events ${sql.insert(texts.map((data) => ({ session_id: valid, data })))}`
      })
      yield* runWrite(store, valid, `append events of session ${valid}`, insert)
    }),
    events: Effect.fn("SqlSessionStore.events")(function* (id) {
      const valid = yield* Session.validateId(id)
      const found = yield* readOf(
        store,
        valid,
        `read the events of session ${valid}`,
        decodeRows(Schema.Struct({ data: Schema.String }))(
          sql`SELECT ${dataText(sql)} AS data FROM deep_research_events WHERE session_id = ${valid} ORDER BY seq`
        )
      )
      if (found.length === 0) yield* mustExist(store, valid)
      const events: Array<ResearchEvents.ResearchEvent> = []
      for (const [index, row] of found.entries()) {
        const decoded = yield* Effect.either(ResearchEvents.decodeJson(row.data))
        if (Either.isRight(decoded)) events.push(decoded.right)
        else yield* Effect.logWarning(`SqlSessionStore: skipped event ${index + 1} of session ${valid}: unreadable`)
      }
      return events
    }),
    saveReport: Effect.fn("SqlSessionStore.saveReport")(function* (id, markdown) {
      const valid = yield* Session.validateId(id)
      const text = yield* store.scrubbed(`the report of session ${valid}`, markdown)
      const upsert = sql`INSERT INTO deep_research_reports (session_id, markdown, updated_at)
        VALUES (${valid}, ${text}, CURRENT_TIMESTAMP)
        ON CONFLICT (session_id) DO UPDATE SET markdown = excluded.markdown, updated_at = CURRENT_TIMESTAMP`
      yield* runWrite(store, valid, `save the report of session ${valid}`, upsert)
    }),
    saveArtefact: Effect.fn("SqlSessionStore.saveArtefact")(function* (id, name, content) {
      const [valid, artefact] = yield* named(id, name)
      const text = yield* store.scrubbed(`${artefact} of session ${valid}`, content)
      const upsert = sql`INSERT INTO deep_research_artefacts (session_id, name, content, updated_at)
        VALUES (${valid}, ${artefact}, ${text}, CURRENT_TIMESTAMP)
        ON CONFLICT (session_id, name) DO UPDATE SET content = excluded.content, updated_at = CURRENT_TIMESTAMP`
      // A run's artefact (its request journal) waits through an outage as its checkpoints do; an acceptance's does not.
      yield* store.leases.token(valid) === undefined
        ? write(store, `save ${artefact} of session ${valid}`, upsert)
        : runWrite(store, valid, `save ${artefact} of session ${valid}`, upsert)
    }),
    artefact: Effect.fn("SqlSessionStore.artefact")(function* (id, name) {
      const [valid, artefact] = yield* named(id, name)
      const found = yield* readOf(
        store,
        valid,
        `read ${artefact} of session ${valid}`,
        decodeRows(Schema.Struct({ content: Schema.String }))(
          sql`SELECT content FROM deep_research_artefacts WHERE session_id = ${valid} AND name = ${artefact}`
        )
      )
      if (found.length === 0) yield* mustExist(store, valid)
      return Option.fromNullable(found[0]?.content)
    }),
    artefactOfEach: Effect.fn("SqlSessionStore.artefactOfEach")(function* (name) {
      const artefact = yield* SessionStore.validateArtefactName(name)
      const found = yield* read(
        `cannot read the sessions' ${artefact}`,
        decodeRows(Schema.Struct({ session_id: Schema.String, content: Schema.String }))(
          sql`SELECT session_id, content FROM deep_research_artefacts WHERE name = ${artefact}`
        )
      )
      return new Map(found.map((row) => [row.session_id, row.content]))
    }),
    deleteArtefact: Effect.fn("SqlSessionStore.deleteArtefact")(function* (id, name) {
      const [valid, artefact] = yield* named(id, name)
      const removal = sql`DELETE FROM deep_research_artefacts WHERE session_id = ${valid} AND name = ${artefact}`
      yield* write(store, `delete ${artefact} of session ${valid}`, removal)
    })
  }
}

/** The store's operations over a `Store`. */
export const service = (store: Store): SessionStore.Service => {
  const { sql } = store
  return {
    save: Effect.fn("SqlSessionStore.save")(function* (session) {
      const id = yield* Session.validateId(session.id)
      const encoded = yield* Effect.mapError(
        Session.encode(session),
        (error) => new Errors.ResearchInvalidInput({ reason: `session ${id} cannot be stored: ${error.message}` })
      )
      const text = yield* store.scrubbed(`session ${id}`, JSON.stringify(encoded))
      const summary = yield* store.scrubbed(`session ${id}`, encodeSummary(Session.summarize(session)))
      const transaction = checkpoint(store, session, text, summary)
      // An acceptance does not wait for a database out of reach: its client is told at once.
      const saved = yield* session.status === "queued"
        ? write(store, `save session ${id}`, transaction)
        : runWrite(store, id, `save session ${id}`, transaction)
      if (saved.revision !== undefined) store.known.set(id, saved.revision)
      if (saved.indexed !== undefined) store.indexed.set(id, saved.indexed)
    }),
    load: Effect.fn("SqlSessionStore.load")(function* (id) {
      const valid = yield* Session.validateId(id)
      const row = (yield* readOf(store, valid, `load session ${valid}`, selectRow(store, valid)))[0]
      if (row === undefined) return yield* new Errors.ResearchSessionNotFound({ sessionId: valid })
      // A row that cannot be read is checked again before a checkpoint replaces it (and kept aside then).
      const session = yield* Effect.tapError(decodeRow(valid, row.data), () =>
        Effect.sync(() => store.known.delete(valid))
      )
      store.known.set(valid, row.revision)
      return session
    }),
    ...keptBeside(store),
    list: Effect.gen(function* () {
      // One query, read from indexes: the summaries kept at each checkpoint, whether a live run holds each, and the
      // simulated mark.
      const listed = yield* read(
        "cannot list the sessions",
        decodeRows(ListedRow)(
          sql`SELECT s.id AS id, s.summary AS summary,
              CASE WHEN l.expires_at > ${nowMillis(sql)} THEN 1 ELSE 0 END AS live,
              CASE WHEN a.session_id IS NULL THEN 0 ELSE 1 END AS simulated
            FROM deep_research_sessions s LEFT JOIN deep_research_leases l ON l.session_id = s.id
            LEFT JOIN deep_research_artefacts a ON a.session_id = s.id AND a.name = ${SessionStore.simulatedMark}`
        )
      )
      const summaries = yield* Effect.forEach(listed, (row) => summaryOf(store, row))
      for (const summary of summaries) {
        if (summary.status === "corrupt")
          yield* Effect.logWarning(`SqlSessionStore: session ${summary.id}: ${summary.error}`)
      }
      return summaries.sort((a, b) => b.createdAt - a.createdAt)
    }).pipe(Effect.withSpan("SqlSessionStore.list")),
    delete: Effect.fn("SqlSessionStore.delete")(function* (id) {
      const valid = yield* Session.validateId(id)
      yield* mustExist(store, valid)
      const removal = Effect.gen(function* () {
        for (const table of ["deep_research_events", "deep_research_reports", "deep_research_artefacts"])
          yield* sql`DELETE FROM ${sql(table)} WHERE session_id = ${valid}`
        yield* SqlLibrary.remove(sql, valid)
        yield* sql`DELETE FROM deep_research_sessions WHERE id = ${valid}`
      })
      // Held first, so that a live run's session does not vanish under it.
      yield* Effect.scoped(Effect.zipRight(store.leases.lock(valid), write(store, `delete session ${valid}`, removal)))
      store.known.delete(valid)
      store.indexed.delete(valid)
    }),
    lock: Effect.fn("SqlSessionStore.lock")(function* (id) {
      yield* store.leases.lock(yield* Session.validateId(id))
    })
  }
}
