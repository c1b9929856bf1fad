/**
 * The PostgreSQL store's operations (`PgSessionStore` is its public face): small functions over one `Store` record
 * (the client, the session locks, the scrubber, and the hash of each session's data as this store last wrote or read
 * it), each named for what it does. `PgSessionStore.make` runs the migrations, builds the record and hands the
 * operations out as the `SessionStore`.
 */
import { Errors, ResearchEvents, Session, SessionStore } from "@deep-research/core"
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import type { makeScrubbed } from "../secretScrubber.js"
import { decodeStored } from "../sessionMigrations.js"
import * as PgLock from "./pgLock.js"

/** What a PostgreSQL store holds between calls. */
export interface Store {
  readonly sql: SqlClient.SqlClient
  readonly locks: Effect.Effect.Success<typeof PgLock.make>
  readonly scrubbed: ReturnType<typeof makeScrubbed>
  /**
   * The hash of each session's data as this store last wrote or read it: a row changed by anything else is read and
   * checked before it is replaced.
   */
  readonly known: Map<string, string>
}

const orDie =
  (what: string) =>
  <A, R>(effect: Effect.Effect<A, SqlError | ParseResult.ParseError, R>): Effect.Effect<A, never, R> =>
    Effect.orDieWith(effect, (error) => new Error(`PgSessionStore: ${what}: ${error.message}`, { cause: error }))

const SessionRow = Schema.Struct({ id: Schema.String, data: Schema.Unknown })
const HashRow = Schema.Struct({ hash: Schema.String })
const EventRow = Schema.Struct({ data: Schema.Unknown })
const TextRow = Schema.Struct({ content: Schema.String })
const PresentRow = Schema.Struct({ present: Schema.Boolean })

const rowsOf =
  <A, I>(schema: Schema.Schema<A, I>) =>
  <E, R>(effect: Effect.Effect<ReadonlyArray<unknown>, E, R>) =>
    Effect.flatMap(effect, (rows) => Schema.decodeUnknown(Schema.Array(schema))(rows))

const corrupt = (id: string, reason: string) =>
  new Errors.SessionCorrupt({ sessionId: id, path: `deep_research_sessions/${id}`, reason })

const decodeRow = (id: string, data: unknown) =>
  Effect.gen(function* () {
    const session = yield* Effect.mapError(decodeStored(data), (error) => corrupt(id, error.reason))
    if (session.id !== id) return yield* corrupt(id, `the row holds session ${session.id}`)
    return session
  })

const present = (store: Store, id: string) =>
  store.sql`SELECT EXISTS (SELECT 1 FROM deep_research_sessions WHERE id = ${id})
      OR EXISTS (SELECT 1 FROM deep_research_events WHERE session_id = ${id})
      OR EXISTS (SELECT 1 FROM deep_research_reports WHERE session_id = ${id})
      OR EXISTS (SELECT 1 FROM deep_research_artefacts WHERE session_id = ${id}) AS present`.pipe(
    rowsOf(PresentRow),
    Effect.map((rows) => rows[0]?.present === true),
    orDie(`cannot look for session ${id}`)
  )

/** Inside the checkpoint's transaction: a row this store did not write or read last is checked, and moved aside if it is unreadable. */
const protectExisting = (store: Store, id: string) =>
  Effect.gen(function* () {
    const rows = yield* rowsOf(HashRow)(
      store.sql`SELECT md5(data::text) AS hash FROM deep_research_sessions WHERE id = ${id} FOR UPDATE`
    )
    const row = rows[0]
    if (row === undefined || store.known.get(id) === row.hash) return
    const stored = yield* rowsOf(SessionRow)(store.sql`SELECT id, data FROM deep_research_sessions WHERE id = ${id}`)
    const read = yield* Effect.either(decodeRow(id, stored[0]?.data))
    if (Either.isRight(read)) return
    yield* store.sql`INSERT INTO deep_research_corrupt_sessions (session_id, reason, data)
      SELECT id, ${read.left.reason}, data FROM deep_research_sessions WHERE id = ${id}`
    yield* Effect.logWarning(
      `PgSessionStore: session ${id} was corrupt (${read.left.reason}); its row was kept in ` +
        "deep_research_corrupt_sessions and not overwritten"
    )
  })

