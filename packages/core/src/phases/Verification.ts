/**
 * Verification: after the report is written, each sentence that cites is checked against the stored text of the
 * sources it cites, by the `summarization` role in batches (`ClaimVerification`). A citation whose source does not back
 * its sentence is removed; a sentence left with no backing keeps its words and is marked as unsupported, in the
 * report's language (a mark costs no call and says plainly what the check found, where a rewrite would be one more
 * unchecked sentence). The citations are renumbered, the source list rebuilt, and the report ends with a line saying
 * how many cited sentences were checked and changed. Its calls draw on what the report left of the budget; a check the
 * budget cannot pay for leaves its sentences as written, and the closing line says so.
 */
import * as Effect from "effect/Effect"
import * as Budget from "../Budget.js"
import * as Citations from "../Citations.js"
import * as ClaimVerification from "../ClaimVerification.js"
import * as Language from "../internal/text/language.js"
import * as Notices from "../internal/text/verificationNotices.js"
import * as ModelRouter from "../ModelRouter.js"
import { Citation, CitedSupport, Report, SentenceVerdict, type SupportLabel, Verification } from "../Research.js"
import type { Source } from "../Source.js"
import type * as Task from "../Task.js"
import { SessionStore } from "../SessionStore.js"
import * as Checkpoint from "./Checkpoint.js"
import * as StreamingVerification from "./StreamingVerification.js"

/** What verification works from. */
export interface Input {
  readonly report: Report
  readonly sources: ReadonlyArray<Source>
  /** Checks made while the report was written (`StreamingVerification`); the others are made here. */
  readonly early?: StreamingVerification.Early | undefined
}

/** The checked report and the verdicts. */
export interface Outcome {
  readonly report: Report
  readonly verification: Verification
}

/** Claims checked per call and calls at once. */
export const batchSize = 8
export const concurrency = 4

const backs = (label: SupportLabel): boolean => label === "supported" || label === "partially_supported"

// =============================================================================
// Editing the report
// =============================================================================

/** What the check changes in one sentence. */
interface Edit {
  readonly checked: ClaimVerification.Checked
  readonly removed: ReadonlyArray<number>
  readonly marked: boolean
}

const editOf = (checked: ClaimVerification.Checked): Edit => {
  if (checked.status !== "checked") return { checked, removed: [], marked: false }
  const removed = checked.citations.filter((c) => !backs(c.label)).map((c) => c.number)
  return { checked, removed, marked: removed.length > 0 && removed.length === checked.claim.citations.length }
}

/** The body with each edit made in its sentence, found in its line after the sentences before it. */
export const applyEdits = (body: string, edits: ReadonlyArray<Edit>, mark: string): string => {
  const lines = body.split("\n")
  const cursor = new Map<number, number>()
  for (const edit of edits) {
    const index = edit.checked.claim.line - 1
    const line = lines[index]
    if (line === undefined) continue
    const sentence = edit.checked.claim.text
    const at = line.indexOf(sentence, cursor.get(index) ?? 0)
    if (at < 0) continue
    const removed = new Set(edit.removed)
    const cut =
      removed.size === 0 ? sentence : Citations.remap(sentence, (n) => (removed.has(n) ? undefined : n)).markdown
    const written = edit.marked ? `${cut} ${mark}` : cut
    lines[index] = line.slice(0, at) + written + line.slice(at + sentence.length)
    cursor.set(index, at + written.length)
  }
  return lines.join("\n")
}

/** The report's body: its markdown without the source list synthesis appended (found as written, or by heading). */
const bodyOf = (report: Report, heading: string): string => {
  const list = Citations.sourceList(report.citations, heading)
  const at = list === "" ? -1 : report.markdown.lastIndexOf(list)
  return (at >= 0 ? report.markdown.slice(0, at) : Citations.stripSourceList(report.markdown)).trimEnd()
}

/** The body renumbered after citations were removed, with its source list rebuilt. */
const renumbered = (body: string, citations: ReadonlyArray<Citation>, heading: string) => {
  const result = Citations.renumber(body, (n) => n >= 1 && n <= citations.length)
  const kept = result.order.flatMap((old, i) => {
    const citation = citations[old - 1]
    return citation === undefined ? [] : [new Citation({ ...citation, number: i + 1 })]
  })
  return { body: result.markdown, citations: kept, list: Citations.sourceList(kept, heading) }
}

const verdictOf = (edit: Edit): SentenceVerdict =>
  new SentenceVerdict({
    sentence: edit.checked.claim.text,
    status: edit.checked.status,
    ...(edit.checked.label === undefined ? {} : { label: edit.checked.label }),
    citations: edit.checked.citations.map((c) => new CitedSupport(c)),
    removed: edit.removed,
    marked: edit.marked,
    explanation: edit.checked.explanation
  })

