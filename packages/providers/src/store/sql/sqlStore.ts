/**
 * The session store's operations (`SqlSessionStore` is its public face): small functions over one `Store` record (the
 * client, the leases, the scrubber, and the revision of each session as this store last wrote or read it), the same
 * for SQLite and PostgreSQL except where a column's type differs (`jsonb` against text), through `sql.onDialectOrElse`.
 * Every statement waits out a passing failure (`patiently`: a busy SQLite file, a PostgreSQL restart); a failure that
 * lasts is a defect naming what could not be done.
 */
import { Errors, ResearchEvents, Session, SessionStore } from "@deep-research/core"
import type * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { Scrubbed } from "../secretScrubber.js"
import { decodeStored } from "../sessionMigrations.js"
import { nowMillis, orDie, patiently, type Writer } from "./sqlDatabase.js"
import type { Leases } from "./sqlLeases.js"
import * as SqlLibrary from "./sqlLibrary.js"

/** What a store holds between calls. */
export interface Store {
  readonly sql: SqlClient.SqlClient
  readonly leases: Leases
  readonly scrubbed: Scrubbed
  /** The store's writes, one at a time on SQLite. */
  readonly writes: Writer
  /**
   * The revision of each session as this store last wrote or read it: a row changed by anything else is read and
   * checked before it is replaced.
   */
  readonly known: Map<string, number>
  /** The sources of each session indexed in the library (`sqlLibrary.ts`). */
  readonly indexed: Map<string, ReadonlySet<string>>
}

/** An integer column: PostgreSQL's driver gives a `bigint` as text. */
const Integer = Schema.Union(Schema.Number, Schema.NumberFromString)
const RevisionRow = Schema.Struct({ revision: Integer })
const DataRow = Schema.Struct({ data: Schema.String, revision: Integer })
const TextRow = Schema.Struct({ content: Schema.String })
const PresentRow = Schema.Struct({ present: Integer })
const ListedRow = Schema.Struct({
  id: Schema.String,
  summary: Schema.NullOr(Schema.String),
  data: Schema.NullOr(Schema.String),
  live: Integer
})
const decodeSummary = Schema.decodeUnknown(Schema.parseJson(Session.SessionSummary))
const encodeSummary = Schema.encodeSync(Schema.parseJson(Session.SessionSummary))

const rowsOf =
  <A, I>(schema: Schema.Schema<A, I>) =>
  <E, R>(effect: Effect.Effect<ReadonlyArray<unknown>, E, R>) =>
    Effect.flatMap(effect, (rows) => Schema.decodeUnknown(Schema.Array(schema))(rows))

/** A JSON column's value as text, in either dialect. */
const dataText = (sql: SqlClient.SqlClient) =>
  sql.onDialectOrElse({ pg: () => sql.literal("data::text"), orElse: () => sql.literal("data") })

/** A text parameter for a JSON column. */
const jsonValue = (sql: SqlClient.SqlClient, text: string) =>
  sql.onDialectOrElse({ pg: () => sql`${text}::jsonb`, orElse: () => sql`${text}` })

const corrupt = (id: string, reason: string) =>
  new Errors.SessionCorrupt({ sessionId: id, path: `deep_research_sessions/${id}`, reason })

export const decodeRow = (id: string, text: string) =>
  Effect.gen(function* () {
    const data = yield* Effect.try({ try: (): unknown => JSON.parse(text), catch: () => corrupt(id, "not JSON") })
    const session = yield* Effect.mapError(decodeStored(data), (error) => corrupt(id, error.reason))
    if (session.id !== id) return yield* corrupt(id, `the row holds session ${session.id}`)
    return session
  })

const present = (store: Store, id: string) =>
  store.sql`SELECT CASE WHEN EXISTS (SELECT 1 FROM deep_research_sessions WHERE id = ${id})
      OR EXISTS (SELECT 1 FROM deep_research_events WHERE session_id = ${id})
      OR EXISTS (SELECT 1 FROM deep_research_reports WHERE session_id = ${id})
      OR EXISTS (SELECT 1 FROM deep_research_artefacts WHERE session_id = ${id}) THEN 1 ELSE 0 END AS present`.pipe(
    rowsOf(PresentRow),
    patiently,
    Effect.map((rows) => rows[0]?.present === 1),
    orDie(`cannot look for session ${id}`)
  )

