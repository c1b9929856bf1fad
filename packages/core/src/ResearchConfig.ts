/**
 * Every knob of a research run, in one Schema with the defaults of the design (their values in `Defaults`). Stored with
 * each session (it holds no secrets), decoded from CLI flags, config files and MCP arguments within the bounds of
 * `Defaults.upperBounds` (`Bounded`).
 */
import * as Duration from "effect/Duration"
import * as Schema from "effect/Schema"
import { research as d, upperBounds } from "./Defaults.js"
import { Day, Domain, domainProblem, isCalendarDate, SourceKind } from "./SourcePolicy.js"

const positiveInt = (defaultValue: number) =>
  Schema.optionalWith(Schema.Int.pipe(Schema.positive()), { default: () => defaultValue })

const ratio = (defaultValue: number) =>
  Schema.optionalWith(Schema.Number.pipe(Schema.between(0, 1)), { default: () => defaultValue })

const duration = (defaultValue: Duration.DurationInput) =>
  Schema.optionalWith(Schema.DurationFromMillis, { default: () => Duration.decode(defaultValue) })

/** Domains a policy may list on each side at most. */
export const maxPolicyDomains = 200

/** A report's target length in words: at least, at most. */
export const minReportWords = 100
export const maxReportWords = 20_000

/** Sections an outline may give at most. */
export const maxOutlineSections = 30

/** Optional spending limits of a run. Research stops early when they run low; synthesis keeps a reserve. */
export class Budget extends Schema.Class<Budget>("@deep-research/core/Budget")({
  maxTokens: Schema.optional(Schema.Int.pipe(Schema.positive())),
  maxUsd: Schema.optional(Schema.Number.pipe(Schema.positive())),
  /** The share of the budget kept back for synthesis. */
  synthesisReserve: ratio(d.synthesisReserve)
}) {}

/** The knobs of a research run. */
export class ResearchConfig extends Schema.Class<ResearchConfig>("@deep-research/core/ResearchConfig")({
  /** Ask the user a clarifying question when the question needs one. The only phase that can be switched off. */
  allowClarification: Schema.optionalWith(Schema.Boolean, { default: () => d.allowClarification }),
  maxSupervisionRounds: positiveInt(d.maxSupervisionRounds),
  maxConcurrentResearchUnits: positiveInt(d.maxConcurrentResearchUnits),
  maxDirectivesPerRound: positiveInt(d.maxDirectivesPerRound),
  /** Search and extract calls a researcher may make; think and complete are free. */
  researcherMaxToolCalls: positiveInt(d.researcherMaxToolCalls),
  /** A hard stop on a researcher's LLM turns, whatever the tool budget says. */
  researcherMaxTurns: positiveInt(d.researcherMaxTurns),
  maxQueriesPerSearch: positiveInt(d.maxQueriesPerSearch),
  maxUrlsPerExtract: positiveInt(d.maxUrlsPerExtract),
  searchResultsPerQuery: positiveInt(d.searchResultsPerQuery),
  /** Characters of a source given to the summarizer at most. */
  summarizationInputCap: positiveInt(d.summarizationInputCap),
  summarizationTimeout: duration(d.summarizationTimeoutMillis),
  /** Sources shorter than this many characters are not summarised. */
  minSummarizeLength: positiveInt(d.minSummarizeLength),
  /** Titles at least this long count as the same source when they match. */
  titleDedupMinLength: positiveInt(d.titleDedupMinLength),
  /** Jaccard similarity of 5-character shingles at which two texts are the same source. */
  contentDuplicateThreshold: ratio(d.contentDuplicateThreshold),
  /** Below this length ratio two texts are not compared for similarity. */
  contentLengthRatioFloor: ratio(d.contentLengthRatioFloor),
  /** Novelty tags: at least `noveltyDuplicate` similar is a duplicate, at least `noveltyRelated` is related. */
  noveltyDuplicate: ratio(d.noveltyDuplicate),
  noveltyRelated: ratio(d.noveltyRelated),
  /** Compressed findings are kept only when at least this share of the raw notes, and citing something. */
  compressionMinRatio: ratio(d.compressionMinRatio),
  supervisorSummaryMaxChars: positiveInt(d.supervisorSummaryMaxChars),
  /** Wall-clock limit of the research phase; synthesis runs on what exists when it is reached. */
  maxResearchDuration: duration(d.maxResearchDurationMillis),
  budget: Schema.optionalWith(Budget, { default: () => new Budget({ synthesisReserve: d.synthesisReserve }) }),
  /**
   * Fail a run whose report rests on no source (`Ungrounded`), where by default it completes and says so in its
   * report and its grounding.
   */
  requireSources: Schema.optionalWith(Schema.Boolean, { default: () => d.requireSources }),
  /**
   * Check every cited sentence of the report against the sources it cites, removing citations they do not back (the
   * `verification` phase); on by default.
   */
  verify: Schema.optionalWith(Schema.Boolean, { default: () => d.verify }),
  /**
   * The source policy (see `SourcePolicy`): only these domains and their subdomains, never these, published within
   * `since`..`until` (a result with no known date is left out when either is set), only these kinds of source. Pushed
   * down to the backends that can filter, and checked by the product on every result and page.
   */
  includeDomains: Schema.optional(Schema.Array(Domain).pipe(Schema.maxItems(maxPolicyDomains))),
  excludeDomains: Schema.optional(Schema.Array(Domain).pipe(Schema.maxItems(maxPolicyDomains))),
  since: Schema.optional(Day),
  until: Schema.optional(Day),
  sources: Schema.optional(Schema.Array(SourceKind)),
  /**
   * Stop after the brief and the supervisor's first directives, before any search, for the user to approve, edit or
   * cancel them (status `awaiting_review` where nobody can answer at once; never blocks where nobody can answer).
   */
  review: Schema.optional(Schema.Boolean),
  /**
   * Start from the library: passages of earlier sessions' sources that match the brief enter the research as known
   * sources before any search, cited as any other and marked with the session they came from (`SourceLibrary`); where
   * sessions have owners, only of the sessions this one's owner reaches (`SourceLibrary.RunReach`).
   */
  library: Schema.optional(Schema.Boolean),
  /**
   * The language the report is written in (an ISO 639-1 code such as `de`, or a name such as `German`), when it
   * should differ from the question's. Searches stay in the question's language.
   */
  reportLanguage: Schema.optional(Schema.String.pipe(Schema.minLength(2), Schema.maxLength(40))),
  /**
   * The report's target length in words (`ReportShape`): it is planned and written to land within
   * `ReportShape.tolerance` of it; past `ReportShape.sectionedAbove` it is written section by section.
   */
  reportWords: Schema.optional(Schema.Int.pipe(Schema.between(minReportWords, maxReportWords))),
  /** The report's sections, in order: its `##` sections are these titles. */
  reportOutline: Schema.optional(
    Schema.Array(Schema.String.pipe(Schema.pattern(/\S/), Schema.maxLength(200))).pipe(
      Schema.minItems(1),
      Schema.maxItems(maxOutlineSections)
    )
  ),
  /** What the writer is told besides the structure: audience, tone, what to stress. */
  reportInstructions: Schema.optional(Schema.String.pipe(Schema.maxLength(4_000)))
}) {}

