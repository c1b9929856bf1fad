/**
 * A session's whole evaluation in one value: the judge's scores, the citation checks and, optionally, claim
 * verification. The CLI's `evaluate` command runs it, prints it with `format` and stores it with the session.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { Errors, type Session } from "@deep-research/core"
import * as CitationCheck from "./CitationCheck.js"
import * as ClaimVerification from "./ClaimVerification.js"
import * as Judge from "./Judge.js"

/** The evaluation of one session's report. */
export class Evaluation extends Schema.Class<Evaluation>("@deep-research/evaluation/Evaluation")({
  sessionId: Schema.String,
  evaluatedAt: Schema.Number,
  judgement: Judge.Judgement,
  citations: CitationCheck.CitationReport,
  claims: Schema.optional(ClaimVerification.Result)
}) {}

/** What to run. */
export interface Options {
  readonly judge?: Judge.Options | undefined
  readonly citations?: CitationCheck.Options | undefined
  /** Verify a sample of claims against their sources (model calls: at most `maxClaims`); off by default. */
  readonly claims?: ClaimVerification.Options | boolean | undefined
}

/** Evaluates a completed session's report; a session without a report is `ResearchInvalidInput`. */
export const evaluateSession = Effect.fn("Evaluation.evaluateSession")(function* (
  session: Session.Session,
  options?: Options
) {
  if (session.report === undefined) {
    return yield* new Errors.ResearchInvalidInput({
      reason: `session ${session.id} has no report to evaluate (status ${session.status})`
    })
  }
  const citations = CitationCheck.checkSession(session, options?.citations)
  const judgement = yield* Judge.judgeSession(session, options?.judge)
  const claimOptions = options?.claims === true ? {} : options?.claims === false ? undefined : options?.claims
  const claims = claimOptions === undefined ? undefined : yield* ClaimVerification.verifySession(session, claimOptions)
  return new Evaluation({
    sessionId: session.id,
    evaluatedAt: yield* Clock.currentTimeMillis,
    judgement,
    citations,
    ...(claims === undefined ? {} : { claims })
  })
})

// =============================================================================
// Text
// =============================================================================

const percent = (value: number): string => `${(value * 100).toFixed(0)}%`

/** The evaluation as plain text for a terminal: scores, warnings, check counts and the offending lines. */
export const format = (evaluation: Evaluation, options?: { readonly maxLines?: number | undefined }): string => {
  const maxLines = options?.maxLines ?? 10
  const j = evaluation.judgement
  const width = Math.max(...Judge.dimensions.map((d) => d.length))
  const out: Array<string> = [
    `Evaluation of ${evaluation.sessionId}`,
    `Composite ${j.composite.toFixed(3)} (${percent(j.composite)}), judged by ${j.model} in ${j.attempts} ${j.attempts === 1 ? "call" : "calls"}`,
    ...j.scores.map((s) => {
      const weight = j.weights[s.dimension]
      const flag = s.imputed ? " [missing: 3 stands in]" : s.adjusted ? ` [adjusted from ${s.rawScore}]` : ""
      const rationale = s.rationale === "" ? "" : `  ${s.rationale.replace(/\s+/g, " ").slice(0, 160)}`
      return `  ${s.dimension.padEnd(width)}  ${s.score}/5  weight ${Number(weight.toFixed(3))}${flag}${rationale}`
    })
  ]
  if (j.warnings.length > 0) out.push("Warnings:", ...j.warnings.map((w) => `  - ${w}`))
  const c = evaluation.citations
  out.push(
    "",
    `Citations: ${c.inlineCitations} inline, ${c.citedSources} sources cited of ${c.listedSources} listed, ` +
      `${c.retrievedSources} retrieved, ${c.quotesChecked} quoted passages ("...") checked word for word in their sources ` +
      "(the report's own citation check reads every cited sentence; this one only reads quotations)",
    `  dangling ${c.counts.danglingCitations}, uncited ${c.counts.uncitedSources}, duplicate ${c.counts.duplicateSources}, ` +
      `never retrieved ${c.counts.unretrievedSources}, unsupported quotes ${c.counts.unsupportedQuotes}`
  )
  const findings: ReadonlyArray<readonly [string, ReadonlyArray<CitationCheck.Finding>]> = [
    ["dangling", c.danglingCitations],
    ["uncited", c.uncitedSources],
    ["duplicate", c.duplicateSources],
    ["never retrieved", c.unretrievedSources],
    ["unsupported quote", c.unsupportedQuotes]
  ]
  for (const [kind, list] of findings) {
    for (const finding of list.slice(0, maxLines)) out.push(`  line ${finding.line} (${kind}): ${finding.detail}`)
    if (list.length > maxLines) out.push(`  ... ${list.length - maxLines} more ${kind}`)
  }
  const claims = evaluation.claims
  if (claims !== undefined) {
    out.push(
      "",
      `Claims: fidelity ${claims.fidelity === undefined ? "n/a" : claims.fidelity.toFixed(3)} over ${claims.checked} checked ` +
        `(${claims.sampled} sampled of ${claims.totalClaims}, seed ${claims.seed}): ${claims.supported} supported, ` +
        `${claims.partiallySupported} partially, ${claims.unsupported} unsupported, ${claims.contradicted} contradicted, ` +
        `${claims.unverifiable} unverifiable, ${claims.failed} failed`
    )
    for (const verdict of claims.verdicts.filter((v) => v.label === "contradicted" || v.label === "unsupported")) {
      out.push(`  line ${verdict.line} (${verdict.label}): ${verdict.claim.slice(0, 160)}`)
    }
  }
  return out.join("\n")
}
