/**
 * The `SessionStore` on a database, through `@effect/sql`: one SQLite file under the store folder by default
 * (`@effect/sql-libsql`), PostgreSQL for a cluster (`@effect/sql-pg`). One module over `SqlClient`, the dialects
 * differing only in column types; the schema is made and upgraded by `@effect/sql`'s Migrator (`sqlMigrations.ts`).
 *
 * What the database guarantees, the store does not rebuild: a checkpoint is one committed transaction (SQLite in WAL
 * mode with `synchronous=FULL`: a commit survives a power cut, not only a crash of the process), several processes
 * share one store (SQLite's file locking, PostgreSQL's rows), and a run's hold on a session is a lease row renewed
 * while its process lives (`sqlLeases.ts`), so that a killed process's sessions are taken over once it lapses.
 * Tables: `deep_research_sessions` (a row a session: its JSON, status, summary and revision), `_events` (the event
 * log, in order), `_reports`, `_artefacts` (the request journal, evaluations, other named artefacts), `_leases`,
 * `_corrupt_sessions` (rows found unreadable, kept aside rather than overwritten) and `_imports` (file stores
 * imported).
 */
import { SessionStore, SourceLibrary } from "@deep-research/core"
import * as SqlClient from "@effect/sql/SqlClient"
import * as LibsqlClient from "@effect/sql-libsql/LibsqlClient"
import type * as PgClient from "@effect/sql-pg/PgClient"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { pathToFileURL } from "node:url"
import * as Environment from "../../Environment.js"
import { makeScrubbed } from "../secretScrubber.js"
import { importOnce } from "./fileImport.js"
import { makeWriter, messageOf, patiently } from "./sqlDatabase.js"
import * as SqliteConnection from "./sqliteConnection.js"
import * as SqlLeases from "./sqlLeases.js"
import * as SqlLibrary from "./sqlLibrary.js"
import { migrate } from "./sqlMigrations.js"
import * as SqlStore from "./sqlStore.js"

// =============================================================================
// Options and errors
// =============================================================================

/** Options of the store. */
export interface Options {
  /** Secret values (API keys) that must never reach the database: replaced wherever they appear before a write. */
  readonly secrets?: ReadonlyArray<Redacted.Redacted<string>> | undefined
  /**
   * How long a run's hold on a session outlives its process (15 s): a killed process's sessions are taken over by a
   * live one after at most this long.
   */
  readonly leaseDuration?: Duration.DurationInput | undefined
  /**
   * Whether a session this store saves queued stays held by this process until a run takes it (a server's queue):
   * taken over by another process only once this one has stopped. Off for a store that only hands sessions to
   * others (a cluster's client).
   */
  readonly holdAccepted?: boolean | undefined
  /** A folder of the earlier file store whose sessions are imported when the store opens, once. */
  readonly importFrom?: string | undefined
  /** How the database is named in messages (its file, or its address without the password). */
  readonly address?: string | undefined
}

/** The database could not be opened, reached or prepared: said plainly, with its address (never a password). */
export class DatabaseUnavailable extends Schema.TaggedError<DatabaseUnavailable>()("DatabaseUnavailable", {
  address: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `cannot use the session database at ${this.address}: ${this.reason}`
  }
}

/** Sessions stored queued or running that no live process holds: what a stopped process left, to be taken over. */
export class Unheld extends Context.Tag("@deep-research/providers/SqlSessionStore/Unheld")<
  Unheld,
  Effect.Effect<ReadonlyArray<{ readonly id: string; readonly status: string }>>
>() {}

// =============================================================================
// Constructors
// =============================================================================

/** The store over the `SqlClient` in context: migrates the schema, imports a file store if asked, renews its leases. */
export const make = (
  options: Options = {}
): Effect.Effect<
  { readonly store: SessionStore.Service; readonly unheld: Unheld["Type"]; readonly library: SourceLibrary.Service },
  DatabaseUnavailable,
  SqlClient.SqlClient | Scope.Scope