export const save = (store: Store) =>
  Effect.fn("PgSessionStore.save")(function* (session: Session.Session) {
    const id = yield* Session.validateId(session.id)
    const encoded = yield* Session.encode(session).pipe(
      Effect.mapError(
        (error) =>
          new Errors.InvalidInput({
            reason: `session ${id} cannot be stored: ${error.message}`
          })
      )
    )
    const text = yield* store.scrubbed(`session ${id}`, JSON.stringify(encoded))
    const hash = yield* store.sql
      .withTransaction(
        Effect.gen(function* () {
          yield* protectExisting(store, id)
          const rows = yield* rowsOf(HashRow)(
            store.sql`INSERT INTO deep_research_sessions (id, version, data, updated_at)
          VALUES (${id}, ${Session.currentVersion}, ${text}::jsonb, now())
          ON CONFLICT (id) DO UPDATE SET version = excluded.version, data = excluded.data, updated_at = now()
          RETURNING md5(data::text) AS hash`
          )
          return rows[0]?.hash
        })
      )
      .pipe(Effect.uninterruptible, orDie(`cannot save session ${id}`))
    if (hash !== undefined) store.known.set(id, hash)
  })

export const load = (store: Store) =>
  Effect.fn("PgSessionStore.load")(function* (id: string) {
    const valid = yield* Session.validateId(id)
    const rows = yield* rowsOf(Schema.Struct({ data: Schema.Unknown, hash: Schema.String }))(
      store.sql`SELECT data, md5(data::text) AS hash FROM deep_research_sessions WHERE id = ${valid}`
    ).pipe(orDie(`cannot load session ${valid}`))
    const row = rows[0]
    if (row === undefined) return yield* new Errors.SessionNotFound({ sessionId: valid })
    const session = yield* decodeRow(valid, row.data)
    store.known.set(valid, row.hash)
    return session
  })

export const appendEvents = (store: Store) =>
  Effect.fn("PgSessionStore.appendEvents")(function* (id: string, events: ReadonlyArray<ResearchEvents.ResearchEvent>) {
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
    // Appends to one log are serialised by a transaction-scoped advisory lock, so that the events of one call
    // are numbered together, in their order, and a log is numbered in the order its appends commit.
    yield* store.sql
      .withTransaction(
        Effect.zipRight(
          store.sql`SELECT pg_advisory_xact_lock(${PgLock.keyOf(valid, "events")}::bigint)`,
          store.sql`INSERT INTO deep_research_events (session_id, data)
          SELECT ${valid}, value FROM jsonb_array_elements(${`[${texts.join(",")}]`}::jsonb)
          WITH ORDINALITY AS t(value, n) ORDER BY n`
        )
      )
      .pipe(Effect.uninterruptible, orDie(`cannot append events of session ${valid}`))
  })

export const readEvents = (store: Store) =>
  Effect.fn("PgSessionStore.events")(function* (id: string) {
    const valid = yield* Session.validateId(id)
    const rows = yield* rowsOf(EventRow)(
      store.sql`SELECT data FROM deep_research_events WHERE session_id = ${valid} ORDER BY seq`
    ).pipe(orDie(`cannot read the events of session ${valid}`))
    if (rows.length === 0 && !(yield* present(store, valid))) {
      return yield* new Errors.SessionNotFound({ sessionId: valid })
    }
    const events: Array<ResearchEvents.ResearchEvent> = []
    for (const [index, row] of rows.entries()) {
      const decoded = yield* Effect.either(ResearchEvents.decodeJson(JSON.stringify(row.data)))
      if (Either.isRight(decoded)) events.push(decoded.right)
      else yield* Effect.logWarning(`PgSessionStore: skipped event ${index + 1} of session ${valid}: unreadable`)
    }
    return events
  })

export const saveReport = (store: Store) =>
  Effect.fn("PgSessionStore.saveReport")(function* (id: string, markdown: string) {
    const valid = yield* Session.validateId(id)
    const text = yield* store.scrubbed(`the report of session ${valid}`, markdown)
    yield* store.sql`INSERT INTO deep_research_reports (session_id, markdown, updated_at) VALUES (${valid}, ${text}, now())
    ON CONFLICT (session_id) DO UPDATE SET markdown = excluded.markdown, updated_at = now()`.pipe(
      orDie(`cannot save the report of session ${valid}`)
    )
  })

