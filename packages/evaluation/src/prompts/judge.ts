/**
 * The judge's prompt: the eight dimensions a report is scored on, each with what it measures and what each score from
 * 1 to 5 means, and the request that shows the judge the question, the brief, the evidence the research gathered and
 * the report, each inside its delimited block, within caps on their length. `Judge` sends it and reads the answer.
 */
import { LanguageModel } from "@deep-research/core"
import * as Schema from "effect/Schema"
import { cap, dataBlock, untrustedNotice } from "./untrusted.js"

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

/** How much of a report and of its evidence the judge is shown. */
export interface Caps {
  /** Characters of the report shown at most; 80,000 by default. */
  readonly maxReportChars?: number | undefined
  /** Characters of sources and notes together at most; 30,000 by default. */
  readonly maxEvidenceChars?: number | undefined
  /** Sources listed at most; 30 by default. */
  readonly maxSources?: number | undefined
}

/** The most output tokens the judge may answer in. */
export const answerTokens = 4_000

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
export const request = (input: Input, options?: Caps): LanguageModel.GenerateRequest => {
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
