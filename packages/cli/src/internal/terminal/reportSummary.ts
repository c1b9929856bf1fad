/**
 * Where a run's report goes and the lines that end a research run in the terminal, the same whether it ran here or on
 * the cluster's runners.
 */
import { Budget, type Session } from "@deep-research/core"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { type Credentials, withoutSecrets } from "../config/credentials.js"

/**
 * The report's file: `--out` as given, or inside it when it names a folder (one that exists, one that ends with a
 * separator, or a new path whose last part has no extension: `--out reports/2026` is a folder, `--out notes.md` a
 * file), else `./deep-research-<id>.md`; absolute.
 */
export const reportFile = (out: string | undefined, sessionId: string): string => {
  const name = `deep-research-${sessionId}.md`
  if (out === undefined) return nodePath.resolve(name)
  const folder =
    out.endsWith("/") ||
    out.endsWith(nodePath.sep) ||
    isFolder(out) ||
    (!fs.existsSync(out) && nodePath.extname(out) === "")
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

/**
 * What the budget did to a run it stopped, in numbers: the budget, what was spent before research could go on, what
 * is kept for the report, and what to give instead. Undefined when the budget stopped nothing.
 */
export const budgetStory = (session: Session.Session): string | undefined => {
  const budget = session.config.budget
  const stopped =
    session.supervisionStopReason === "budget" ||
    session.report?.grounding?.reason === "budget" ||
    session.rounds.some((round) => round.results.some((result) => result.stopReason === "run_budget"))
  if (!stopped || budget.maxTokens === undefined) return undefined
  const spent = session.usage.reduce((n, r) => n + r.inputTokens + r.outputTokens, 0)
  const reserve = Budget.reportReserveTokens(budget.maxTokens, budget.synthesisReserve)
  const research = budget.maxTokens - reserve
  const smallest = Budget.smallestResearchBudget(session.config)
  return (
    `The budget of ${budget.maxTokens} tokens stopped research: ${research} were for research and ${reserve} kept ` +
    `for the report; ${spent} were spent in all. Each model call reserves its whole input and output limit before it ` +
    `is sent (a researcher's turn, a few thousand tokens), so a budget under about ${smallest} tokens researches ` +
    `nothing: give --budget-tokens ${Math.max(smallest, 2 * budget.maxTokens)} or more.`
  )
}

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
    ...(grounding !== undefined && grounding.sources === 0 ? [ungroundedWarning(grounding.reason)] : []),
    ...[budgetStory(session)].filter((line) => line !== undefined)
  ].join("\n")
}
