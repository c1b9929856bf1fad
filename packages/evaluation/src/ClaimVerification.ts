/**
 * Claim verification for `evaluate`: a deterministic sample of the report's cited sentences is checked against the
 * text of the sources they cite through the `evaluation` role, with core's claim check (`ClaimVerification` in core,
 * the code the pipeline's verification phase runs), each labelled supported, partially supported, unsupported or
 * contradicted, and summed up as a fidelity score. Calls are bounded by the sample size and run with a concurrency
 * limit; a claim whose check fails is recorded as such and left out of the score.
 */
import * as Effect from "effect/Effect"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import {
  ClaimVerification as Claims,
  ModelRouter,
  ReportText,
  Research,
  Usage,
  type Session,
  type Source
} from "@deep-research/core"
import { sample } from "./internal/random.js"
import { counting } from "./internal/spend.js"
import { urlKey } from "./internal/urls.js"

// =============================================================================
// Schemas
// =============================================================================

/** How far a source backs a claim. */
export const Label = Research.SupportLabel
export type Label = typeof Label.Type

/** The check of one claim: a label, or why it could not be checked. */
export class Verdict extends Schema.Class<Verdict>("@deep-research/evaluation/ClaimVerification/Verdict")({
  line: Schema.Int,
  claim: Schema.String,
  citations: Schema.Array(Schema.Int),
  /** `unverifiable`: no cited source has text in the session; `failed`: the model call failed. */
  status: Schema.Literal("checked", "unverifiable", "failed"),
  label: Schema.optional(Label),
  explanation: Schema.String
}) {}

/** The outcome of verifying a report's claims. */
export class Result extends Schema.Class<Result>("@deep-research/evaluation/ClaimVerification/Result")({
  /** Cited sentences in the report. */
  totalClaims: Schema.Int,
  /** Claims drawn for checking (at most `maxClaims`). */
  sampled: Schema.Int,
  seed: Schema.Int,
  /** Claims the model labelled. */
  checked: Schema.Int,
  supported: Schema.Int,
  partiallySupported: Schema.Int,
  unsupported: Schema.Int,
  contradicted: Schema.Int,
  unverifiable: Schema.Int,
  failed: Schema.Int,
  /** (supported + 0.5 partial - 0.5 contradicted) / checked, floored at 0; absent when nothing was checked. */
  fidelity: Schema.optional(Schema.Number),
  verdicts: Schema.Array(Verdict),
  usage: Usage.Usage
}) {}

/** What verification reads. */
export interface Input {
  readonly markdown: string
  readonly sources: ReadonlyArray<Source.Source>
  /** The report's structured source list; when given it maps citation numbers to sources before the markdown does. */
  readonly citations?: ReadonlyArray<Research.Citation> | undefined
}

/** Bounds of a verification. */
export interface Options {
  /** Claims checked at most; 20 by default. */
  readonly maxClaims?: number | undefined
  /** Checks running at once; 4 by default. */
  readonly concurrency?: number | undefined
  /** The sampling seed: the same seed draws the same claims; 1 by default. */
  readonly seed?: number | undefined
  /** Characters of cited source text shown per claim; 24,000 by default. */
  readonly maxSourceChars?: number | undefined
  /** Asks after an answer that does not decode; 1 by default. */
  readonly retries?: number | undefined
  /** Claims per model call; 1 by default (each claim judged on its own, as the score was defined). */
  readonly batchSize?: number | undefined
}

// =============================================================================
// Scoring
// =============================================================================

/** Label counts of checked claims. */
export interface LabelCounts {
  readonly supported: number
  readonly partiallySupported: number
  readonly unsupported: number
  readonly contradicted: number
}

/**
 * (supported + 0.5 partial - 0.5 contradicted) / checked, floored at 0 (as in the system this descends from);
 * `undefined` when nothing was checked.
 */