export const saveArtefact = (store: Store) =>
  Effect.fn("PgSessionStore.saveArtefact")(function* (id: string, name: string, content: string) {
    const valid = yield* Session.validateId(id)
    const artefactName = yield* SessionStore.validateArtefactName(name)
    const text = yield* store.scrubbed(`${artefactName} of session ${valid}`, content)
    yield* store.sql`INSERT INTO deep_research_artefacts (session_id, name, content, updated_at)
    VALUES (${valid}, ${artefactName}, ${text}, now())
    ON CONFLICT (session_id, name) DO UPDATE SET content = excluded.content, updated_at = now()`.pipe(
      orDie(`cannot save ${artefactName} of session ${valid}`)
    )
  })

export const artefact = (store: Store) =>
  Effect.fn("PgSessionStore.artefact")(function* (id: string, name: string) {
    const valid = yield* Session.validateId(id)
    const artefactName = yield* SessionStore.validateArtefactName(name)
    const rows = yield* rowsOf(TextRow)(
      store.sql`SELECT content FROM deep_research_artefacts WHERE session_id = ${valid} AND name = ${artefactName}`
    ).pipe(orDie(`cannot read ${artefactName} of session ${valid}`))
    const row = rows[0]
    if (row !== undefined) return Option.some(row.content)
    if (!(yield* present(store, valid))) return yield* new Errors.SessionNotFound({ sessionId: valid })
    return Option.none<string>()
  })

export const deleteArtefact = (store: Store) =>
  Effect.fn("PgSessionStore.deleteArtefact")(function* (id: string, name: string) {
    const valid = yield* Session.validateId(id)
    const artefactName = yield* SessionStore.validateArtefactName(name)
    yield* store.sql`DELETE FROM deep_research_artefacts WHERE session_id = ${valid} AND name = ${artefactName}`.pipe(
      orDie(`cannot delete ${artefactName} of session ${valid}`)
    )
  })

const summaryOf = (row: typeof SessionRow.Type) =>
  decodeRow(row.id, row.data).pipe(
    Effect.map(Session.summarize),
    Effect.catchTag("SessionCorrupt", (error) =>
      Effect.as(
        Effect.logWarning(`PgSessionStore: ${error.message}`),
        new Session.SessionSummary({
          id: row.id,
          status: "corrupt",
          query: "",
          createdAt: 0,
          updatedAt: 0,
          costUsd: 0,
          error: error.reason
        })
      )
    )
  )

export const list = (store: Store) =>
  Effect.gen(function* () {
    const rows = yield* rowsOf(SessionRow)(store.sql`SELECT id, data FROM deep_research_sessions`).pipe(
      orDie("cannot list the sessions")
    )
    const summaries = yield* Effect.forEach(rows, summaryOf)
    return summaries.sort((a, b) => b.createdAt - a.createdAt)
  }).pipe(Effect.withSpan("PgSessionStore.list"))

export const remove = (store: Store) =>
  Effect.fn("PgSessionStore.delete")(function* (id: string) {
    const valid = yield* Session.validateId(id)
    if (!(yield* present(store, valid))) return yield* new Errors.SessionNotFound({ sessionId: valid })
    // Taking the lock first keeps a live run's session from vanishing under it.
    yield* Effect.scoped(
      Effect.zipRight(
        store.locks.lock(valid),
        store.sql.withTransaction(
          Effect.all(
            [
              store.sql`DELETE FROM deep_research_events WHERE session_id = ${valid}`,
              store.sql`DELETE FROM deep_research_reports WHERE session_id = ${valid}`,
              store.sql`DELETE FROM deep_research_artefacts WHERE session_id = ${valid}`,
              store.sql`DELETE FROM deep_research_sessions WHERE id = ${valid}`
            ],
            { discard: true }
          )
        )
      )
    ).pipe(
      Effect.catchTag("SqlError", (error) =>
        Effect.die(new Error(`PgSessionStore: cannot delete ${valid}`, { cause: error }))
      )
    )
    store.known.delete(valid)
  })

export const lock = (store: Store) =>
  Effect.fn("PgSessionStore.lock")(function* (id: string) {
    const valid = yield* Session.validateId(id)
    yield* store.locks.lock(valid)
  })
