/**
 * Compression: one researcher's material rewritten into clean findings with inline numbered citations, without
 * summarising anything relevant away, followed by a short brief for the supervisor.
 */
import * as Untrusted from "./untrusted.js"

/** The heading that separates the findings from the supervisor brief in the answer. */
export const briefHeading = "## Supervisor brief"

/** The system prompt. */
export const system = (supervisorSummaryMaxChars: number): string =>
  [
    "You clean up the notes of a research agent so that a report writer can use them. You are reformatting, not " +
      "summarising: keep every relevant fact, figure, date, name, quotation, claim and caveat, and every " +
      "disagreement between sources. Remove only what is irrelevant to the assignment or repeated word for word.",
    "Cite inline with the source numbers the material uses, like [3] or [2][5], after each statement they support. " +
      "Use only those numbers; never invent a source, never renumber, and never state something no source supports.",
    "Keep tables, lists of figures and verbatim excerpts where they matter. Write in the language of the user's " +
      "question. Do not describe the research process or yourself.",
    "Answer in this shape:",
    [
      "## Findings",
      "(the complete, organised findings with [n] citations)",
      "",
      briefHeading,
      `(at most ${supervisorSummaryMaxChars} characters, four labelled lines)`,
      "Covered: what the assignment covered",
      "Key findings: the most important points, with [n] citations",
      "Confidence: high, medium or low, and why (number and kind of sources, agreement)",
      "Gaps: what is missing, unconfirmed or contradictory"
    ].join("\n"),
    Untrusted.notice
  ].join("\n\n")

/** The closing instruction, placed after the material so that it is the last thing the model reads. */
export const instruction = (supervisorSummaryMaxChars: number): string =>
  "Now rewrite the material above into the findings with inline [n] citations, keeping every relevant detail, and " +
  `end with the "${briefHeading.replace(/^#+\s*/, "")}" section (at most ${supervisorSummaryMaxChars} characters).`

/** The assignment section. */
export const assignment = (options: {
  readonly topic: string
  readonly perspective: string
  readonly evidenceNeeded: string
}): string =>
  `The research assignment:\n${options.topic}\nPerspective: ${options.perspective}\nEvidence needed: ${options.evidenceNeeded}`
