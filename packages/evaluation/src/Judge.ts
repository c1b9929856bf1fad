/**
 * Judging a report through the `evaluation` role: eight dimensions scored 1-5 against a five-level rubric each,
 * normalised to 0-1 and combined as a weighted mean. Scores out of range are clamped and a dimension the judge left
 * out counts 3; both are flagged in the result, never hidden. The dimensions, their rubrics and the request the judge
 * reads are its prompt, in `prompts/judge.ts`.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import {
  ContextRecovery,
  Errors,
  ModelRouter,
  StructuredOutput,
  Usage,
  type Session,
  Tokens,
  type Source
} from "@deep-research/core"
import { answerTokens, type Caps, Dimension, dimensions, type Input, request } from "./prompts/judge.js"
import { counting, promptBudgetChars } from "./internal/spend.js"

// The dimensions, their rubrics and the judge's request live with the other prompts; public here as they were.
export { Dimension, dimensions, request }
export type { Input }
export { rubrics } from "./prompts/judge.js"
export type { EvidenceSource, Rubric } from "./prompts/judge.js"

// =============================================================================
// Results
// =============================================================================

/** One dimension's score. */
export class DimensionScore extends Schema.Class<DimensionScore>("@deep-research/evaluation/Judge/DimensionScore")({
  dimension: Dimension,
  /** The score used, 1-5. */
  score: Schema.Int.pipe(Schema.between(1, 5)),
  /** (score - 1) / 4. */
  normalized: Schema.Number,
  rationale: Schema.String,
  /** The judge gave no score for this dimension; 3 stands in. */
  imputed: Schema.Boolean,
  /** The judge's score was out of range (or not whole) and was clamped or rounded. */
  adjusted: Schema.Boolean,
  /** The judge's own number, when it was adjusted. */
  rawScore: Schema.optional(Schema.Number)
}) {}

/** The judgement of one report. */
export class Judgement extends Schema.Class<Judgement>("@deep-research/evaluation/Judge/Judgement")({
  scores: Schema.Array(DimensionScore),
  /** Weighted mean of the normalised scores, 0-1. */
  composite: Schema.Number,
  /** The weights used, summing to 1. */
  weights: Schema.Record({ key: Dimension, value: Schema.Number }),
  imputedCount: Schema.Int,
  adjustedCount: Schema.Int,
  /** Every imputation and adjustment, in words. */
  warnings: Schema.Array(Schema.String),
  model: Schema.String,
  /** Model calls it took (more than one when the answer had to be asked again); `usage` covers them all. */
  attempts: Schema.Int,
  usage: Usage.Usage,
  judgedAt: Schema.Number
}) {
  /** The score of one dimension. */
  score(dimension: Dimension): DimensionScore | undefined {
    return this.scores.find((s) => s.dimension === dimension)
  }
}

// =============================================================================
// Weights
// =============================================================================

/** Weights per dimension; dimensions left out weigh 1 before normalisation (give 0 to leave one out). */
export type Weights = Partial<Readonly<Record<Dimension, number>>>

/**
 * Validates weights and scales them to sum to 1. Unknown dimensions, negative or non-finite weights, and weights
 * that sum to 0 are `ResearchInvalidInput`.
 */
export const normalizeWeights = (
  weights?: Readonly<Record<string, number>> | undefined
): Effect.Effect<Readonly<Record<Dimension, number>>, Errors.ResearchInvalidInput> =>
  Effect.gen(function* () {
    const given = weights ?? {}
    const unknown = Object.keys(given).filter((key) => !Schema.is(Dimension)(key))
    if (unknown.length > 0) {
      return yield* new Errors.ResearchInvalidInput({
        reason: `unknown evaluation dimension(s) ${unknown.join(", ")}; known: ${dimensions.join(", ")}`
      })
    }
    const raw = dimensions.map((dimension) => [dimension, given[dimension] ?? 1] as const)
    const bad = raw.filter(([, weight]) => !Number.isFinite(weight) || weight < 0)
    if (bad.length > 0) {
      return yield* new Errors.ResearchInvalidInput({
        reason: `weights must be finite and not negative: ${bad.map(([d, w]) => `${d}=${w}`).join(", ")}`
      })
    }
    const total = raw.reduce((sum, [, weight]) => sum + weight, 0)
    if (total <= 0) return yield* new Errors.ResearchInvalidInput({ reason: "the weights sum to 0" })
    const normalized: Record<Dimension, number> = {
      depth: 0,
      source_quality: 0,
      analytical_rigor: 0,
      completeness: 0,
      groundedness: 0,
      structure: 0,
      practical_value: 0,
      balance: 0
    }
    for (const [dimension, weight] of raw) normalized[dimension] = weight / total
    return normalized
  })

