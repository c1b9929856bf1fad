/**
 * The research domain: clarification, brief, directives, topic results, supervision rounds and the report.
 * The same Schemas decode model output, stored sessions and MCP arguments.
 */
import * as Schema from "effect/Schema"
import { RoleUsage, Usage } from "./Usage.js"
import { Work } from "./Source.js"

/** The clarification model's decision. */
export class Clarification extends Schema.Class<Clarification>("@deep-research/core/Clarification")({
  needClarification: Schema.Boolean.annotations({
    description: "True when the question cannot be researched well as asked"
  }),
  question: Schema.String.annotations({ description: "The one question to ask the user, or an empty string" }),
  verification: Schema.String.annotations({
    description: "What will be researched, restating the user's intent and the constraints understood"
  })
}) {}

/** A clarification that was asked, and what the user answered (if anyone did). */
export class ClarificationRecord extends Schema.Class<ClarificationRecord>("@deep-research/core/ClarificationRecord")({
  decision: Clarification,
  answer: Schema.optional(Schema.String)
}) {}

/** What the research covers and leaves out. */
export class Scope extends Schema.Class<Scope>("@deep-research/core/Scope")({
  include: Schema.Array(Schema.String),
  exclude: Schema.Array(Schema.String)
}) {}

/** The research brief that drives supervision and synthesis. */
export class Brief extends Schema.Class<Brief>("@deep-research/core/Brief")({
  brief: Schema.String.annotations({ description: "The research brief, specific and in the user's language" }),
  scope: Scope,
  sourcePreferences: Schema.Array(Schema.String).annotations({
    description: "Kinds of sources to prefer, primary sources first"
  }),
  language: Schema.String.annotations({ description: "The language of the user's question, e.g. English or 中文" })
}) {}

/** A research directive the supervisor delegates to one researcher. */
export class Directive extends Schema.Class<Directive>("@deep-research/core/Directive")({
  topic: Schema.String.annotations({ description: "A paragraph describing what to research, standalone" }),
  perspective: Schema.String.annotations({ description: "The angle to take" }),
  evidenceNeeded: Schema.String.annotations({ description: "What evidence would settle it" }),
  priority: Schema.Int.pipe(Schema.between(1, 3)).annotations({ description: "1 is the highest priority" })
}) {}

/** A directive once issued: its id and the round it belongs to. */
export class IssuedDirective extends Schema.Class<IssuedDirective>("@deep-research/core/IssuedDirective")({
  id: Schema.String,
  round: Schema.Int,
  directive: Directive
}) {}

/** Why a researcher stopped. */
export const StopReason = Schema.Literal("complete", "no_tool_call", "budget", "max_turns", "failed", "run_budget")
export type StopReason = typeof StopReason.Type

/** The outcome of one research unit: a researcher followed by compression. */
export class TopicResult extends Schema.Class<TopicResult>("@deep-research/core/TopicResult")({
  directiveId: Schema.String,
  status: Schema.Literal("completed", "failed"),
  /** The compressed findings with inline numbered citations, or the raw notes when compression did not hold. */
  findings: Schema.String,
  /** At most 1,500 characters for the supervisor: covered, key findings, confidence, gaps. */
  supervisorSummary: Schema.String,
  /** Ids of the sources the findings rest on. */
  sourceIds: Schema.Array(Schema.String),
  stopReason: StopReason,
  toolCalls: Schema.Int,
  /** Search and extract calls that failed as a whole (every query or page); 0 in sessions stored before it. */
  failedToolCalls: Schema.optionalWith(Schema.Int, { default: () => 0 }),
  turns: Schema.Int,
  compressed: Schema.Boolean,
  /** Why the unit failed, for the record; never shown to the report model as a finding. */
  error: Schema.optional(Schema.String),
  usage: Schema.optionalWith(Usage, { default: () => new Usage({ inputTokens: 0, outputTokens: 0 }) })
}) {}

/** One supervision round: the supervisor's reflection, its directives and their results. */
export class SupervisionRound extends Schema.Class<SupervisionRound>("@deep-research/core/SupervisionRound")({
  round: Schema.Int,
  reflection: Schema.optional(Schema.String),
  directives: Schema.Array(IssuedDirective),
  results: Schema.Array(TopicResult),
  /** Directives asked for beyond the per-round limit; they did not run. */
  deferred: Schema.optionalWith(Schema.Array(Directive), { default: () => [] }),
  completed: Schema.Boolean
}) {}

/** A numbered entry of the report's source list. */
export class Citation extends Schema.Class<Citation>("@deep-research/core/Citation")({
  number: Schema.Int,
  sourceId: Schema.String,
  url: Schema.String,
  title: Schema.String,
  /** The authors, year and venue of a scholarly source, and whether it is a preprint. */
  work: Schema.optional(Work),
  /** The earlier session a source of the library came from. */
  fromSession: Schema.optional(Schema.String)
}) {}

/** Why a report rests on no source. */
export const UngroundedReason = Schema.Literal(
  /** No search or extraction was ever called: the models answered in prose, or delegated nothing. */
  "no_tool_call",
  /** Every search and extraction that was called failed. */
  "searches_failed",
  /** Searches ran and answered, but nothing they found was kept (the web or the corpus held nothing relevant). */
  "nothing_found",
  /** Every research unit failed before it read a source. */
  "research_failed",
  /** The budget ran out before any source was read. */
  "budget",
  /** Searches answered, but the source policy removed everything they found. */
  "policy"
)
export type UngroundedReason = typeof UngroundedReason.Type