/** Inside a checkpoint's transaction: a row this store did not write or read last is checked, and kept aside if unreadable. */
const protectExisting = (store: Store, id: string) =>
  Effect.gen(function* () {
    const rows = yield* rowsOf(DataRow)(
      store.sql`SELECT ${dataText(store.sql)} AS data, revision FROM deep_research_sessions WHERE id = ${id}`
    )
    const row = rows[0]
    if (row === undefined || store.known.get(id) === row.revision) return
    const read = yield* Effect.either(decodeRow(id, row.data))
    if (Either.isRight(read)) return
    yield* store.sql`INSERT INTO deep_research_corrupt_sessions (session_id, reason, data)
      SELECT id, ${read.left.reason}, data FROM deep_research_sessions WHERE id = ${id}`
    yield* Effect.logWarning(
      `SqlSessionStore: session ${id} was corrupt (${read.left.reason}); its row was kept in ` +
        "deep_research_corrupt_sessions and not overwritten"
    )
  })

export const save = (store: Store) =>
  Effect.fn("SqlSessionStore.save")(function* (session: Session.Session) {
    const id = yield* Session.validateId(session.id)
    const encoded = yield* Session.encode(session).pipe(
      Effect.mapError(
        (error) => new Errors.InvalidInput({ reason: `session ${id} cannot be stored: ${error.message}` })
      )
    )
    const text = yield* store.scrubbed(`session ${id}`, JSON.stringify(encoded))
    const summary = yield* store.scrubbed(`session ${id}`, encodeSummary(Session.summarize(session)))
    const { sql } = store
    const done = yield* sql
      .withTransaction(
        Effect.gen(function* () {
          yield* store.leases.fence(id)
          yield* protectExisting(store, id)
          const saved = yield* rowsOf(RevisionRow)(
            sql`INSERT INTO deep_research_sessions (id, version, data, status, summary, revision, updated_at)
              VALUES (${id}, ${Session.currentVersion}, ${jsonValue(sql, text)}, ${session.status}, ${summary}, 1,
                CURRENT_TIMESTAMP)
              ON CONFLICT (id) DO UPDATE SET version = excluded.version, data = excluded.data,
                status = excluded.status, summary = excluded.summary,
                revision = deep_research_sessions.revision + 1, updated_at = CURRENT_TIMESTAMP
              RETURNING revision`
          )
          if (session.status === "queued") yield* store.leases.holdAccepted(id)
          // The session's sources enter the library with the checkpoint that stores them.
          const indexed = yield* SqlLibrary.index(store, session)
          return { saved, indexed }
        })
      )
      .pipe(
        // Each attempt commits whole or not at all; the waits between attempts may be interrupted.
        Effect.uninterruptible,
        patiently,
        store.writes,
        Effect.catchTag("LeaseLost", (error) => Effect.die(new Error(`SqlSessionStore: ${error.message}`))),
        orDie(`cannot save session ${id}`)
      )
    if (done.indexed !== undefined) store.indexed.set(id, done.indexed)
    const revision = done.saved[0]?.revision
    if (revision !== undefined) store.known.set(id, revision)
  })

export const load = (store: Store) =>
  Effect.fn("SqlSessionStore.load")(function* (id: string) {
    const valid = yield* Session.validateId(id)
    const rows = yield* rowsOf(DataRow)(
      store.sql`SELECT ${dataText(store.sql)} AS data, revision FROM deep_research_sessions WHERE id = ${valid}`
    ).pipe(patiently, orDie(`cannot load session ${valid}`))
    const row = rows[0]
    if (row === undefined) return yield* new Errors.SessionNotFound({ sessionId: valid })
    // A row that cannot be read is checked again before a checkpoint replaces it (and kept aside then).
    const session = yield* Effect.tapError(decodeRow(valid, row.data), () =>
      Effect.sync(() => store.known.delete(valid))
    )
    store.known.set(valid, row.revision)
    return session
  })

