/**
 * Where a run's report goes and the lines that end a research run in the terminal, the same whether it ran here or on
 * the cluster's runners.
 */
import type { Session } from "@deep-research/core"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { type Credentials, withoutSecrets } from "../config/credentials.js"

/**
 * The report's file: `--out` as given, or inside it when it names a folder (that exists, or ends with a separator),
 * else `./deep-research-<id>.md`; absolute.
 */
export const reportFile = (out: string | undefined, sessionId: string): string => {
  const name = `deep-research-${sessionId}.md`
  if (out === undefined) return nodePath.resolve(name)
  const folder = out.endsWith("/") || out.endsWith(nodePath.sep) || isFolder(out)
  return nodePath.resolve(folder ? nodePath.join(out, name) : out)
}

/** Whether a path is a folder now; a path that cannot be looked at is not (writing there says why). */
const isFolder = (path: string): boolean => {
  try {
    return fs.statSync(path, { throwIfNoEntry: false })?.isDirectory() === true
  } catch {
    return false
  }
}

/**
 * Writes the report to its file, making the folders it needs (`--out reports/` names one not made yet); the reason it
 * could not be written, if it could not; without the credentials' secrets. The research has succeeded by then: a caller
 * says where else the report is.
 */
export const writeReport = (
  out: string,
  markdown: string,
  credentials: Credentials
): Effect.Effect<Option.Option<string>, never, FileSystem.FileSystem> =>
  Effect.flatMap(FileSystem.FileSystem, (files) =>
    files.makeDirectory(nodePath.dirname(out), { recursive: true }).pipe(
      // No secret in the file, whatever a model or a page put in the report.
      Effect.zipRight(files.writeFileString(out, withoutSecrets(credentials, markdown))),
      Effect.match({ onFailure: (error) => Option.some(error.message), onSuccess: () => Option.none() })
    )
  )

/** The warning for a report that could not be written to its file, naming where it is kept instead. */
export const unwrittenReport = (out: string, reason: string, kept: string): string =>
  `warning: the report could not be written to ${out} (${reason}). The research completed: its report is kept ` +
  `${kept}.`

/** The warning under a report that rests on no source: why, and what that means. */
export const ungroundedWarning = (reason: string | undefined): string =>
  `Warning: no source was found or read${reason === undefined ? "" : ` (${reason.replaceAll("_", " ")})`}; the ` +
  "report rests on the model's own knowledge, not on research (--require-sources makes this a failure)"

/** Where the report went, which session it is and where that is kept, what the run found and cost, and a warning when it rests on no source. */
export const reportSummary = (
  session: Session.Session,
  options: { readonly out: string; readonly kept: string; readonly simulate: boolean }
): string => {
  const cost = session.usage.reduce((n, r) => n + r.costUsd, 0)
  const tokens = session.usage.reduce((n, r) => n + r.inputTokens + r.outputTokens, 0)
  const grounding = session.report?.grounding
  return [
    `${options.simulate ? "[simulated] " : ""}Report: ${options.out}`,
    `Session: ${session.id} (${options.kept})`,
    `Sources: ${session.sources.length}, citations: ${session.report?.citations.length ?? 0}, tokens: ${tokens}, ` +
      `cost: $${cost.toFixed(4)}${options.simulate ? " (simulated: no real model or web was used)" : ""}`,
    ...(grounding !== undefined && grounding.sources === 0 ? [ungroundedWarning(grounding.reason)] : [])
  ].join("\n")
}
