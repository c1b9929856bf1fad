/**
 * What the terminal shows of a session's life after its report: a follow-up answer with its sources, the thread of
 * answers, the report's versions and what the newest changed (sections and sources added).
 */
import type * as Research from "@deep-research/core/Research"
import type * as Session from "@deep-research/core/Session"
import * as Continuation from "@deep-research/core/Continuation"
import { printable } from "./printable.js"

/** One answer, as `ask` prints it: the answer, its sources under the session's numbers, where it stands. */
export const answerText = (sessionId: string, answer: Research.FollowUpAnswer): string => {
  const sources = answer.citations.map((c) => `[${c.number}] ${c.title} ${c.url}`)
  const offer =
    answer.covered || answer.suggestedDirection === undefined
      ? []
      : ["", `Go deeper with: deep-research continue ${sessionId} ${JSON.stringify(answer.suggestedDirection)}`]
  return printable(
    [answer.markdown.trimEnd(), ...(sources.length > 0 ? ["", "Sources:", ...sources] : []), ...offer].join("\n")
  )
}

/** The thread of follow-up answers, in the order asked. */
export const threadText = (session: Session.Session): string =>
  session.answers.length === 0
    ? ""
    : printable(
        [
          `Follow-up questions (${session.answers.length}):`,
          ...session.answers.flatMap((answer, i) => [
            "",
            `Q${i + 1}: ${answer.question}`,
            answer.markdown.trimEnd(),
            ...answer.citations.map((c) => `  [${c.number}] ${c.title} ${c.url}`)
          ])
        ].join("\n")
      )

/** What the newest continuation changed in the report, when the session has earlier versions. */
export const changesText = (session: Session.Session): string => {
  const previous = session.reportVersions.at(-1)
  if (previous === undefined || session.report === undefined) return ""
  const changes = Continuation.changes(previous.report, session.report)
  const direction = session.continuations.at(-1)?.direction ?? ""
  const list = (items: ReadonlyArray<string>) => (items.length === 0 ? "none" : items.join("; "))
  return printable(
    [
      `Report version ${session.reportVersions.length + 1} (after: ${direction}); ` +
        `earlier versions: ${session.reportVersions.map((v) => v.version).join(", ")} (show --report-version N)`,
      `Sections added: ${list(changes.sectionsAdded)}`,
      `Sources added: ${list(changes.sourcesAdded.map((s) => `${s.title} ${s.url}`))}`,
      ...(changes.sectionsRemoved.length > 0 ? [`Sections no longer there: ${list(changes.sectionsRemoved)}`] : [])
    ].join("\n")
  )
}

/** The report of `version` (1 the first; the newest is the session's report), or undefined when there is none. */
export const reportOf = (session: Session.Session, version: number): Research.Report | undefined =>
  version === session.reportVersions.length + 1
    ? session.report
    : session.reportVersions.find((v) => v.version === version)?.report
