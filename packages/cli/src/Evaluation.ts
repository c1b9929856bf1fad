/**
 * `deep-research evaluate <id>`: judges a session's report on the eight dimensions, checks its citations, and keeps
 * the result beside the session as `evaluation.json`.
 */
import type { Errors, ModelRouter, Session } from "@deep-research/core"
import { CitationCheck, Judge } from "@deep-research/evaluation"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import type { PlatformError } from "@effect/platform/Error"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

/** What `evaluate` produces and stores. */
export class SessionEvaluation extends Schema.Class<SessionEvaluation>("@deep-research/cli/SessionEvaluation")({
  sessionId: Schema.String,
  evaluatedAt: Schema.Number,
  judgement: Judge.Judgement,
  citations: CitationCheck.CitationReport
}) {}

/** Judges and checks a session. */
export const evaluate = (
  session: Session.Session
): Effect.Effect<SessionEvaluation, Errors.ResearchError, ModelRouter.ModelRouter> =>
  Effect.gen(function* () {
    const judgement = yield* Judge.judgeSession(session)
    const citations = CitationCheck.checkSession(session)
    const evaluatedAt = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
    return new SessionEvaluation({ sessionId: session.id, evaluatedAt, judgement, citations })
  })

/** Writes the evaluation beside the session. */
export const store = (
  sessionsDirectory: string,
  evaluation: SessionEvaluation
): Effect.Effect<string, PlatformError, FileSystem.FileSystem | Path.Path> =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const file = path.join(sessionsDirectory, evaluation.sessionId, "evaluation.json")
    const json = JSON.stringify(Schema.encodeSync(SessionEvaluation)(evaluation), null, 2)
    yield* fs.writeFileString(`${file}.tmp`, json)
    yield* fs.rename(`${file}.tmp`, file)
    return file
  })

/** The evaluation as lines for a terminal. */
export const format = (evaluation: SessionEvaluation): ReadonlyArray<string> => {
  const j = evaluation.judgement
  const c = evaluation.citations
  const findings = [
    ...c.danglingCitations.map((f) => ["citation pointing nowhere", f] as const),
    ...c.uncitedSources.map((f) => ["source never cited", f] as const),
    ...c.duplicateSources.map((f) => ["duplicate source", f] as const),
    ...c.unretrievedSources.map((f) => ["source never retrieved", f] as const),
    ...c.unsupportedQuotes.map((f) => ["quote not in its source", f] as const)
  ]
  return [
    `Evaluation of ${evaluation.sessionId} (judge: ${j.model})`,
    `Composite: ${(j.composite * 100).toFixed(1)} / 100`,
    ...j.scores.map(
      (s) =>
        `  ${s.dimension.padEnd(18)} ${s.score}/5${s.imputed ? "  (missing from the judge's answer: counted as 3)" : ""}${s.adjusted ? `  (judge said ${s.rawScore}: adjusted)` : ""}`
    ),
    ...j.warnings.map((w) => `  ! ${w}`),
    `Citations: ${c.inlineCitations} inline, ${c.citedSources} of ${c.listedSources} listed sources cited; ${c.issueCount} issues`,
    `  pointing nowhere ${c.counts.danglingCitations}, never cited ${c.counts.uncitedSources}, duplicates ${c.counts.duplicateSources}, never retrieved ${c.counts.unretrievedSources}, quotes not found ${c.counts.unsupportedQuotes} of ${c.quotesChecked}`,
    ...findings.slice(0, 30).map(([kind, f]) => `  line ${f.line}: ${kind}: ${f.detail} | ${f.text.slice(0, 100)}`)
  ]
}
