/**
 * A `SessionStore` in PostgreSQL, through `@effect/sql-pg`, for several processes on several machines sharing their
 * sessions. The tables are made and kept up to date by versioned migrations (`@effect/sql`'s Migrator) when the store
 * starts: `deep_research_sessions` (one row a session, its JSON and version), `deep_research_events` (the event log,
 * in order), `deep_research_reports`, `deep_research_artefacts` (evaluations and other named artefacts),
 * `deep_research_locks` (who holds a session) and `deep_research_corrupt_sessions` (rows found unreadable, kept
 * aside rather than overwritten).
 *
 * It behaves as the file store does: a checkpoint replaces the previous one in a single statement, events come back
 * in the order they were appended, a row that cannot be read is `SessionCorrupt` and is moved aside, never
 * overwritten, secrets are kept out of what is written, and a session is held by one run at a time (a PostgreSQL
 * advisory lock on a connection the store keeps: the lock goes with its process, however that process ends).
 */
import { Errors, ResearchEvents, Session, SessionStore } from "@deep-research/core"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as ParseResult from "effect/ParseResult"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as PgLock from "./pgLock.js"
import { migrate } from "./pgMigrations.js"
import { makeScrubbed } from "../secretScrubber.js"
import { decodeStored } from "../sessionMigrations.js"
import * as Environment from "../../Environment.js"

/** Options of the PostgreSQL store. */
export interface Options {
  /** Secret values (API keys) that must never reach the database: replaced wherever they appear before a write. */
  readonly secrets?: ReadonlyArray<Redacted.Redacted<string>> | undefined
}

