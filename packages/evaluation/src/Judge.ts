/**
 * Judging a report through the `evaluation` role: eight dimensions scored 1-5 against a five-level rubric each,
 * normalised to 0-1 and combined as a weighted mean. Scores out of range are clamped and a dimension the judge left
 * out counts 3; both are flagged in the result, never hidden.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import {
  ContextRecovery,
  Errors,
  LanguageModel,
  ModelRouter,
  StructuredOutput,
  Usage,
  type Session,
  Tokens,
  type Source
} from "@deep-research/core"
import { cap, dataBlock, untrustedNotice } from "./prompts/untrusted.js"
import { counting, promptBudgetChars } from "./internal/spend.js"

// =============================================================================
// Dimensions and rubrics
// =============================================================================

/** The dimensions a report is judged on. */
export const Dimension = Schema.Literal(
  "depth",
  "source_quality",
  "analytical_rigor",
  "completeness",
  "groundedness",
  "structure",
  "practical_value",
  "balance"
)
export type Dimension = typeof Dimension.Type

/** Every dimension, in the order the prompt lists them. */
export const dimensions: ReadonlyArray<Dimension> = Dimension.literals

/** What a dimension measures and what each score from 1 to 5 means. */
export interface Rubric {
  readonly title: string
  readonly measures: string
  readonly levels: readonly [string, string, string, string, string]
}

/** The rubric of every dimension. */
export const rubrics: Readonly<Record<Dimension, Rubric>> = {
  depth: {
    title: "Research depth",
    measures: "How far the report goes beyond surface facts into mechanisms, specifics, figures and nuance.",
    levels: [
      "Surface-level: generic statements anyone could write without research; no specifics.",
      "Some specifics, but most points stop at the first layer; mechanisms and figures are rare.",
      "Adequate: the main points are explained with some specifics, figures or examples; little nuance.",
      "Thorough: most points are explained with mechanisms, concrete figures and examples; some nuance and caveats.",
      "Expert-level: every major point is developed in depth with precise data, causes, edge cases and nuance."
    ]
  },
  source_quality: {
    title: "Source quality",
    measures: "Credibility, diversity and recency of the sources the report rests on.",
    levels: [
      "No sources, or only unreliable ones (anonymous posts, content farms, marketing).",
      "Few sources, mostly secondary or of doubtful reliability; little diversity.",
      "A mix of reliable and weak sources; some primary sources; diversity or recency is limited.",
      "Mostly credible sources (official, academic, established outlets), several primary ones, reasonably current.",
      "Authoritative, primary and current sources throughout, diverse in origin and type, weak sources avoided."
    ]
  },
  analytical_rigor: {
    title: "Analytical rigor",
    measures: "The quality of reasoning: evidence used to support conclusions, comparisons, counter-arguments.",
    levels: [
      "No analysis: facts listed or claims asserted without reasoning; conclusions do not follow.",
      "Weak reasoning: conclusions loosely tied to evidence; obvious alternatives and confounders ignored.",
      "Sound but basic: conclusions follow from the evidence presented; limited comparison or counter-argument.",
      "Rigorous: evidence weighed, alternatives and counter-arguments considered, uncertainty stated.",
      "Exemplary: careful synthesis across sources, conflicts resolved or explained, conclusions calibrated to evidence."
    ]
  },
  completeness: {
    title: "Completeness",
    measures: "Coverage of every explicit and implicit part of the question and the research brief.",
    levels: [
      "Misses the question: most of what was asked is not addressed.",
      "Addresses part of the question; major requested aspects are missing.",
      "Covers the main request; some requested aspects or obvious implicit ones are missing or thin.",
      "Covers every explicit part of the question and most implicit ones; minor gaps only.",
      "Covers every explicit and implicit part of the question and the brief, with nothing important left out."
    ]
  },
  groundedness: {
    title: "Groundedness",
    measures: "Whether claims are backed by citations to the retrieved evidence and say what that evidence says.",
    levels: [
      "Claims are uncited, or citations contradict or have nothing to do with the evidence.",
      "Few claims are cited; many key claims have no support in the evidence.",
      "Key claims are mostly cited, but several go beyond or misstate what the evidence says.",
      "Nearly all substantive claims are cited and match the evidence; rare overreach.",
      "Every substantive claim is cited and faithful to the evidence; no unsupported or invented statements."
    ]
  },
  structure: {
    title: "Structure and readability",
    measures: "Organisation, flow, clarity, a summary up front, consistent citation style, fitting format.",
    levels: [
      "Disorganised or hard to read; no clear sections; the format does not fit the question.",
      "Some organisation but poor flow, repetition or inconsistent formatting and citations.",
      "Clear sections and readable prose; the format broadly fits; some repetition or awkward flow.",
      "Well organised with a summary, logical flow, consistent citations and a format suited to the question.",
      "Excellent: a crisp summary, a structure chosen for the question, smooth flow, consistent citations, no filler."
    ]
  },
  practical_value: {
    title: "Practical value",
    measures: "Whether the reader gets specific, actionable insight they can use for the decision behind the question.",
    levels: [
      "Nothing usable: vague or generic statements only.",
      "Little usable insight; recommendations, if any, are generic.",
      "Some useful, specific points or recommendations, but the reader must do much of the work.",
      "Specific, actionable insight and recommendations tied to the findings.",
      "Highly actionable: concrete, prioritised guidance with the trade-offs and conditions under which it holds."
    ]
  },
  balance: {
    title: "Balance and objectivity",
    measures: "Fair treatment of differing perspectives, stated limitations, no one-sided advocacy.",
    levels: [
      "One-sided or promotional; opposing views and limitations are absent.",
      "Mostly one perspective; other views mentioned only in passing; few limitations.",
      "Main perspectives present, though unevenly treated; some limitations acknowledged.",
      "Fair treatment of the relevant perspectives with their evidence; limitations and uncertainty stated.",
      "Even-handed throughout: perspectives weighed on their evidence, limitations and open questions made explicit."
    ]
  }
}

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
 * that sum to 0 are `InvalidInput`.
 */
