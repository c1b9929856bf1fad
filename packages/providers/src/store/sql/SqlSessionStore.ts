/**
 * The `SessionStore` on a database, through `@effect/sql`: one SQLite file under the store folder by default
 * (`@effect/sql-libsql`, WAL, `synchronous=FULL`: a commit survives a power cut), PostgreSQL for a cluster
 * (`@effect/sql-pg`). One module over `SqlClient`, the dialects differing only where they must; the schema is made and
 * upgraded by `@effect/sql`'s Migrator (`sqlMigrations.ts`), the operations are in `sqlStore.ts`, a run's hold on a
 * session is a lease row renewed while its process lives (`sqlLeases.ts`), so a killed process's sessions are taken
 * over once it lapses.
 */
import * as SessionStore from "@deep-research/core/SessionStore"
import * as SourceLibrary from "@deep-research/core/SourceLibrary"
import * as SqlClient from "@effect/sql/SqlClient"
import * as LibsqlClient from "@effect/sql-libsql/LibsqlClient"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { pathToFileURL } from "node:url"
import * as Environment from "../../Environment.js"
import { makeScrubbed } from "../secretScrubber.js"
import { importedFile, type Imported, ImportUnreadable, importSessions } from "./databaseImport.js"
import { importOnce } from "./fileImport.js"
import { isUnreachable as outOfReach, makeWriter, messageOf, patiently } from "./sqlDatabase.js"
import * as SqliteConnection from "./sqliteConnection.js"
import * as SqlLeases from "./sqlLeases.js"
import * as SqlLibrary from "./sqlLibrary.js"
import { migrate } from "./sqlMigrations.js"
import * as SqlStore from "./sqlStore.js"

/** Options of the store. */
export interface Options {
  /** Secret values (API keys) that must never reach the database: replaced wherever they appear before a write. */
  readonly secrets?: ReadonlyArray<Redacted.Redacted<string>> | undefined
  /** How long a run's hold on a session outlives its process (15 s): then a live process takes it over. */
  readonly leaseDuration?: Duration.DurationInput | undefined
  /** Whether a session saved queued stays this process's until a run takes it (a server's queue; not a cluster client). */
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

/** What the store's layers provide: the store, its `Unheld` sessions, and the library of their sources. */
export type Services = SessionStore.SessionStore | Unheld | SourceLibrary.SourceLibrary

/** The store over the `SqlClient` in context: migrates the schema, and imports a file store if asked. */
export const layer = (options: Options = {}): Layer.Layer<Services, DatabaseUnavailable, SqlClient.SqlClient> =>
  Layer.scopedContext(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const address = options.address ?? "the database"
      yield* patiently(migrate).pipe(
        Effect.mapError(
          (error) => new DatabaseUnavailable({ address, reason: `cannot prepare it: ${messageOf(error)}` })
        )
      )
      const write = yield* makeWriter(sql)
      const leases = yield* SqlLeases.make({
        duration: options.leaseDuration,
        holdAccepted: options.holdAccepted,
        write
      })
      const scrubbed = makeScrubbed("SqlSessionStore", (options.secrets ?? []).map(Redacted.value))
      const store: SqlStore.Store = { sql, leases, scrubbed, write, known: new Map(), indexed: new Map() }
      if (options.importFrom !== undefined) {
        // Imported sessions are nobody's yet: one stored queued is taken over as a stopped process's would be.
        const importing = SqlStore.service({ ...store, leases: { ...leases, holdAccepted: () => Effect.void } })
        yield* importOnce(sql, importing, options.importFrom)
      }
      // Sessions stored before the library are indexed once, here (imported ones were indexed as they were saved).
      const service = SqlStore.service(store)
      yield* SqlLibrary.backfill(store, (id) => Effect.orElseSucceed(service.load(id), () => undefined))
      return Context.make(SessionStore.SessionStore, service).pipe(
        Context.add(Unheld, leases.unheld),
        Context.add(SourceLibrary.SourceLibrary, SourceLibrary.SourceLibrary.of({ search: SqlLibrary.search(store) }))
      )
    })
  )

/** The database file of a store folder. */
export const databaseFile = (storeDirectory: string): string => nodePath.join(storeDirectory, "deep-research.db")

const codeOf = (error: unknown) =>
  typeof error === "object" && error !== null && "code" in error ? String(error.code) : ""

/**
 * A client of an SQLite file in WAL mode (readers never wait for the writer), its folder made if need be, a level at a
 * time (Node's recursive `mkdir` never returns under some paths, `/proc/...`), the owner's only. SQLite says only
 * "unable to open database file" of a file or folder the system refuses it: the system's reason is asked first.
 */
