/**
 * The design's defaults of a research run and the roles of the pipeline, as plain values: what `ResearchConfig` and
 * `Usage` are built from, readable without loading Effect (the CLI answers `--help` from them before it loads
 * anything else: Effect's `Schema` alone takes three times as long to load as Node takes to start).
 */

/** The defaults of `ResearchConfig`, field by field; durations in milliseconds. */
export const research = {
  allowClarification: true,
  maxSupervisionRounds: 6,
  maxConcurrentResearchUnits: 5,
  maxDirectivesPerRound: 5,
  researcherMaxToolCalls: 10,
  researcherMaxTurns: 20,
  maxQueriesPerSearch: 5,
  maxUrlsPerExtract: 2,
  searchResultsPerQuery: 5,
  summarizationInputCap: 50_000,
  summarizationTimeoutMillis: 60_000,
  minSummarizeLength: 300,
  titleDedupMinLength: 20,
  contentDuplicateThreshold: 0.8,
  contentLengthRatioFloor: 0.3,
  noveltyDuplicate: 0.7,
  noveltyRelated: 0.3,
  compressionMinRatio: 0.1,
  supervisorSummaryMaxChars: 1_500,
  maxResearchDurationMillis: 30 * 60_000,
  synthesisReserve: 0.15,
  requireSources: false
} as const

/** The roles a language model plays in the pipeline, in pipeline order. */
export const roles = [
  "clarification",
  "brief",
  "supervisor",
  "researcher",
  "summarization",
  "compression",
  "report",
  "evaluation"
] as const

/** One of the `roles`. */
export type Role = (typeof roles)[number]