export const normalizeWeights = (
  weights?: Readonly<Record<string, number>> | undefined
): Effect.Effect<Readonly<Record<Dimension, number>>, Errors.InvalidInput> =>
  Effect.gen(function* () {
    const given = weights ?? {}
    const unknown = Object.keys(given).filter((key) => !Schema.is(Dimension)(key))
    if (unknown.length > 0) {
      return yield* new Errors.InvalidInput({
        reason: `unknown evaluation dimension(s) ${unknown.join(", ")}; known: ${dimensions.join(", ")}`
      })
    }
    const raw = dimensions.map((dimension) => [dimension, given[dimension] ?? 1] as const)
    const bad = raw.filter(([, weight]) => !Number.isFinite(weight) || weight < 0)
    if (bad.length > 0) {
      return yield* new Errors.InvalidInput({
        reason: `weights must be finite and not negative: ${bad.map(([d, w]) => `${d}=${w}`).join(", ")}`
      })
    }
    const total = raw.reduce((sum, [, weight]) => sum + weight, 0)
    if (total <= 0) return yield* new Errors.InvalidInput({ reason: "the weights sum to 0" })
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
// Prompt
// =============================================================================

/** A source as the judge sees it. */
export interface EvidenceSource {
  readonly title: string
  readonly url: string
  readonly quality?: string | undefined
  readonly content?: string | undefined
}

/** What the judge reads. */
export interface Input {
  readonly question: string
  readonly brief?: string | undefined
  readonly report: string
  readonly sources?: ReadonlyArray<EvidenceSource> | undefined
  /** Research notes (compressed findings), the ground truth for groundedness. */
  readonly notes?: ReadonlyArray<string> | undefined
}

/** Options of a judgement. */
export interface Options {
  readonly weights?: Weights | undefined
  /** Characters of the report shown at most; 80,000 by default. */
  readonly maxReportChars?: number | undefined
  /** Characters of sources and notes together at most; 30,000 by default. */
  readonly maxEvidenceChars?: number | undefined
  /** Sources listed at most; 30 by default. */
  readonly maxSources?: number | undefined
  /** Asks after an answer that does not decode; 3 by default. */
  readonly retries?: number | undefined
}

const answerTokens = 4_000

const system = [
  "You are a strict, critical evaluator of research reports. You score a report on eight dimensions, each from 1",
  "to 5 against the rubric given, using the whole range: 3 is adequate, 5 is rare and must be earned. Judge the",
  "report against the question, the brief and the evidence the research actually gathered; claims that the evidence",
  "does not back lower groundedness. Reply with a single JSON object and nothing else.",
  "",
  untrustedNotice
].join("\n")

const rubricBlock = (dimension: Dimension): string => {
  const rubric = rubrics[dimension]
  return [
    `### ${dimension} (${rubric.title})`,
    rubric.measures,
    ...rubric.levels.map((level, i) => `${i + 1}: ${level}`)
  ].join("\n")
}

/** Sources and notes within the character cap: each source's text and each note get an equal share. */
const evidenceBlocks = (input: Input, maxChars: number, maxSources: number): string => {
  const sources = (input.sources ?? []).slice(0, maxSources)
  const notes = (input.notes ?? []).filter((note) => note.trim() !== "")
  const sourceShare =
    sources.length === 0 ? 0 : Math.floor((notes.length === 0 ? maxChars : maxChars / 2) / sources.length)
  const noteShare = notes.length === 0 ? 0 : Math.floor((sources.length === 0 ? maxChars : maxChars / 2) / notes.length)
  const sourceBlocks = sources.map((source, i) =>
    dataBlock(
      "source",
      { index: String(i + 1), title: source.title, url: source.url, quality: source.quality ?? "unknown" },
      cap(source.content ?? "", Math.max(0, sourceShare - 200))
    )
  )
  const noteBlocks = notes.map((note, i) => dataBlock("notes", { index: String(i + 1) }, cap(note, noteShare)))
  const omitted = (input.sources?.length ?? 0) - sources.length
  return [
    `## Evidence the research gathered (${sources.length} sources${omitted > 0 ? `, ${omitted} more not shown` : ""}, ${notes.length} research notes)`,
    ...sourceBlocks,
    ...noteBlocks
  ].join("\n\n")
}

/** The judge's request. */
export const request = (input: Input, options?: Options): LanguageModel.GenerateRequest => {
  const maxReport = options?.maxReportChars ?? 80_000
  const maxEvidence = options?.maxEvidenceChars ?? 30_000
  const prompt = [
    "## Question",
    dataBlock("question", {}, input.question),
    ...(input.brief === undefined || input.brief.trim() === ""
      ? []
      : ["## Research brief", dataBlock("brief", {}, input.brief)]),
    evidenceBlocks(input, maxEvidence, options?.maxSources ?? 30),
    "## Report to evaluate",
    dataBlock("report", {}, cap(input.report, maxReport)),
    "## Rubrics",
    ...dimensions.map(rubricBlock),
    "## Answer",
    `Score every dimension (${dimensions.join(", ")}) with an integer from 1 to 5 and a one- or two-sentence`,
    'rationale citing what in the report justifies it. Answer exactly: {"scores": {"depth": {"score": 3,',
    '"rationale": "..."}, ...}} with all eight dimensions.'
  ].join("\n\n")
  return { system, messages: [LanguageModel.user(prompt)], maxOutputTokens: answerTokens }
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

/** Judges a session's report; a session without a report is `InvalidInput`. */
export const judgeSession = Effect.fn("Judge.judgeSession")(function* (session: Session.Session, options?: Options) {
  if (session.report === undefined) {
    return yield* new Errors.InvalidInput({ reason: `session ${session.id} has no report to evaluate` })
  }
  return yield* judge(inputOf(session), options)
})