export const appendEvents = (store: Store) =>
  Effect.fn("SqlSessionStore.appendEvents")(function* (
    id: string,
    events: ReadonlyArray<ResearchEvents.ResearchEvent>
  ) {
    const valid = yield* Session.validateId(id)
    if (events.length === 0) return
    const lines = yield* Effect.try({
      try: () => events.map((event) => ResearchEvents.encodeJson(event)),
      catch: (error) =>
        new Errors.InvalidInput({
          reason: `an event of session ${valid} cannot be stored: ${error instanceof Error ? error.message : String(error)}`
        })
    })
    const texts = yield* Effect.forEach(lines, (line) => store.scrubbed(`an event of session ${valid}`, line))
    const { sql } = store
    const insert = sql.onDialectOrElse({
      // Appends to one log are serialised by a transaction-scoped advisory lock, so that the events of one call are
      // numbered together, in their order, and a log is numbered in the order its appends commit.
      pg: () =>
        sql.withTransaction(
          Effect.zipRight(
            sql`SELECT pg_advisory_xact_lock(hashtextextended(${`deep-research/events/${valid}`}, 0))`,
            sql`INSERT INTO deep_research_events (session_id, data)
              SELECT ${valid}, value FROM jsonb_array_elements(${`[${texts.join(",")}]`}::jsonb)
              WITH ORDINALITY AS t(value, n) ORDER BY n`
          )
        ),
      // SQLite has one writer at a time: a statement's rows are numbered in their order.
      orElse: () =>
        sql`INSERT INTO deep_research_events ${sql.insert(texts.map((data) => ({ session_id: valid, data })))}`
    })
    yield* insert.pipe(
      Effect.uninterruptible,
      patiently,
      store.writes,
      orDie(`cannot append events of session ${valid}`)
    )
  })

export const readEvents = (store: Store) =>
  Effect.fn("SqlSessionStore.events")(function* (id: string) {
    const valid = yield* Session.validateId(id)
    const rows = yield* rowsOf(Schema.Struct({ data: Schema.String }))(
      store.sql`SELECT ${dataText(store.sql)} AS data FROM deep_research_events WHERE session_id = ${valid} ORDER BY seq`
    ).pipe(patiently, orDie(`cannot read the events of session ${valid}`))
    if (rows.length === 0 && !(yield* present(store, valid))) {
      return yield* new Errors.SessionNotFound({ sessionId: valid })
    }
    const events: Array<ResearchEvents.ResearchEvent> = []
    for (const [index, row] of rows.entries()) {
      const decoded = yield* Effect.either(ResearchEvents.decodeJson(row.data))
      if (Either.isRight(decoded)) events.push(decoded.right)
      else yield* Effect.logWarning(`SqlSessionStore: skipped event ${index + 1} of session ${valid}: unreadable`)
    }
    return events
  })

export const saveReport = (store: Store) =>
  Effect.fn("SqlSessionStore.saveReport")(function* (id: string, markdown: string) {
    const valid = yield* Session.validateId(id)
    const text = yield* store.scrubbed(`the report of session ${valid}`, markdown)
    yield* store.sql`INSERT INTO deep_research_reports (session_id, markdown, updated_at)
      VALUES (${valid}, ${text}, CURRENT_TIMESTAMP)
      ON CONFLICT (session_id) DO UPDATE SET markdown = excluded.markdown, updated_at = CURRENT_TIMESTAMP`.pipe(
      patiently,
      store.writes,
      orDie(`cannot save the report of session ${valid}`)
    )
  })

/** The report the store keeps of a session, if any. */
export const report = (store: Store, id: string) =>
  rowsOf(Schema.Struct({ markdown: Schema.String }))(
    store.sql`SELECT markdown FROM deep_research_reports WHERE session_id = ${id}`
  ).pipe(
    patiently,
    Effect.map((rows) => Option.fromNullable(rows[0]?.markdown)),
    orDie(`cannot read the report of session ${id}`)
  )

export const saveArtefact = (store: Store) =>
  Effect.fn("SqlSessionStore.saveArtefact")(function* (id: string, name: string, content: string) {
    const valid = yield* Session.validateId(id)
    const artefactName = yield* SessionStore.validateArtefactName(name)
    const text = yield* store.scrubbed(`${artefactName} of session ${valid}`, content)
    yield* store.sql`INSERT INTO deep_research_artefacts (session_id, name, content, updated_at)
      VALUES (${valid}, ${artefactName}, ${text}, CURRENT_TIMESTAMP)
      ON CONFLICT (session_id, name) DO UPDATE SET content = excluded.content, updated_at = CURRENT_TIMESTAMP`.pipe(
      patiently,
      store.writes,
      orDie(`cannot save ${artefactName} of session ${valid}`)
    )
  })

