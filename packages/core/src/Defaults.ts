/**
 * The design's defaults of a research run, the bounds of its settings and the roles of the pipeline, as plain values:
 * what `ResearchConfig` and `Usage` are built from, readable without loading Effect (the CLI answers `--help` from them
 * before it loads anything else: Effect's `Schema` alone takes three times as long to load as Node takes to start).
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
  requireSources: false,
  verify: true
} as const

/**
 * The largest value each numeric setting takes, field by field (durations in milliseconds): past them a run would not
 * research more, only wait, spend or hold memory. `ResearchConfig.Bounded`, the HTTP API's and MCP's schemas, the CLI's
 * flags, environment and config file all refuse more, naming the bound.
 */
export const upperBounds = {
  /** Rounds past a few dozen find nothing new. */
  maxSupervisionRounds: 50,
  /** One process saturates long before that many researchers at once. */
  maxConcurrentResearchUnits: 64,
  maxDirectivesPerRound: 64,
  /** A researcher has long finished before spending that many calls. */
  researcherMaxToolCalls: 200,
  researcherMaxTurns: 500,
  maxQueriesPerSearch: 20,
  maxUrlsPerExtract: 20,
  searchResultsPerQuery: 50,
  summarizationInputCap: 1_000_000,
  summarizationTimeoutMillis: 60 * 60_000,
  minSummarizeLength: 1_000_000,
  titleDedupMinLength: 10_000,
  supervisorSummaryMaxChars: 100_000,
  maxResearchDurationMillis: 24 * 60 * 60_000,
  /** A run's budget of tokens (`budget.maxTokens`). */
  maxTokens: 1_000_000_000,
  /** A run's budget in US dollars (`budget.maxUsd`). */
  maxUsd: 10_000,
  /** Research runs at once in one serving process (`--max-sessions`). */
  maxSessions: 1_000
} as const

/**
 * The largest value each setting of the resilience policy takes, per kind of provider and per provider (durations in
 * milliseconds): past them a call would only wait, or be retried, without end.
 */
export const resilienceBounds = {
  attemptTimeoutMillis: 60 * 60_000,
  maxRetries: 100,
  retryBaseDelayMillis: 60 * 60_000,
  retryFactor: 10,
  maxRetryDelayMillis: 60 * 60_000,
  failureThreshold: 10_000,
  resetTimeoutMillis: 60 * 60_000,
  requestsPerSecond: 100_000,
  burst: 100_000,
  maxConcurrency: 100_000
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