/** The database could not be reached or prepared: said plainly, with the address (never the password). */
export class DatabaseUnavailable extends Schema.TaggedError<DatabaseUnavailable>()("DatabaseUnavailable", {
  address: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `cannot use the PostgreSQL database at ${this.address}: ${this.reason}`
  }
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

/** A PostgreSQL session store over the `SqlClient` in context; runs the migrations first. */
export const make = (
  options: Options = {}
): Effect.Effect<SessionStore.Service, never, SqlClient.SqlClient | Scope.Scope> =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    yield* Effect.orDieWith(
      migrate,
      (error) => new Error(`PgSessionStore: cannot migrate the schema: ${error.message}`, { cause: error })
    )
    const locks = yield* PgLock.make
    const scrubbed = makeScrubbed("PgSessionStore", (options.secrets ?? []).map(Redacted.value))
    // The hash of each session's data as this store last wrote or read it: a row changed by anything else is read and
    // checked before it is replaced.
    const known = new Map<string, string>()

    const corrupt = (id: string, reason: string) =>
      new Errors.SessionCorrupt({ sessionId: id, path: `deep_research_sessions/${id}`, reason })

    const decodeRow = (id: string, data: unknown) =>
      Effect.gen(function* () {
        const session = yield* Effect.mapError(decodeStored(data), (error) => corrupt(id, error.reason))
        if (session.id !== id) return yield* corrupt(id, `the row holds session ${session.id}`)
        return session
      })

    const present = (id: string) =>
      sql`SELECT EXISTS (SELECT 1 FROM deep_research_sessions WHERE id = ${id})
          OR EXISTS (SELECT 1 FROM deep_research_events WHERE session_id = ${id})
          OR EXISTS (SELECT 1 FROM deep_research_reports WHERE session_id = ${id})
          OR EXISTS (SELECT 1 FROM deep_research_artefacts WHERE session_id = ${id}) AS present`.pipe(
        rowsOf(PresentRow),
        Effect.map((rows) => rows[0]?.present === true),
        orDie(`cannot look for session ${id}`)
      )

    /** Inside the checkpoint's transaction: a row this store did not write or read last is checked, and moved aside if it is unreadable. */
    const protectExisting = (id: string) =>
      Effect.gen(function* () {
        const rows = yield* rowsOf(HashRow)(
          sql`SELECT md5(data::text) AS hash FROM deep_research_sessions WHERE id = ${id} FOR UPDATE`
        )
        const row = rows[0]
        if (row === undefined || known.get(id) === row.hash) return
        const stored = yield* rowsOf(SessionRow)(sql`SELECT id, data FROM deep_research_sessions WHERE id = ${id}`)
        const read = yield* Effect.either(decodeRow(id, stored[0]?.data))
        if (Either.isRight(read)) return
        yield* sql`INSERT INTO deep_research_corrupt_sessions (session_id, reason, data)
          SELECT id, ${read.left.reason}, data FROM deep_research_sessions WHERE id = ${id}`
        yield* Effect.logWarning(
          `PgSessionStore: session ${id} was corrupt (${read.left.reason}); its row was kept in ` +
            "deep_research_corrupt_sessions and not overwritten"
        )
      })

    const save = Effect.fn("PgSessionStore.save")(function* (session: Session.Session) {
      const id = yield* Session.validateId(session.id)
      const encoded = yield* Session.encode(session).pipe(
        Effect.mapError(
          (error) =>
            new Errors.InvalidInput({
              reason: `session ${id} cannot be stored: ${error.message}`
            })
        )
      )
      const text = yield* scrubbed(`session ${id}`, JSON.stringify(encoded))
      const hash = yield* sql
        .withTransaction(
          Effect.gen(function* () {
            yield* protectExisting(id)
            const rows = yield* rowsOf(HashRow)(
              sql`INSERT INTO deep_research_sessions (id, version, data, updated_at)
              VALUES (${id}, ${Session.currentVersion}, ${text}::jsonb, now())
              ON CONFLICT (id) DO UPDATE SET version = excluded.version, data = excluded.data, updated_at = now()
              RETURNING md5(data::text) AS hash`
            )
            return rows[0]?.hash
          })
        )
        .pipe(Effect.uninterruptible, orDie(`cannot save session ${id}`))
      if (hash !== undefined) known.set(id, hash)
    })

    const load = Effect.fn("PgSessionStore.load")(function* (id: string) {
      const valid = yield* Session.validateId(id)
      const rows = yield* rowsOf(Schema.Struct({ data: Schema.Unknown, hash: Schema.String }))(
        sql`SELECT data, md5(data::text) AS hash FROM deep_research_sessions WHERE id = ${valid}`
      ).pipe(orDie(`cannot load session ${valid}`))
      const row = rows[0]
      if (row === undefined) return yield* new Errors.SessionNotFound({ sessionId: valid })
      const session = yield* decodeRow(valid, row.data)
      known.set(valid, row.hash)
      return session
    })

    const appendEvents = Effect.fn("PgSessionStore.appendEvents")(function* (
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
      const texts = yield* Effect.forEach(lines, (line) => scrubbed(`an event of session ${valid}`, line))
      // Appends to one log are serialised by a transaction-scoped advisory lock, so that the events of one call
      // are numbered together, in their order, and a log is numbered in the order its appends commit.
      yield* sql
        .withTransaction(
          Effect.zipRight(
            sql`SELECT pg_advisory_xact_lock(${PgLock.keyOf(valid, "events")}::bigint)`,
            sql`INSERT INTO deep_research_events (session_id, data)
              SELECT ${valid}, value FROM jsonb_array_elements(${`[${texts.join(",")}]`}::jsonb)
              WITH ORDINALITY AS t(value, n) ORDER BY n`
          )
        )
        .pipe(Effect.uninterruptible, orDie(`cannot append events of session ${valid}`))
    })

    const readEvents = Effect.fn("PgSessionStore.events")(function* (id: string) {
      const valid = yield* Session.validateId(id)
      const rows = yield* rowsOf(EventRow)(
        sql`SELECT data FROM deep_research_events WHERE session_id = ${valid} ORDER BY seq`
      ).pipe(orDie(`cannot read the events of session ${valid}`))
      if (rows.length === 0 && !(yield* present(valid))) {
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

    const saveReport = Effect.fn("PgSessionStore.saveReport")(function* (id: string, markdown: string) {
      const valid = yield* Session.validateId(id)
      const text = yield* scrubbed(`the report of session ${valid}`, markdown)
      yield* sql`INSERT INTO deep_research_reports (session_id, markdown, updated_at) VALUES (${valid}, ${text}, now())
        ON CONFLICT (session_id) DO UPDATE SET markdown = excluded.markdown, updated_at = now()`.pipe(
        orDie(`cannot save the report of session ${valid}`)
      )
    })

    const saveArtefact = Effect.fn("PgSessionStore.saveArtefact")(function* (
      id: string,
      name: string,
      content: string
    ) {
      const valid = yield* Session.validateId(id)
      const artefactName = yield* SessionStore.validateArtefactName(name)
      const text = yield* scrubbed(`${artefactName} of session ${valid}`, content)
      yield* sql`INSERT INTO deep_research_artefacts (session_id, name, content, updated_at)
        VALUES (${valid}, ${artefactName}, ${text}, now())
        ON CONFLICT (session_id, name) DO UPDATE SET content = excluded.content, updated_at = now()`.pipe(
        orDie(`cannot save ${artefactName} of session ${valid}`)
      )
    })

    const artefact = Effect.fn("PgSessionStore.artefact")(function* (id: string, name: string) {
      const valid = yield* Session.validateId(id)
      const artefactName = yield* SessionStore.validateArtefactName(name)
      const rows = yield* rowsOf(TextRow)(
        sql`SELECT content FROM deep_research_artefacts WHERE session_id = ${valid} AND name = ${artefactName}`
      ).pipe(orDie(`cannot read ${artefactName} of session ${valid}`))
      const row = rows[0]
      if (row !== undefined) return Option.some(row.content)
      if (!(yield* present(valid))) return yield* new Errors.SessionNotFound({ sessionId: valid })
      return Option.none<string>()
    })

    const deleteArtefact = Effect.fn("PgSessionStore.deleteArtefact")(function* (id: string, name: string) {
      const valid = yield* Session.validateId(id)
      const artefactName = yield* SessionStore.validateArtefactName(name)
      yield* sql`DELETE FROM deep_research_artefacts WHERE session_id = ${valid} AND name = ${artefactName}`.pipe(
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

    const list = Effect.gen(function* () {
      const rows = yield* rowsOf(SessionRow)(sql`SELECT id, data FROM deep_research_sessions`).pipe(
        orDie("cannot list the sessions")
      )
      const summaries = yield* Effect.forEach(rows, summaryOf)
      return summaries.sort((a, b) => b.createdAt - a.createdAt)
    }).pipe(Effect.withSpan("PgSessionStore.list"))

    const remove = Effect.fn("PgSessionStore.delete")(function* (id: string) {
      const valid = yield* Session.validateId(id)
      if (!(yield* present(valid))) return yield* new Errors.SessionNotFound({ sessionId: valid })
      // Taking the lock first keeps a live run's session from vanishing under it.
      yield* Effect.scoped(
        Effect.zipRight(
          locks.lock(valid),
          sql.withTransaction(
            Effect.all(
              [
                sql`DELETE FROM deep_research_events WHERE session_id = ${valid}`,
                sql`DELETE FROM deep_research_reports WHERE session_id = ${valid}`,
                sql`DELETE FROM deep_research_artefacts WHERE session_id = ${valid}`,
                sql`DELETE FROM deep_research_sessions WHERE id = ${valid}`
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
      known.delete(valid)
    })

    const lock = Effect.fn("PgSessionStore.lock")(function* (id: string) {
      const valid = yield* Session.validateId(id)
      yield* locks.lock(valid)
    })

    return SessionStore.SessionStore.of({
      save,
      load,
      appendEvents,
      events: readEvents,
      saveReport,
      saveArtefact,
      artefact,
      deleteArtefact,
      list,
      delete: remove,
      lock
    })
  })

/** The PostgreSQL store as the `SessionStore` in context, over the `SqlClient` in context. */
export const layer = (options: Options = {}): Layer.Layer<SessionStore.SessionStore, never, SqlClient.SqlClient> =>
  Layer.scoped(SessionStore.SessionStore, make(options))

/** The address of a database URL without its password, for messages. */
export const describeUrl: (url: string) => string = Environment.describeDatabaseUrl

/** The client of a database URL; `DatabaseUnavailable` when it cannot be reached in `connectTimeout` (10 s). */
export const clientLayer = (
  url: Redacted.Redacted<string>,
  options: { readonly connectTimeout?: Duration.DurationInput; readonly maxConnections?: number } = {}
): Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, DatabaseUnavailable> =>
  PgClient.layer({
    url,
    connectTimeout: options.connectTimeout ?? Duration.seconds(10),
    maxConnections: options.maxConnections ?? 10,
    applicationName: "deep-research"
  }).pipe(
    Layer.mapError(
      (error) =>
        new DatabaseUnavailable({
          address: describeUrl(Redacted.value(url)),
          reason: [error.message, ...causesOf(error.cause)].join(": ")
        })
    )
  )

/**
 * What the driver said beneath a failure to connect (a refused connection, a role or database the server does not
 * have), each address's when it tried several. Its messages name hosts, users and databases, never a password.
 */
const causesOf = (cause: unknown): ReadonlyArray<string> => {
  if (cause instanceof AggregateError) {
    return [[...new Set(cause.errors.flatMap((inner) => causesOf(inner)))].join("; ")].filter((text) => text !== "")
  }
  return cause instanceof Error && cause.message !== "" ? [cause.message] : []
}

/** The PostgreSQL store at a database URL, with its own client. */
export const layerUrl = (
  url: Redacted.Redacted<string>,
  options: Options = {}
): Layer.Layer<SessionStore.SessionStore, DatabaseUnavailable> => layer(options).pipe(Layer.provide(clientLayer(url)))

/** The store at `DEEP_RESEARCH_DATABASE_URL`. */
export const layerConfig = (
  options: Options = {}
): Layer.Layer<SessionStore.SessionStore, DatabaseUnavailable | ConfigError.ConfigError> =>
  Layer.unwrapEffect(Effect.map(Config.redacted(Environment.databaseUrl), (url) => layerUrl(url, options)))