export const fidelity = (counts: LabelCounts): number | undefined => {
  const checked = counts.supported + counts.partiallySupported + counts.unsupported + counts.contradicted
  if (checked === 0) return undefined
  return Math.max(0, (counts.supported + 0.5 * counts.partiallySupported - 0.5 * counts.contradicted) / checked)
}

// =============================================================================
// Claims
// =============================================================================

/** A cited sentence of the report. */
export type Claim = Claims.Claim

/** Every sentence of the report's body that cites a source. */
export const claimsOf = Claims.claimsOf

/** A deterministic sample of at most `maxClaims` claims, in report order. */
export const sampleClaims = (claims: ReadonlyArray<Claim>, maxClaims: number, seed: number): ReadonlyArray<Claim> =>
  sample(claims, maxClaims, seed)

/** Maps citation numbers to retrieved sources: the structured citations first, else the markdown's source list. */
const resolver = (input: Input): ((number: number) => Source.Source | undefined) => {
  const byId = new Map(input.sources.map((source) => [source.id, source] as const))
  const byUrl = new Map(input.sources.map((source) => [urlKey(source.url), source] as const))
  const structured = new Map((input.citations ?? []).map((citation) => [citation.number, citation] as const))
  const listed = new Map(ReportText.parse(input.markdown).sources.map((entry) => [entry.number, entry] as const))
  return (number) => {
    const citation = structured.get(number)
    if (citation !== undefined) return byId.get(citation.sourceId) ?? byUrl.get(urlKey(citation.url))
    const url = listed.get(number)?.url
    return url === undefined ? undefined : byUrl.get(urlKey(url))
  }
}

// =============================================================================
// Verification
// =============================================================================

/** Verifies a sample of a report's cited claims through the `evaluation` role. */
export const verify = Effect.fn("ClaimVerification.verify")(function* (input: Input, options?: Options) {
  const maxClaims = Math.max(0, Math.floor(options?.maxClaims ?? 20))
  const seed = Math.trunc(options?.seed ?? 1)
  const maxSourceChars = options?.maxSourceChars ?? 24_000
  const claims = claimsOf(input.markdown)
  const drawn = sampleClaims(claims, maxClaims, seed)
  const resolve = resolver(input)
  const model = yield* ModelRouter.forRole("evaluation")
  const spent = yield* Ref.make(Usage.empty)
  const counted = counting(model, spent)

  const checked = yield* Claims.check(counted, drawn, resolve, {
    batchSize: options?.batchSize ?? 1,
    concurrency: options?.concurrency ?? 4,
    maxSourceChars,
    retries: options?.retries ?? 1
  })
  const verdicts = checked.map(
    ({ claim, explanation, label, status }) =>
      new Verdict({
        line: claim.line,
        claim: claim.text,
        citations: claim.citations,
        // A check the budget refused is one that failed, here: `evaluate` runs outside a run's budget.
        status: status === "unchecked" ? "failed" : status,
        ...(label === undefined ? {} : { label }),
        explanation
      })
  )

  const count = (label: Label) => verdicts.filter((v) => v.status === "checked" && v.label === label).length
  const counts: LabelCounts = {
    supported: count("supported"),
    partiallySupported: count("partially_supported"),
    unsupported: count("unsupported"),
    contradicted: count("contradicted")
  }
  const score = fidelity(counts)
  return new Result({
    totalClaims: claims.length,
    sampled: drawn.length,
    seed,
    checked: verdicts.filter((v) => v.status === "checked").length,
    ...counts,
    unverifiable: verdicts.filter((v) => v.status === "unverifiable").length,
    failed: verdicts.filter((v) => v.status === "failed").length,
    ...(score === undefined ? {} : { fidelity: score }),
    verdicts,
    usage: yield* Ref.get(spent)
  })
})

/** Verifies a session's report against the sources the session retrieved. */
export const verifySession = (session: Session.Session, options?: Options) =>
  verify(
    {
      markdown: session.report?.markdown ?? "",
      sources: session.sources,
      citations: session.report?.citations
    },
    options
  )