> =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const address = options.address ?? "the database"
    yield* patiently(migrate).pipe(
      Effect.mapError((error) => new DatabaseUnavailable({ address, reason: `cannot prepare it: ${messageOf(error)}` }))
    )
    const writes = yield* makeWriter(sql)
    const leases = yield* SqlLeases.make({
      duration: options.leaseDuration,
      holdAccepted: options.holdAccepted,
      writes
    })
    const store: SqlStore.Store = {
      sql,
      leases,
      scrubbed: makeScrubbed("SqlSessionStore", (options.secrets ?? []).map(Redacted.value)),
      writes,
      known: new Map(),
      indexed: new Map()
    }
    if (options.importFrom !== undefined) {
      // Imported sessions are nobody's yet: one stored queued is taken over as a stopped process's would be.
      yield* importOnce({ ...store, leases: { ...leases, holdAccepted: () => Effect.void } }, options.importFrom)
    }
    // Sessions stored before the library are indexed once, here (imported ones were indexed as they were saved).
    yield* SqlLibrary.backfill(store, (id) =>
      Effect.map(
        sql`SELECT ${sql.onDialectOrElse({ pg: () => sql.literal("data::text"), orElse: () => sql.literal("data") })} AS data
          FROM deep_research_sessions WHERE id = ${id}`,
        (rows) => rows[0]?.["data"]
      ).pipe(
        Effect.flatMap((data) =>
          typeof data === "string" ? Effect.option(SqlStore.decodeRow(id, data)) : Effect.succeedNone
        ),
        Effect.map(Option.getOrUndefined)
      )
    )
    return {
      library: SourceLibrary.SourceLibrary.of({ search: SqlLibrary.search(store) }),
      store: SessionStore.SessionStore.of({
        save: SqlStore.save(store),
        load: SqlStore.load(store),
        appendEvents: SqlStore.appendEvents(store),
        events: SqlStore.readEvents(store),
        saveReport: SqlStore.saveReport(store),
        saveArtefact: SqlStore.saveArtefact(store),
        artefact: SqlStore.artefact(store),
        deleteArtefact: SqlStore.deleteArtefact(store),
        list: SqlStore.list(store),
        delete: SqlStore.remove(store),
        lock: SqlStore.lock(store)
      }),
      unheld: leases.unheld
    }
  })

/** The store as the `SessionStore` in context (and `Unheld`), over the `SqlClient` in context. */
export const layer = (
  options: Options = {}
): Layer.Layer<
  SessionStore.SessionStore | Unheld | SourceLibrary.SourceLibrary,
  DatabaseUnavailable,
  SqlClient.SqlClient
> =>
  Layer.scopedContext(
    Effect.map(make(options), ({ library, store, unheld }) =>
      Context.make(SessionStore.SessionStore, store).pipe(
        Context.add(Unheld, unheld),
        Context.add(SourceLibrary.SourceLibrary, library)
      )
    )
  )

/** The database file of a store folder. */
export const databaseFile = (storeDirectory: string): string => nodePath.join(storeDirectory, "deep-research.db")

/**
 * A client of an SQLite file, made with its folder if need be, in WAL mode (readers never wait for the writer) with
 * `synchronous=FULL` (each commit is synced, and survives a power cut) and a busy timeout (`sqliteConnection.ts`).
 */
export const sqliteClientLayer = (
  file: string
): Layer.Layer<LibsqlClient.LibsqlClient | SqlClient.SqlClient, DatabaseUnavailable> =>
  Layer.unwrapScoped(
    Effect.gen(function* () {
      const unavailable = (error: unknown) =>
        new DatabaseUnavailable({ address: file, reason: error instanceof Error ? error.message : String(error) })
      const client = yield* Effect.acquireRelease(
        Effect.try({
          try: () => {
            makeFolder(nodePath.dirname(file))
            refuseWhatCannotBeWritten(file)
            // Made first, the owner's only: SQLite gives its log files the database file's permissions.
            if (!fs.existsSync(file)) fs.closeSync(fs.openSync(file, "a", 0o600))
            return SqliteConnection.make(pathToFileURL(file).toString())
          },
          catch: unavailable
        }),
        (client) => Effect.sync(() => client.close())
      )
      yield* Effect.tryPromise({ try: () => client.execute("PRAGMA journal_mode = WAL"), catch: unavailable })
      return LibsqlClient.layer({ liveClient: client })
    })
  )

