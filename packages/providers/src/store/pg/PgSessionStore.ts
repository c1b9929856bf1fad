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
import { SessionStore } from "@deep-research/core"
import * as SqlClient from "@effect/sql/SqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as PgLock from "./pgLock.js"
import * as PgStore from "./pgStore.js"
import { migrate } from "./pgMigrations.js"
import { makeScrubbed } from "../secretScrubber.js"
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
    const store: PgStore.Store = {
      sql,
      locks: yield* PgLock.make,
      scrubbed: makeScrubbed("PgSessionStore", (options.secrets ?? []).map(Redacted.value)),
      known: new Map()
    }
    return SessionStore.SessionStore.of({
      save: PgStore.save(store),
      load: PgStore.load(store),
      appendEvents: PgStore.appendEvents(store),
      events: PgStore.readEvents(store),
      saveReport: PgStore.saveReport(store),
      saveArtefact: PgStore.saveArtefact(store),
      artefact: PgStore.artefact(store),
      deleteArtefact: PgStore.deleteArtefact(store),
      list: PgStore.list(store),
      delete: PgStore.remove(store),
      lock: PgStore.lock(store)
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
