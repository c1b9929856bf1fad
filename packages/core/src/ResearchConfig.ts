/**
 * Every knob of a research run, in one Schema with the defaults of the design. Stored with each session (it holds
 * no secrets), decoded from CLI flags, config files and MCP arguments.
 */
import * as Duration from "effect/Duration"
import * as Schema from "effect/Schema"

const positiveInt = (defaultValue: number) =>
  Schema.optionalWith(Schema.Int.pipe(Schema.positive()), { default: () => defaultValue })

const ratio = (defaultValue: number) =>
  Schema.optionalWith(Schema.Number.pipe(Schema.between(0, 1)), { default: () => defaultValue })

const duration = (defaultValue: Duration.DurationInput) =>
  Schema.optionalWith(Schema.DurationFromMillis, { default: () => Duration.decode(defaultValue) })

/** Optional spending limits of a run. Research stops early when they run low; synthesis keeps a reserve. */
export class Budget extends Schema.Class<Budget>("@deep-research/core/Budget")({
  maxTokens: Schema.optional(Schema.Int.pipe(Schema.positive())),
  maxUsd: Schema.optional(Schema.Number.pipe(Schema.positive())),
  /** The share of the budget kept back for synthesis. */
  synthesisReserve: ratio(0.15)
}) {}

/** The knobs of a research run. */
export class ResearchConfig extends Schema.Class<ResearchConfig>("@deep-research/core/ResearchConfig")({
  /** Ask the user a clarifying question when the question needs one. The only phase that can be switched off. */
  allowClarification: Schema.optionalWith(Schema.Boolean, { default: () => true }),
  maxSupervisionRounds: positiveInt(6),
  maxConcurrentResearchUnits: positiveInt(5),
  maxDirectivesPerRound: positiveInt(5),
  /** Search and extract calls a researcher may make; think and complete are free. */
  researcherMaxToolCalls: positiveInt(10),
  /** A hard stop on a researcher's LLM turns, whatever the tool budget says. */
  researcherMaxTurns: positiveInt(20),
  maxQueriesPerSearch: positiveInt(5),
  maxUrlsPerExtract: positiveInt(2),
  searchResultsPerQuery: positiveInt(5),
  /** Characters of a source given to the summarizer at most. */
  summarizationInputCap: positiveInt(50_000),
  summarizationTimeout: duration("60 seconds"),
  /** Sources shorter than this many characters are not summarised. */
  minSummarizeLength: positiveInt(300),
  /** Titles at least this long count as the same source when they match. */
  titleDedupMinLength: positiveInt(20),
  /** Jaccard similarity of 5-character shingles at which two texts are the same source. */
  contentDuplicateThreshold: ratio(0.8),
  /** Below this length ratio two texts are not compared for similarity. */
  contentLengthRatioFloor: ratio(0.3),
  /** Novelty tags: at least `noveltyDuplicate` similar is a duplicate, at least `noveltyRelated` is related. */
  noveltyDuplicate: ratio(0.7),
  noveltyRelated: ratio(0.3),
  /** Compressed findings are kept only when at least this share of the raw notes, and citing something. */
  compressionMinRatio: ratio(0.1),
  supervisorSummaryMaxChars: positiveInt(1_500),
  /** Wall-clock limit of the research phase; synthesis runs on what exists when it is reached. */
  maxResearchDuration: duration("30 minutes"),
  budget: Schema.optionalWith(Budget, { default: () => new Budget({ synthesisReserve: 0.15 }) })
}) {}

/** The defaults of the design. */
export const defaults: ResearchConfig = Schema.decodeSync(ResearchConfig)({})

/** Decodes a partial configuration (from flags, a file or MCP arguments) over the defaults. */
export const decode = Schema.decodeUnknown(ResearchConfig)