/**
 * What a report stands on: the number of retrieved sources it was written from and, when that is 0, why. A run
 * that found no source still completes, but says so here, in its report's opening and wherever its status is shown.
 */
export class Grounding extends Schema.Class<Grounding>("@deep-research/core/Grounding")({
  /** Retrieved sources given to the report model (the ones the completed research units' findings rest on). */
  sources: Schema.Int,
  /** Why there are none; present only when `sources` is 0. */
  reason: Schema.optional(UngroundedReason)
}) {
  /** True when the report rests on at least one source. */
  get grounded(): boolean {
    return this.sources > 0
  }
}

/** The final report: markdown with inline `[n]` citations, and the numbered sources they point at. */
export class Report extends Schema.Class<Report>("@deep-research/core/Report")({
  title: Schema.String,
  markdown: Schema.String,
  citations: Schema.Array(Citation),
  language: Schema.String,
  /** Citations the report model wrote that pointed at no retrieved source; they were removed. */
  droppedCitations: Schema.Int,
  /** What the report stands on; absent from reports stored before it was recorded. */
  grounding: Schema.optional(Grounding)
}) {}

/** How far the sources a sentence cites back it. */
export const SupportLabel = Schema.Literal("supported", "partially_supported", "unsupported", "contradicted")
export type SupportLabel = typeof SupportLabel.Type

/** What the check of one cited source of a sentence found. */
export class CitedSupport extends Schema.Class<CitedSupport>("@deep-research/core/CitedSupport")({
  /** The citation number the sentence had when it was checked. */
  number: Schema.Int,
  label: SupportLabel
}) {}

/** The check of one cited sentence of the report, and what it changed. */
export class SentenceVerdict extends Schema.Class<SentenceVerdict>("@deep-research/core/SentenceVerdict")({
  sentence: Schema.String,
  /**
   * `checked`: the model labelled it; `unverifiable`: no cited source has stored text; `failed`: the check failed;
   * `unchecked`: the budget could not pay for its check.
   */
  status: Schema.Literal("checked", "unverifiable", "failed", "unchecked"),
  label: Schema.optional(SupportLabel),
  citations: Schema.Array(CitedSupport),
  /** Citation numbers removed from the sentence because their source does not back it. */
  removed: Schema.Array(Schema.Int),
  /** True when no cited source backs the sentence, which the report marks as such. */
  marked: Schema.Boolean,
  explanation: Schema.String
}) {}

/** The check of every cited sentence of a report against the sources it cites (the `verification` phase). */
export class Verification extends Schema.Class<Verification>("@deep-research/core/Verification")({
  /** Cited sentences in the report as written. */
  sentences: Schema.Int,
  /** Sentences the model labelled. */
  checked: Schema.Int,
  /** Sentences whose citations changed or that were marked as unsupported. */
  changed: Schema.Int,
  removedCitations: Schema.Int,
  marked: Schema.Int,
  /** Why some sentences were not checked: the budget could not pay, or checks failed. */
  incomplete: Schema.optional(Schema.Literal("budget", "failed")),
  verdicts: Schema.Array(SentenceVerdict)
}) {}

// =============================================================================
// After the report: follow-up answers, continuations and report versions
// =============================================================================

/**
 * An answer to a follow-up question about a finished session, from its stored sources. Its citations keep the
 * session's numbering (the report's numbers, then the sources the report did not cite, numbered after them).
 */
export class FollowUpAnswer extends Schema.Class<FollowUpAnswer>("@deep-research/core/FollowUpAnswer")({
  question: Schema.String,
  /** The answer in markdown with `[n]` citations (after the check: unsupported citations removed, marks added). */
  markdown: Schema.String,
  /** The sources it cites, under the session's numbers. */
  citations: Schema.Array(Citation),
  /** False when the stored sources do not cover the question: the answer says so. */
  covered: Schema.Boolean,
  /** A direction to research when the sources do not cover the question (`continue`). */
  suggestedDirection: Schema.optional(Schema.String),
  /** The check of its cited sentences against their sources, as a report's. */
  verification: Schema.optional(Verification),
  askedAt: Schema.Number,
  durationMillis: Schema.Number,
  /** What answering spent, per role. */
  usage: Schema.Array(RoleUsage)
}) {}

/** A direction a finished session was asked to research further (`continue`). */
export class Continuation extends Schema.Class<Continuation>("@deep-research/core/Continuation")({
  direction: Schema.String,
  requestedAt: Schema.Number,
  /** The supervision rounds the session had when it was asked: the continuation's rounds come after them. */
  afterRound: Schema.Int,
  /** Supervision rounds the continuation may run. */
  maxRounds: Schema.Int,
  /** Milliseconds spent in supervision before it: the continuation's time limit counts from there. */
  supervisionMillisBefore: Schema.Number
}) {}

/** An earlier version of a session's report, kept when a continuation writes it again. */
export class ReportVersion extends Schema.Class<ReportVersion>("@deep-research/core/ReportVersion")({
  /** 1 for the first report. */
  version: Schema.Int,
  report: Report,
  verification: Schema.optional(Verification),
  /** How many sources the session held when it was written. */
  sources: Schema.Int,
  /** The continuation it was written after; absent for the first report. */
  direction: Schema.optional(Schema.String),
  supersededAt: Schema.Number
}) {}
