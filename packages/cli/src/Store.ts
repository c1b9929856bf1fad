/**
 * The session store as the CLI opens it: the sessions folder under the store folder, the file store keeping the
 * environment's API keys out of every file, and the banner of simulated reports. Apart from `Wiring` so that the
 * commands that only read or delete sessions load no provider's SDK.
 */
import { type SessionStore } from "@deep-research/core"
import * as FileSessionStore from "@deep-research/providers/FileSessionStore"
import type * as Layer from "effect/Layer"
import type * as Redacted from "effect/Redacted"
import * as nodePath from "node:path"
import type * as CliConfig from "./CliConfig.js"

/** The sessions folder under a store folder. */
export const sessionsDirectory = (resolved: Pick<CliConfig.Resolved, "storeDir">): string =>
  nodePath.join(resolved.storeDir, "sessions")

const secretsOf = (credentials: CliConfig.Credentials): ReadonlyArray<Redacted.Redacted<string>> =>
  [
    credentials.openaiApiKey,
    credentials.anthropicApiKey,
    credentials.tavilyApiKey,
    credentials.exaApiKey,
    credentials.perplexityApiKey,
    credentials.semanticScholarApiKey
  ].flatMap((key) => (key === undefined ? [] : [key]))

/** The file session store in a folder, keeping the environment's keys out of every file. */
export const storeLayer = (
  directory: string,
  credentials?: CliConfig.Credentials
): Layer.Layer<SessionStore.SessionStore> =>
  FileSessionStore.layerNode({ directory, secrets: credentials === undefined ? [] : secretsOf(credentials) })

/** The banner that opens every simulated report. */
export const simulatedBanner =
  "> **Simulated run.** Every model answer, search result and source below was produced offline by the\n" +
  "> deep-research emulator, not by a real model or the web.\n\n"

/** Whether a report was written by a simulated run. */
export const isSimulatedReport = (markdown: string): boolean => markdown.startsWith(simulatedBanner)

/** The report with the simulated banner on top (once). */
export const markSimulated = (markdown: string): string =>
  isSimulatedReport(markdown) ? markdown : `${simulatedBanner}${markdown}`