/** The verification record of a set of edits. */
const recordOf = (edits: ReadonlyArray<Edit>): Verification => {
  const count = (status: ClaimVerification.Checked["status"]) => edits.filter((e) => e.checked.status === status).length
  const unchecked = count("unchecked")
  const failed = count("failed")
  return new Verification({
    sentences: edits.length,
    checked: count("checked"),
    changed: edits.filter((e) => e.removed.length > 0 || e.marked).length,
    removedCitations: edits.reduce((n, e) => n + e.removed.length, 0),
    marked: edits.filter((e) => e.marked).length,
    ...(unchecked > 0 ? { incomplete: "budget" as const } : failed > 0 ? { incomplete: "failed" as const } : {}),
    verdicts: edits.map(verdictOf)
  })
}

// =============================================================================
// The phase
// =============================================================================

/** Checks the report's cited sentences and returns the report as the check leaves it. */
export const run = Effect.fn("Verification.run")(function* (task: Task.Task, input: Input) {
  const language = task.language
  const heading = Language.sourcesHeading(language)
  const body = bodyOf(input.report, heading)
  const claims = ClaimVerification.claimsOf(body)
  if (claims.length === 0) {
    return { report: input.report, verification: recordOf([]) } satisfies Outcome
  }
  const byId = new Map(input.sources.map((source) => [source.id, source] as const))
  const resolve = (number: number) => {
    const citation = input.report.citations[number - 1]
    return citation === undefined ? undefined : byId.get(citation.sourceId)
  }
  const model = yield* ModelRouter.forRole("summarization")
  const budget = yield* Budget.current
  // The check is part of the report: it draws on what the report left of the whole budget, not on research's share.
  const checked = yield* StreamingVerification.checkRest(
    input.early ?? StreamingVerification.none,
    claims,
    (number) => input.report.citations[number - 1]?.sourceId,
    (rest) => ClaimVerification.check(model, rest, resolve, { batchSize, concurrency })
  ).pipe(Effect.provideService(Budget.Budget, Budget.drawingOn("report")(budget)))
  const edits = checked.map(editOf)
  const verification = recordOf(edits)
  if (verification.incomplete === "budget") {
    yield* Effect.logWarning(
      `the budget could not pay for checking ${verification.sentences - verification.checked} cited sentences; ` +
        "they stand as written"
    )
  }
  const next = renumbered(
    applyEdits(body, edits, Notices.unsupportedMark(language.code)),
    input.report.citations,
    heading
  )
  const line = Notices.checkLine(language.code, verification)
  const markdown = `${[next.body, next.list, line].filter((part) => part !== "").join("\n\n")}\n`
  // Strings and citations made as such: not validated again.
  const report = new Report({ ...input.report, markdown, citations: next.citations }, true)
  return { report, verification } satisfies Outcome
})

/**
 * Checks the cited sentences of a text that is not a report (a follow-up answer) as a report's are checked: a citation
 * its source does not back is removed, a sentence left with no backing is marked, and a closing line says what the
 * check found. The citation numbers are kept (they are the session's); `resolve` gives the source of each.
 */
export const checkText = Effect.fn("Verification.checkText")(function* (
  markdown: string,
  resolve: (number: number) => Source | undefined,
  languageCode: string
) {
  const claims = ClaimVerification.claimsOf(markdown)
  if (claims.length === 0) return { markdown, verification: recordOf([]) }
  const model = yield* ModelRouter.forRole("summarization")
  const checked = yield* ClaimVerification.check(model, claims, resolve, { batchSize, concurrency })
  const edits = checked.map(editOf)
  const verification = recordOf(edits)
  const body = applyEdits(markdown, edits, Notices.unsupportedMark(languageCode)).trimEnd()
  return { markdown: `${body}\n\n${Notices.checkLine(languageCode, verification)}\n`, verification }
})

/**
 * Runs the phase on the session's report, when it has one: the checked report is saved to the report file first,
 * then checkpointed with the verdicts, the completion mark and, when `completes` says the report completes the run,
 * the status `completed`.
 */
export const inSession = (
  session: Checkpoint.Handle,
  task: Task.Task,
  completes: (report: Report) => boolean,
  early?: StreamingVerification.Early
) =>
  Effect.gen(function* () {
    const current = yield* session.get
    const report = current.report
    if (report === undefined) return
    const store = yield* SessionStore
    yield* session.phase(
      "verification",
      Effect.tap(run(task, { report, sources: current.sources, early }), (outcome) =>
        store.saveReport(current.id, outcome.report.markdown)
      ),
      (outcome, s) =>
        Checkpoint.patch(s, {
          report: outcome.report,
          verification: outcome.verification,
          status: completes(outcome.report) ? "completed" : s.status
        })
    )
  })