/** (score - 1) / 4: 1 is 0, 3 is 0.5, 5 is 1. */
export const normalizeScore = (score: number): number => (score - 1) / 4

/** The weighted mean of normalised scores; the weights are expected to sum to 1. */
export const composite = (
  scores: ReadonlyArray<{ readonly dimension: Dimension; readonly normalized: number }>,
  weights: Readonly<Record<Dimension, number>>
): number => {
  const total = scores.reduce((sum, s) => sum + weights[s.dimension], 0)
  return total === 0 ? 0 : scores.reduce((sum, s) => sum + weights[s.dimension] * s.normalized, 0) / total
}

// =============================================================================
// The judge's answer
// =============================================================================

const Score = Schema.Union(Schema.Finite, Schema.NumberFromString.pipe(Schema.finite()))

/** The shape the judge is shown for one dimension: an integer score from 1 to 5 and a rationale. */
const dimensionJsonSchema = {
  type: "object",
  required: ["score", "rationale"],
  properties: {
    score: { type: "integer", minimum: 1, maximum: 5 },
    rationale: { type: "string" }
  },
  additionalProperties: false
}

/** One dimension as the judge answers it. A bare number is accepted too. */
const DimensionAnswer = Schema.Union(
  Schema.Struct({
    score: Score,
    rationale: Schema.optionalWith(Schema.String, { default: () => "", nullable: true })
  }),
  Schema.transform(Score, Schema.Struct({ score: Schema.Number, rationale: Schema.String }), {
    strict: true,
    decode: (score) => ({ score, rationale: "" }),
    encode: (answer) => answer.score
  })
).annotations({
  // Models are shown the intended shape; the decoder is more lenient than that.
  jsonSchema: dimensionJsonSchema
})

/** What the judge must answer: a score and a rationale per dimension. */
export const Answer = Schema.Struct({
  scores: Schema.Struct({
    depth: Schema.optional(Schema.NullOr(DimensionAnswer)),
    source_quality: Schema.optional(Schema.NullOr(DimensionAnswer)),
    analytical_rigor: Schema.optional(Schema.NullOr(DimensionAnswer)),
    completeness: Schema.optional(Schema.NullOr(DimensionAnswer)),
    groundedness: Schema.optional(Schema.NullOr(DimensionAnswer)),
    structure: Schema.optional(Schema.NullOr(DimensionAnswer)),
    practical_value: Schema.optional(Schema.NullOr(DimensionAnswer)),
    balance: Schema.optional(Schema.NullOr(DimensionAnswer))
  }).pipe(
    // An answer that scores nothing is a failed answer, asked again, not eight imputed threes.
    Schema.filter((scores) => dimensions.some((d) => scores[d] !== undefined && scores[d] !== null), {
      message: () => `no dimension was scored; score each of ${dimensions.join(", ")}`,
      // The model is asked for every dimension: a schema with all of them optional would let an answer that
      // follows it to the letter score nothing, which the decoder refuses.
      jsonSchema: {
        type: "object",
        required: [...dimensions],
        properties: Object.fromEntries(dimensions.map((d) => [d, dimensionJsonSchema])),
        additionalProperties: false
      }
    })
  )
})
export type Answer = typeof Answer.Type

/** Turns the judge's answer into scores: clamps, rounds and imputes, with a warning for each. */
export const scoreAnswer = (
  answer: Answer
): { readonly scores: ReadonlyArray<DimensionScore>; readonly warnings: ReadonlyArray<string> } => {
  const warnings: Array<string> = []
  const scores = dimensions.map((dimension) => {
    const given = answer.scores[dimension]
    if (given === undefined || given === null) {
      warnings.push(`${dimension}: the judge gave no score; 3 stands in`)
      return new DimensionScore({
        dimension,
        score: 3,
        normalized: normalizeScore(3),
        rationale: "",
        imputed: true,
        adjusted: false
      })
    }
    const score = Math.min(5, Math.max(1, Math.round(given.score)))
    const adjusted = score !== given.score
    if (adjusted) warnings.push(`${dimension}: the judge's score ${given.score} was adjusted to ${score}`)
    return new DimensionScore({
      dimension,
      score,
      normalized: normalizeScore(score),
      rationale: given.rationale,
      imputed: false,
      adjusted,
      ...(adjusted ? { rawScore: given.score } : {})
    })
  })
  return { scores, warnings }
}