/** The knobs counted in whole numbers, each bounded by its namesake in `Defaults.upperBounds`. */
const countedKnobs = [
  "maxSupervisionRounds",
  "maxConcurrentResearchUnits",
  "maxDirectivesPerRound",
  "researcherMaxToolCalls",
  "researcherMaxTurns",
  "maxQueriesPerSearch",
  "maxUrlsPerExtract",
  "searchResultsPerQuery",
  "summarizationInputCap",
  "minSummarizeLength",
  "titleDedupMinLength",
  "supervisorSummaryMaxChars"
] as const

/** The knobs of a configuration over their bounds, each as Schema says a number over its maximum. */
const overBounds = (config: ResearchConfig): ReadonlyArray<Schema.FilterIssue> => {
  const over = (path: ReadonlyArray<string>, value: number | undefined, maximum: number) =>
    value === undefined || value <= maximum
      ? []
      : [{ path, message: `Expected a number less than or equal to ${maximum}, actual ${value}` }]
  return [
    ...countedKnobs.flatMap((knob) => over([knob], config[knob], upperBounds[knob])),
    ...over(
      ["summarizationTimeout"],
      Duration.toMillis(config.summarizationTimeout),
      upperBounds.summarizationTimeoutMillis
    ),
    ...over(
      ["maxResearchDuration"],
      Duration.toMillis(config.maxResearchDuration),
      upperBounds.maxResearchDurationMillis
    ),
    ...over(["budget", "maxTokens"], config.budget.maxTokens, upperBounds.maxTokens),
    ...over(["budget", "maxUsd"], config.budget.maxUsd, upperBounds.maxUsd)
  ]
}

/**
 * What of a source policy as a user gives it could never hold: a day the calendar has not (2023-02-30), a window that
 * ends before it starts, a domain that names no host (it would match nothing, so an included one would leave every
 * result out and an excluded one none).
 */
const policyIssues = (config: ResearchConfig): ReadonlyArray<Schema.FilterIssue> => [
  ...(["since", "until"] as const).flatMap((key) => {
    const day = config[key]
    return day === undefined || isCalendarDate(day)
      ? []
      : [{ path: [key], message: `${day} is not a day of the calendar` }]
  }),
  ...(config.since !== undefined && config.until !== undefined && config.since > config.until
    ? [{ path: ["until"], message: `until (${config.until}) is before since (${config.since})` }]
    : []),
  ...(["includeDomains", "excludeDomains"] as const).flatMap((key) =>
    (config[key] ?? []).flatMap((domain, i) => {
      const problem = domainProblem(domain)
      return problem === undefined ? [] : [{ path: [key, i], message: problem }]
    })
  )
]

/**
 * A configuration as a user gives it: every numeric knob at most its bound (`Defaults.upperBounds`), and a source policy
 * that can hold. Sessions stored before the bounds keep decoding with `ResearchConfig` itself.
 */
export const Bounded = ResearchConfig.pipe(
  Schema.filter((config) => {
    const issues = [...overBounds(config), ...policyIssues(config)]
    return issues.length === 0 || issues
  })
)

/** The defaults of the design. */
export const defaults: ResearchConfig = Schema.decodeSync(ResearchConfig)({})

/** Decodes a partial configuration (from flags, a file or MCP arguments) over the defaults, within the bounds. */
export const decode = Schema.decodeUnknown(Bounded)
