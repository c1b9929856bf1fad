/**
 * The session store as the CLI opens it: the SQLite database `deep-research.db` under the store folder (or, with
 * `--database` or `DEEP_RESEARCH_DATABASE_URL`, the PostgreSQL store of a cluster), keeping the environment's keys and
 * token out of what is written, the banner of simulated reports and the mark a simulated run leaves beside its
 * session. Sessions of the earlier file store (`<store>/sessions/`) are imported when the database is first opened.
 * Apart from `Wiring` so that the commands that only read or delete sessions load no provider's SDK.
 */
import * as SessionStore from "@deep-research/core/SessionStore"
import type * as SourceLibrary from "@deep-research/core/SourceLibrary"
import * as Environment from "@deep-research/providers/Environment"
import * as SqlSessionStore from "@deep-research/providers/SqlSessionStore"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type * as CliConfig from "./CliConfig.js"
import { secretsIn } from "./internal/config/credentials.js"

/** The database file of a store folder. */
export const databaseFile = (storeDir: string): string => SqlSessionStore.databaseFile(storeDir)

/**
 * How long a killed process's sessions stay held before a live one takes them over: `DEEP_RESEARCH_LEASE_SECONDS`
 * (15 by default; at least 1).
 */
const leaseDuration = (env: NodeJS.ProcessEnv = process.env) => {
  const seconds = Number(env["DEEP_RESEARCH_LEASE_SECONDS"])
  return Number.isFinite(seconds) && seconds >= 1 ? Duration.seconds(seconds) : undefined
}

/**
 * The session store of a store folder: PostgreSQL when the credentials name a database, else the SQLite database of
 * the folder; either keeps the environment's keys (and the database's URL) out of what it writes, and gives the
 * sessions that no live process holds (`Unheld`) and the library of every stored source (`SourceLibrary`). `DatabaseUnavailable` when the database cannot be opened, reached or
 * prepared.
 */
export const storeLayerOrFail = (
  storeDir: string,
  credentials?: CliConfig.Credentials
): Layer.Layer<
  SessionStore.SessionStore | SqlSessionStore.Unheld | SourceLibrary.SourceLibrary,
  SqlSessionStore.DatabaseUnavailable
> => {
  const secrets = credentials === undefined ? [] : secretsIn(credentials)
  const database = credentials?.databaseUrl
  const leases = { leaseDuration: leaseDuration() }
  return database === undefined
    ? // A session this process accepts stays its own until it runs it; a killed process's are taken over.
      SqlSessionStore.layerSqlite(databaseFile(storeDir), {
        secrets,
        holdAccepted: true,
        importFrom: Environment.sessionsFolder(storeDir),
        ...leases
      })
    : // A cluster's sessions are its runners' to take: a client hands them over and holds none.
      SqlSessionStore.layerPostgres(database, { secrets, ...leases })
}

/** `storeLayerOrFail` for callers that checked the database first (`checkDatabase`): losing it later is a defect. */
export const storeLayer = (
  storeDir: string,
  credentials?: CliConfig.Credentials
): Layer.Layer<SessionStore.SessionStore | SqlSessionStore.Unheld | SourceLibrary.SourceLibrary> =>
  Layer.orDie(storeLayerOrFail(storeDir, credentials))

/** Fails with a plain message when the credentials name a database that cannot be reached or prepared. */
export const checkDatabase = (
  credentials: CliConfig.Credentials
): Effect.Effect<void, SqlSessionStore.DatabaseUnavailable> =>
  credentials.databaseUrl === undefined
    ? Effect.void
    : Effect.scoped(Layer.build(storeLayerOrFail("", credentials))).pipe(Effect.asVoid)

/** Where the store is, for messages: the database file, or the database's address without its password. */
export const storePlace = (storeDir: string, credentials?: CliConfig.Credentials): string =>
  credentials?.databaseUrl === undefined
    ? databaseFile(storeDir)
    : Environment.describeDatabaseUrl(Redacted.value(credentials.databaseUrl))

/** Where the store keeps a session's artefact, for messages: a row of the database. */
export const artefactPlace =
  (storeDir: string, credentials?: CliConfig.Credentials) =>
  (sessionId: string, name: string): string =>
    `${storePlace(storeDir, credentials)} (deep_research_artefacts: ${sessionId}, ${name})`

/** The artefact that marks a session a simulated run made, so that resume and evaluate simulate it too. */
export const simulatedArtefact = SessionStore.simulatedMark

/**
 * Whether a simulated run made the session (it carries the mark); false for one whose mark cannot be read, whatever
 * the reason (a session folder the system will not open is listed all the same).
 */
export const wasSimulated = (store: SessionStore.Service, sessionId: string): Effect.Effect<boolean> =>
  store.artefact(sessionId, simulatedArtefact).pipe(
    Effect.map(Option.isSome),
    Effect.catchAllCause(() => Effect.succeed(false))
  )

/** The banner that opens every simulated report. */
export const simulatedBanner =
  "> **Simulated run.** Every model answer, search result and source below was produced offline by the\n" +
  "> deep-research emulator, not by a real model or the web.\n\n"

/** Whether a report was written by a simulated run. */
export const isSimulatedReport = (markdown: string): boolean => markdown.startsWith(simulatedBanner)

/** The report with the simulated banner on top (once). */
export const markSimulated = (markdown: string): string =>
  isSimulatedReport(markdown) ? markdown : `${simulatedBanner}${markdown}`