// =============================================================================
// Options
// =============================================================================

/** Options of a judgement. */
export interface Options extends Caps {
  readonly weights?: Weights | undefined
  /** Asks after an answer that does not decode; 3 by default. */
  readonly retries?: number | undefined
}

// =============================================================================
// Judging
// =============================================================================

/**
 * The caps scaled down, evidence first, so that the prompt fits in `budgetChars`; the question, the brief and the
 * instructions are never cut.
 */
const capsWithin = (input: Input, options: Options | undefined, budgetChars: number): Options => {
  const report = options?.maxReportChars ?? 80_000
  const evidence = options?.maxEvidenceChars ?? 30_000
  const fixed = request({ question: input.question, brief: input.brief, report: "" }, options)
  // The schema instructions added for models without native structured output take about 3,000 characters.
  const overhead = Tokens.estimateRequestTokens(fixed) * Tokens.charactersPerToken + 3_000
  const room = Math.max(0, budgetChars - overhead)
  if (report + evidence <= room) return { ...options, maxReportChars: report, maxEvidenceChars: evidence }
  const fittedEvidence = Math.min(evidence, Math.floor(room * 0.3))
  return {
    ...options,
    maxReportChars: Math.max(1_000, Math.min(report, room - fittedEvidence)),
    maxEvidenceChars: fittedEvidence
  }
}

/** Judges a report through the `evaluation` role. */
export const judge = Effect.fn("Judge.judge")(function* (input: Input, options?: Options) {
  const weights = yield* normalizeWeights(options?.weights)
  const model = yield* ModelRouter.forRole("evaluation")
  const spent = yield* Ref.make(Usage.empty)
  const counted = counting(model, spent)
  const full = capsWithin(input, options, promptBudgetChars(model, answerTokens))
  // A window smaller than the table says (or a denser tokenizer) still overflows: shrink and ask again.
  const generated = yield* ContextRecovery.recover({
    model: model.model,
    inputTokens: Tokens.estimateRequestTokens(request(input, full)),
    attempt: (targetTokens) =>
      StructuredOutput.generateObject(
        counted,
        Answer,
        request(input, targetTokens === undefined ? full : capsWithin(input, full, Tokens.charactersFor(targetTokens))),
        { name: "evaluation", retries: options?.retries ?? 3 }
      )
  })
  const { scores, warnings } = scoreAnswer(generated.value)
  if (warnings.length > 0) yield* Effect.logWarning("evaluation answer adjusted", warnings)
  return new Judgement({
    scores,
    composite: composite(scores, weights),
    weights,
    imputedCount: scores.filter((s) => s.imputed).length,
    adjustedCount: scores.filter((s) => s.adjusted).length,
    warnings,
    model: generated.completion.model,
    attempts: generated.attempts,
    usage: yield* Ref.get(spent),
    judgedAt: yield* Clock.currentTimeMillis
  })
})

/**
 * What the judge reads of a session: its question, brief, report, sources (those the report cites first, in citation
 * order, so that the source cap keeps them) and compressed findings.
 */
export const inputOf = (session: Session.Session): Input => ({
  question: session.query,
  brief: session.brief?.brief,
  report: session.report?.markdown ?? "",
  sources: citedFirst(session).map((source: Source.Source) => ({
    title: source.title,
    url: source.url,
    quality: source.quality,
    content: source.summary?.summary ?? source.content
  })),
  notes: session.rounds.flatMap((round) =>
    round.results.filter((result) => result.status === "completed").map((result) => result.findings)
  )
})

const citedFirst = (session: Session.Session): ReadonlyArray<Source.Source> => {
  const rank = new Map<string, number>()
  for (const citation of session.report?.citations ?? []) {
    if (!rank.has(citation.sourceId)) rank.set(citation.sourceId, citation.number)
  }
  const order = (source: Source.Source) => rank.get(source.id) ?? Number.MAX_SAFE_INTEGER
  // Array.prototype.sort is stable: uncited sources keep their retrieval order.
  return [...session.sources].sort((a, b) => order(a) - order(b))
}

/** Judges a session's report; a session without a report is `ResearchInvalidInput`. */
export const judgeSession = Effect.fn("Judge.judgeSession")(function* (session: Session.Session, options?: Options) {
  if (session.report === undefined) {
    return yield* new Errors.ResearchInvalidInput({ reason: `session ${session.id} has no report to evaluate` })
  }
  return yield* judge(inputOf(session), options)
})