export const sqliteClientLayer = (file: string): Layer.Layer<SqlClient.SqlClient, DatabaseUnavailable> => {
  const makeFolder = (folder: string): void => {
    if (fs.existsSync(folder)) {
      if (fs.statSync(folder).isDirectory()) return
      throw new Error(`${folder} is not a folder`)
    }
    makeFolder(nodePath.dirname(folder))
    try {
      fs.mkdirSync(folder, { mode: 0o700 })
    } catch (error) {
      // Made meanwhile by another process.
      if (codeOf(error) !== "EEXIST" || !fs.statSync(folder).isDirectory()) throw error
    }
  }
  const refuseWhatCannotBeWritten = () => {
    for (const path of [nodePath.dirname(file), ...(fs.existsSync(file) ? [file] : [])]) {
      try {
        fs.accessSync(path, fs.constants.R_OK | fs.constants.W_OK)
      } catch (error) {
        const code = codeOf(error)
        if (code === "EROFS") throw new Error(`permission denied: ${path} cannot be written (a read-only file system)`)
        if (code !== "EACCES" && code !== "EPERM") throw error
        throw new Error(`permission denied: ${path} cannot be read and written by this user`)
      }
    }
  }
  const unavailable = (error: unknown) =>
    new DatabaseUnavailable({ address: file, reason: error instanceof Error ? error.message : String(error) })
  return Layer.unwrapScoped(
    Effect.gen(function* () {
      const client = yield* Effect.acquireRelease(
        Effect.try({
          try: () => {
            makeFolder(nodePath.dirname(file))
            refuseWhatCannotBeWritten()
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
}

/** The store in an SQLite file (by default `deep-research.db` of the store folder). */
export const layerSqlite = (file: string, options: Options = {}): Layer.Layer<Services, DatabaseUnavailable> =>
  layer({ address: file, ...options }).pipe(Layer.provide(sqliteClientLayer(file)))

export { type Imported, ImportUnreadable } from "./databaseImport.js"

/**
 * Brings every session of another store's SQLite database (its `deep-research.db`, or the store folder holding it)
 * into `store`, whole: how a store moves to PostgreSQL. Sessions the store holds already are left as they are.
 */
export const importDatabase = (
  store: SessionStore.Service,
  path: string
): Effect.Effect<Imported, ImportUnreadable> => {
  const file = importedFile(path)
  // Opened where there is none, SQLite would make an empty database.
  if (!fs.existsSync(file)) return Effect.fail(new ImportUnreadable({ path: file, reason: "no such file" }))
  return importSessions(store, file).pipe(
    Effect.provide(sqliteClientLayer(file)),
    Effect.catchTag("DatabaseUnavailable", (error) => new ImportUnreadable({ path: file, reason: error.reason }))
  )
}

/** What the driver said beneath a failure to connect, each address's when it tried several (never a password). */
const causesOf = (cause: unknown): ReadonlyArray<string> =>
  cause instanceof AggregateError
    ? [[...new Set(cause.errors.flatMap(causesOf))].join("; ")].filter((text) => text !== "")
    : cause instanceof Error && cause.message !== ""
      ? [cause.message]
      : []

/**
 * A PostgreSQL client of a database URL (a pool: a connection that breaks is replaced); `DatabaseUnavailable` when it
 * cannot be reached in `connectTimeout` (10 s). The driver is loaded by the first call, not by importing this module,
 * and its types are not named here: a program on SQLite type-checks without the driver's types (`skipLibCheck: false`).
 */
export const pgClientLayer = (
  url: Redacted.Redacted<string>,
  options: { readonly connectTimeout?: Duration.DurationInput; readonly maxConnections?: number } = {}
): Layer.Layer<SqlClient.SqlClient, DatabaseUnavailable> =>
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
          address: Environment.describeDatabaseUrl(Redacted.value(url)),
          reason: [error.message, ...causesOf(error.cause)].join(": ")
        })
    )
  )

/** The store in the PostgreSQL database at a URL, with its own client. */
export const layerPostgres = (
  url: Redacted.Redacted<string>,
  options: Options = {}
): Layer.Layer<Services, DatabaseUnavailable> =>
  layer({ address: Environment.describeDatabaseUrl(Redacted.value(url)), ...options }).pipe(
    Layer.provide(pgClientLayer(url))
  )

/** The PostgreSQL store at `DEEP_RESEARCH_DATABASE_URL`. */
export const layerConfig = (
  options: Options = {}
): Layer.Layer<Services, DatabaseUnavailable | ConfigError.ConfigError> =>
  Layer.unwrapEffect(Effect.map(Config.redacted(Environment.databaseUrl), (url) => layerPostgres(url, options)))

/**
 * Whether a failure or a defect of the store is its database out of reach (the connection refused or cut, the server
 * stopping or starting): a run stopped by one is resumed once the database answers, it is no fault of the run.
 */
export const isUnreachable: (error: unknown) => boolean = outOfReach