/**
 * The store's folder, made if need be, a level at a time, the owner's only (the sessions hold the user's research).
 * Not Node's recursive `mkdir`, which never returns under some paths (`/proc/...`).
 */
const makeFolder = (folder: string): void => {
  if (fs.existsSync(folder)) {
    if (!fs.statSync(folder).isDirectory()) throw new Error(`${folder} is not a folder`)
    return
  }
  const parent = nodePath.dirname(folder)
  if (parent !== folder) makeFolder(parent)
  try {
    fs.mkdirSync(folder, { mode: 0o700 })
  } catch (error) {
    const code = typeof error === "object" && error !== null && "code" in error ? String(error.code) : ""
    if (code === "EEXIST" && fs.statSync(folder).isDirectory()) return
    if (code === "EEXIST" || code === "ENOTDIR") throw new Error(`${folder} is not a folder`)
    throw error
  }
}

/**
 * SQLite says only "unable to open database file" of a file or folder the system refuses it: the system's own reason
 * is asked first, so that the refusal names it. Both must be writable (SQLite writes its log beside the file).
 */
const refuseWhatCannotBeWritten = (file: string) => {
  for (const path of [nodePath.dirname(file), ...(fs.existsSync(file) ? [file] : [])]) {
    try {
      fs.accessSync(path, fs.constants.R_OK | fs.constants.W_OK)
    } catch (error) {
      const code = typeof error === "object" && error !== null && "code" in error ? String(error.code) : ""
      throw new Error(
        code === "EACCES" || code === "EPERM" || code === "EROFS"
          ? `permission denied: ${path} cannot be ${code === "EROFS" ? "written (a read-only file system)" : "read and written by this user"}`
          : `${path}: ${error instanceof Error ? error.message : String(error)}`
      )
    }
  }
}

/** The store in an SQLite file (by default `deep-research.db` of the store folder). */
export const layerSqlite = (
  file: string,
  options: Options = {}
): Layer.Layer<SessionStore.SessionStore | Unheld | SourceLibrary.SourceLibrary, DatabaseUnavailable> =>
  layer({ address: file, ...options }).pipe(Layer.provide(sqliteClientLayer(file)))

/** The address of a database URL without its password, for messages. */
export const describeUrl: (url: string) => string = Environment.describeDatabaseUrl

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

/**
 * A PostgreSQL client of a database URL (a pool: a connection that breaks is replaced); `DatabaseUnavailable` when it
 * cannot be reached in `connectTimeout` (10 s). The driver is loaded by the first call, not by importing this module.
 */
export const pgClientLayer = (
  url: Redacted.Redacted<string>,
  options: { readonly connectTimeout?: Duration.DurationInput; readonly maxConnections?: number } = {}
): Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, DatabaseUnavailable> =>
  Layer.unwrapEffect(
    Effect.map(
      Effect.promise(() => import("@effect/sql-pg/PgClient")),
      (PgClient) =>
        PgClient.layer({
          url,
          connectTimeout: options.connectTimeout ?? Duration.seconds(10),
          maxConnections: options.maxConnections ?? 10,
          applicationName: "deep-research"
        })
    )
  ).pipe(
    Layer.mapError(
      (error) =>
        new DatabaseUnavailable({
          address: describeUrl(Redacted.value(url)),
          reason: [error.message, ...causesOf(error.cause)].join(": ")
        })
    )
  )

/** The store in the PostgreSQL database at a URL, with its own client. */
export const layerPostgres = (
  url: Redacted.Redacted<string>,
  options: Options = {}
): Layer.Layer<SessionStore.SessionStore | Unheld | SourceLibrary.SourceLibrary, DatabaseUnavailable> =>
  layer({ address: describeUrl(Redacted.value(url)), ...options }).pipe(Layer.provide(pgClientLayer(url)))

/** The PostgreSQL store at `DEEP_RESEARCH_DATABASE_URL`. */
export const layerConfig = (
  options: Options = {}
): Layer.Layer<
  SessionStore.SessionStore | Unheld | SourceLibrary.SourceLibrary,
  DatabaseUnavailable | ConfigError.ConfigError
> => Layer.unwrapEffect(Effect.map(Config.redacted(Environment.databaseUrl), (url) => layerPostgres(url, options)))
