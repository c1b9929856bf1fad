/**
 * The session store as the CLI opens it: the sessions folder under the store folder (or, with `--database` or
 * `DEEP_RESEARCH_DATABASE_URL`, the PostgreSQL store of a cluster), keeping the environment's keys and token out of
 * what is written, the banner of simulated reports and the mark a simulated run leaves beside its session. Apart from
 * `Wiring` so that the commands that only read or delete sessions load no provider's SDK.
 */
import { type SessionStore } from "@deep-research/core"
import * as Environment from "@deep-research/providers/Environment"
import * as FileSessionStore from "@deep-research/providers/FileSessionStore"
import type * as PgSessionStore from "@deep-research/providers/PgSessionStore"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as nodePath from "node:path"
import type * as CliConfig from "./CliConfig.js"

/** The sessions folder under a store folder. */
export const sessionsDirectory = (resolved: Pick<CliConfig.Resolved, "storeDir">): string =>
  Environment.sessionsFolder(resolved.storeDir)

/**
 * The secrets of the credentials (the keys, the database's URL, the API token): whatever is `Redacted` there is kept
 * out of files.
 */
export const secretsOf = (credentials: CliConfig.Credentials): ReadonlyArray<Redacted.Redacted<string>> =>
  Object.values(credentials).filter((value): value is Redacted.Redacted<string> => Redacted.isRedacted(value))

/**
 * The session store: PostgreSQL when the credentials name a database, else the file store in a folder; either keeps
 * the environment's keys (and the database's URL) out of what it writes. `DatabaseUnavailable` when the database
 * cannot be reached or prepared.
 */
export const storeLayerOrFail = (
  directory: string,
  credentials?: CliConfig.Credentials
): Layer.Layer<SessionStore.SessionStore, PgSessionStore.DatabaseUnavailable> => {
  const secrets = credentials === undefined ? [] : secretsOf(credentials)
  const database = credentials?.databaseUrl
  return database === undefined
    ? // Sessions asked for are acknowledged once journaled, their folders made right after (`intake` of the store).
      FileSessionStore.layerNode({ directory, secrets, intake: true })
    : // The PostgreSQL driver is loaded by the commands that use a database, not by every command.
      Layer.unwrapEffect(
        Effect.map(
          Effect.promise(() => import("@deep-research/providers/PgSessionStore")),
          (PgSessionStore) => PgSessionStore.layerUrl(database, { secrets })
        )
      )
}

/** `storeLayerOrFail` for callers that checked the database first (`checkDatabase`): losing it later is a defect. */
export const storeLayer = (
  directory: string,
  credentials?: CliConfig.Credentials
): Layer.Layer<SessionStore.SessionStore> => Layer.orDie(storeLayerOrFail(directory, credentials))

/** Fails with a plain message when the credentials name a database that cannot be reached or prepared. */
export const checkDatabase = (
  credentials: CliConfig.Credentials
): Effect.Effect<void, PgSessionStore.DatabaseUnavailable> =>
  credentials.databaseUrl === undefined
    ? Effect.void
    : Effect.scoped(Layer.build(storeLayerOrFail("", credentials))).pipe(Effect.asVoid)

/** Where the store keeps a session's artefact, for messages: a file, or a row of the database. */
export const artefactPlace =
  (directory: string, credentials?: CliConfig.Credentials) =>
  (sessionId: string, name: string): string =>
    credentials?.databaseUrl === undefined
      ? nodePath.join(directory, sessionId, name)
      : `${Environment.describeDatabaseUrl(Redacted.value(credentials.databaseUrl))} (deep_research_artefacts: ${sessionId}, ${name})`

/** The artefact that marks a session a simulated run made, so that resume and evaluate simulate it too. */
export const simulatedArtefact = "simulated.json"

/**
 * Whether a simulated run made the session (it carries the mark); false for one whose mark cannot be read, whatever
 * the reason (a session folder the system will not open is listed all the same).
 */
export const wasSimulated = (store: SessionStore.Service, sessionId: string): Effect.Effect<boolean> =>
  store.artefact(sessionId, simulatedArtefact).pipe(
    Effect.map(Option.isSome),
    Effect.catchAllCause(() => Effect.succeed(false))
  )

/**
 * Marks the listed sessions a simulated run made (`simulated: true`), for a process that lists them again and again
 * (a server's clients poll the list): a session's mark, written before its first checkpoint, never changes, so each
 * session's is read once.
 */
export const simulatedMarks = (store: SessionStore.Service) => {
  const known = new Map<string, boolean>()
  return <A extends { readonly id: string }>(
    listed: ReadonlyArray<A>
  ): Effect.Effect<ReadonlyArray<A & { readonly simulated?: boolean }>> =>
    Effect.forEach(
      listed,
      (entry) => {
        const seen = known.get(entry.id)
        const marked =
          seen !== undefined
            ? Effect.succeed(seen)
            : Effect.tap(wasSimulated(store, entry.id), (simulated) =>
                Effect.sync(() => known.set(entry.id, simulated))
              )
        return Effect.map(marked, (simulated) => (simulated ? { ...entry, simulated } : entry))
      },
      { concurrency: 8 }
    )
}

/** The banner that opens every simulated report. */
export const simulatedBanner =
  "> **Simulated run.** Every model answer, search result and source below was produced offline by the\n" +
  "> deep-research emulator, not by a real model or the web.\n\n"

/** Whether a report was written by a simulated run. */
export const isSimulatedReport = (markdown: string): boolean => markdown.startsWith(simulatedBanner)

/** The report with the simulated banner on top (once). */
export const markSimulated = (markdown: string): string =>
  isSimulatedReport(markdown) ? markdown : `${simulatedBanner}${markdown}`