export const artefact = (store: Store) =>
  Effect.fn("SqlSessionStore.artefact")(function* (id: string, name: string) {
    const valid = yield* Session.validateId(id)
    const artefactName = yield* SessionStore.validateArtefactName(name)
    const rows = yield* rowsOf(TextRow)(
      store.sql`SELECT content FROM deep_research_artefacts WHERE session_id = ${valid} AND name = ${artefactName}`
    ).pipe(patiently, orDie(`cannot read ${artefactName} of session ${valid}`))
    const row = rows[0]
    if (row !== undefined) return Option.some(row.content)
    if (!(yield* present(store, valid))) return yield* new Errors.SessionNotFound({ sessionId: valid })
    return Option.none<string>()
  })

export const deleteArtefact = (store: Store) =>
  Effect.fn("SqlSessionStore.deleteArtefact")(function* (id: string, name: string) {
    const valid = yield* Session.validateId(id)
    const artefactName = yield* SessionStore.validateArtefactName(name)
    yield* store.sql`DELETE FROM deep_research_artefacts WHERE session_id = ${valid} AND name = ${artefactName}`.pipe(
      patiently,
      store.writes,
      orDie(`cannot delete ${artefactName} of session ${valid}`)
    )
  })

const corruptSummary = (id: string, reason: string) =>
  new Session.SessionSummary({
    id,
    status: "corrupt",
    query: "",
    createdAt: 0,
    updatedAt: 0,
    costUsd: 0,
    error: reason
  })

/** A listed row: its stored summary, or one made from its data (a row stored before summaries were kept). */
const summaryOf = (row: typeof ListedRow.Type) =>
  Effect.gen(function* () {
    const summary =
      row.summary !== null
        ? yield* Effect.orElse(decodeSummary(row.summary), () => Effect.fail(corrupt(row.id, "unreadable summary")))
        : yield* Effect.map(decodeRow(row.id, row.data ?? ""), Session.summarize)
    // Saved as running with nothing holding it: its process stopped; `resume` (or a live server) continues it.
    return summary.status === "running" && row.live === 0
      ? new Session.SessionSummary({ ...summary, status: "interrupted" })
      : summary
  }).pipe(
    Effect.catchTag("SessionCorrupt", (error) =>
      Effect.as(Effect.logWarning(`SqlSessionStore: ${error.message}`), corruptSummary(row.id, error.reason))
    )
  )

export const list = (store: Store) =>
  Effect.gen(function* () {
    const { sql } = store
    const rows = yield* rowsOf(ListedRow)(
      sql`SELECT s.id AS id, s.summary AS summary,
          CASE WHEN s.summary IS NULL THEN ${sql.onDialectOrElse({ pg: () => sql.literal("s.data::text"), orElse: () => sql.literal("s.data") })} END AS data,
          CASE WHEN l.expires_at > ${nowMillis(sql)} THEN 1 ELSE 0 END AS live
        FROM deep_research_sessions s LEFT JOIN deep_research_leases l ON l.session_id = s.id`
    ).pipe(patiently, orDie("cannot list the sessions"))
    const summaries = yield* Effect.forEach(rows, summaryOf)
    return summaries.sort((a, b) => b.createdAt - a.createdAt)
  }).pipe(Effect.withSpan("SqlSessionStore.list"))

export const remove = (store: Store) =>
  Effect.fn("SqlSessionStore.delete")(function* (id: string) {
    const valid = yield* Session.validateId(id)
    if (!(yield* present(store, valid))) return yield* new Errors.SessionNotFound({ sessionId: valid })
    const { sql } = store
    // Held first, so that a live run's session does not vanish under it.
    yield* Effect.scoped(
      Effect.zipRight(
        store.leases.lock(valid),
        sql
          .withTransaction(
            Effect.all(
              [
                sql`DELETE FROM deep_research_events WHERE session_id = ${valid}`,
                sql`DELETE FROM deep_research_reports WHERE session_id = ${valid}`,
                sql`DELETE FROM deep_research_artefacts WHERE session_id = ${valid}`,
                SqlLibrary.remove(sql, valid),
                sql`DELETE FROM deep_research_sessions WHERE id = ${valid}`
              ],
              { discard: true }
            )
          )
          .pipe(patiently, store.writes, orDie(`cannot delete session ${valid}`))
      )
    )
    store.known.delete(valid)
    store.indexed.delete(valid)
  })

export const lock = (store: Store) =>
  Effect.fn("SqlSessionStore.lock")(function* (id: string) {
    const valid = yield* Session.validateId(id)
    yield* store.leases.lock(valid)
  })
