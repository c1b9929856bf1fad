/**
 * The shapes of hosted runs as clients see them, shared by the MCP server, the HTTP API and its typed client, and what
 * they are told when a session's state does not allow what they ask. Apart from `Runs` so that a client loads none of
 * the research wiring.
 */
import { ReportShape, Research, ResearchConfig, type Session, SourcePolicy } from "@deep-research/core"
import { research as defaults, upperBounds } from "@deep-research/core/Defaults"
import * as Schema from "effect/Schema"

/**
 * The settings a client, a flag and the config file give by these names, each with its bound, which is the research
 * knob's it sets (`Defaults.upperBounds`).
 */
export const settingBounds = {
  maxRounds: upperBounds.maxSupervisionRounds,
  concurrency: upperBounds.maxConcurrentResearchUnits,
  maxToolCalls: upperBounds.researcherMaxToolCalls,
  budgetTokens: upperBounds.maxTokens,
  budgetUsd: upperBounds.maxUsd,
  maxSessions: upperBounds.maxSessions
} as const

const count = (maximum: number) => Schema.Int.pipe(Schema.positive(), Schema.lessThanOrEqualTo(maximum))

/** Each setting as it is decoded wherever it is given: a positive whole number (dollars for `budgetUsd`) up to its bound. */
export const setting = {
  maxRounds: count(settingBounds.maxRounds),
  concurrency: count(settingBounds.concurrency),
  maxToolCalls: count(settingBounds.maxToolCalls),
  budgetTokens: count(settingBounds.budgetTokens),
  budgetUsd: Schema.Number.pipe(Schema.positive(), Schema.lessThanOrEqualTo(settingBounds.budgetUsd)),
  maxSessions: count(settingBounds.maxSessions)
} as const

/**
 * A question or an answer as the HTTP API and the MCP server take it: trimmed as the CLI trims it (a client's trailing
 * newline is no error), and not blank (its JSON Schema says so with a pattern). Trimmed both ways: the server trims
 * what it decodes, and the typed client trims what it sends (a trimmed type on the client's side would refuse the
 * trailing newline there, before the server could take it).
 */
export const trimmedText = (description: string) => {
  const text = Schema.String.pipe(Schema.pattern(/\S/, { message: () => "must not be empty" }))
  return Schema.transform(text.annotations({ description }), text, {
    strict: true,
    decode: (given) => given.trim(),
    encode: (given) => given.trim()
  })
}

const domains = Schema.Array(SourcePolicy.Domain.pipe(Schema.maxLength(253))).pipe(
  Schema.maxItems(ResearchConfig.maxPolicyDomains)
)

/** What a client may choose for one run; everything else comes from the server's configuration. */
export const StartOptions = Schema.Struct({
  maxRounds: Schema.optional(setting.maxRounds).annotations({
    description: `Supervision rounds at most (default ${defaults.maxSupervisionRounds}, at most ${settingBounds.maxRounds})`
  }),
  concurrency: Schema.optional(setting.concurrency).annotations({
    description: `Researchers at once at most (default ${defaults.maxConcurrentResearchUnits}, at most ${settingBounds.concurrency})`
  }),
  maxToolCalls: Schema.optional(setting.maxToolCalls).annotations({
    description: `Search and extract calls per researcher (default ${defaults.researcherMaxToolCalls}, at most ${settingBounds.maxToolCalls})`
  }),
  budgetTokens: Schema.optional(setting.budgetTokens).annotations({
    description: `Stop research at this many tokens (at most ${settingBounds.budgetTokens})`
  }),
  budgetUsd: Schema.optional(setting.budgetUsd).annotations({
    description: `Stop research at this cost in USD (at most ${settingBounds.budgetUsd})`
  }),
  allowClarification: Schema.optional(Schema.Boolean).annotations({
    description:
      "Run the clarification phase first; when the question needs it, the session waits for an answer (default true)"
  }),
  requireSources: Schema.optional(Schema.Boolean).annotations({
    description:
      "Fail the run when its report rests on no source (default false: it completes and says so in the report and " +
      "its grounding)"
  }),
  verify: Schema.optional(Schema.Boolean).annotations({
    description:
      "Check every cited sentence of the report against the sources it cites, removing citations they do not back " +
      "(default true)"
  }),
  includeDomains: Schema.optional(domains).annotations({
    description:
      "Use only these hosts and their subdomains; checked on every result and page, whatever a backend returns"
  }),
  excludeDomains: Schema.optional(domains).annotations({ description: "Never use these hosts or their subdomains" }),
  since: Schema.optional(SourcePolicy.Day).annotations({
    description: "Only sources published on or after this day (YYYY-MM-DD); a source with no known date is left out"
  }),
  until: Schema.optional(SourcePolicy.Day).annotations({
    description: "Only sources published on or before this day (YYYY-MM-DD); a source with no known date is left out"
  }),
  sources: Schema.optional(Schema.Array(SourcePolicy.SourceKind).pipe(Schema.maxItems(5))).annotations({
    description: "Only these kinds of source, told by the backend that returned them and their host"
  }),
  review: Schema.optional(Schema.Boolean).annotations({
    description:
      "Stop after the brief and the first directives, before any search, with the status awaiting_review, until " +
      "the plan is approved, edited or cancelled (POST /api/sessions/{id}/review, or the review_plan tool)"
  }),
  reportLanguage: Schema.optional(Schema.String.pipe(Schema.minLength(2), Schema.maxLength(40))).annotations({
    description: "The report's language (de, German, ...) when it should differ from the question's"
  }),
  words: Schema.optional(
    Schema.Int.pipe(Schema.between(ResearchConfig.minReportWords, ResearchConfig.maxReportWords))
  ).annotations({
    description:
      `The report's target length in words (${ResearchConfig.minReportWords} to ${ResearchConfig.maxReportWords}); ` +
      `it lands within ${ReportShape.tolerance * 100}% of it, and past ${ReportShape.sectionedAbove} words it is ` +
      "planned and written section by section. Research depth is set apart (maxRounds, maxToolCalls)"
  }),
  outline: Schema.optional(
    Schema.Array(Schema.String.pipe(Schema.pattern(/\S/), Schema.maxLength(200))).pipe(
      Schema.minItems(1),
      Schema.maxItems(ResearchConfig.maxOutlineSections)
    )
  ).annotations({ description: "The report's sections, in order: its ## sections are these titles" }),
  instructions: Schema.optional(Schema.String.pipe(Schema.maxLength(4_000))).annotations({
    description: "What the writer is told besides the structure: audience, tone, what to stress"
  }),
  library: Schema.optional(Schema.Boolean).annotations({
    description:
      "Start from the library: passages of earlier sessions' sources that match the brief enter the research as " +
      "known sources before any search, cited and marked with the session they came from (GET /api/library/search); " +
      "on a server with a token for each caller, only of the caller's own sessions and no one's"
  })
})
export type StartOptions = typeof StartOptions.Type

/** Where a run stands right after it was started, answered or resumed. */
export const Started = Schema.Struct({
  sessionId: Schema.String,
  status: Schema.Literal("queued", "running")
})
export type Started = typeof Started.Type

/** One researcher of the current round. */
export const ResearcherStatus = Schema.Struct({
  id: Schema.String,
  topic: Schema.String,
  action: Schema.String,
  sources: Schema.Number,
  status: Schema.Literal("running", "done", "failed")
})

/** A session's status with its live progress. */
export const RunStatus = Schema.Struct({
  sessionId: Schema.String,
  query: Schema.String,
  status: Schema.Literal(
    "queued",
    "running",
    "awaiting_clarification",
    "awaiting_review",
    "completed",
    "failed",
    "cancelled"
  ),
  running: Schema.Boolean,
  phase: Schema.String,
  round: Schema.Number,
  researchers: Schema.Array(ResearcherStatus),
  sources: Schema.Number,
  tokens: Schema.Number,
  costUsd: Schema.Number,
  clarificationQuestion: Schema.optional(Schema.String),
  /** The plan waiting for review (`awaiting_review`): the brief and the first round's directives. */
  plan: Schema.optional(
    Schema.Struct({ brief: Schema.String, directives: Schema.Array(Schema.String) }).annotations({
      identifier: "Plan"
    })
  ),
  /** What the source policy removed: a count per reason and each URL with its reason. */
  sourcePolicyRemovals: Schema.optional(SourcePolicy.Removals),
  error: Schema.optional(Schema.String),
  reportReady: Schema.Boolean,
  /** What the report stands on, once it is written: its sources, and why there are none when there are none. */
  grounding: Schema.optional(Research.Grounding)
})
export type RunStatus = typeof RunStatus.Type

/** A line of the session list: the stored summaries, and the runs still queued (not stored yet). */
export const Listed = Schema.Struct({
  id: Schema.String,
  status: Schema.String,
  query: Schema.String,
  createdAt: Schema.Number,
  updatedAt: Schema.optional(Schema.Number),
  costUsd: Schema.Number,
  error: Schema.optional(Schema.String),
  simulated: Schema.optional(Schema.Boolean).annotations({
    description: "true for a session a simulated run made (--simulate): its report is no real research"
  }),
  grounding: Schema.optional(Research.Grounding)
})
export type Listed = typeof Listed.Type

/** A source the session retrieved; `citation` is its number in the report's source list, when the report cites it. */
export const SourceView = Schema.Struct({
  id: Schema.String,
  url: Schema.String,
  title: Schema.String,
  provider: Schema.String,
  quality: Schema.String,
  publishedDate: Schema.optional(Schema.String),
  citation: Schema.NullOr(Schema.Int)
}).annotations({ identifier: "Source" })
export type SourceView = typeof SourceView.Type

/** The sources of a session as clients see them, each with its citation number in the report. */
export const sourcesOf = (session: Session.Session): ReadonlyArray<SourceView> => {
  const cited = new Map((session.report?.citations ?? []).map((c) => [c.sourceId, c.number]))
  return session.sources.map((source) => ({
    id: source.id,
    url: source.url,
    title: source.title,
    provider: source.provider,
    quality: source.quality,
    ...(source.publishedDate === undefined ? {} : { publishedDate: source.publishedDate }),
    citation: cited.get(source.id) ?? null
  }))
}

/** What a client asked that the session's state does not allow now (answering a running session, ...). */
export class RunConflict extends Schema.TaggedError<RunConflict>("@deep-research/cli/RunConflict")("RunConflict", {
  message: Schema.String
}) {}

/** A session's status in words, for a sentence that says where it stands. */
const statusWords: Readonly<Record<string, string>> = {
  queued: "queued (no run has started it yet)",
  running: "running",
  awaiting_clarification: "waiting for an answer to its clarification question",
  awaiting_review: "waiting for its plan to be reviewed",
  completed: "completed",
  failed: "failed",
  cancelled: "cancelled"
}

/** What a client can do with a session in each status. */
const nextStep: Readonly<Record<string, string>> = {
  queued: "follow its status until it runs, or cancel it",
  running: "follow its status until it ends, or cancel it",
  awaiting_clarification: "answer the question to go on",
  awaiting_review: "approve, edit or cancel its plan to go on",
  completed: "its report is ready to read",
  failed: "resume it to go on from its last checkpoint",
  cancelled: "resume it to go on from its last checkpoint"
}

/**
 * What was asked cannot be done in the session's status, said with the status and what to do instead: "The session
 * dr-1 cannot take an answer: it is completed; its report is ready to read."
 */
export const conflict = (sessionId: string, status: string, cannot: string): RunConflict =>
  new RunConflict({
    message:
      `The session ${sessionId} ${cannot}: it is ${statusWords[status] ?? status}` +
      `${nextStep[status] === undefined ? "" : `; ${nextStep[status]}`}.`
  })

/**
 * This server has no model to judge a report with (a client of a cluster started without one): no request can change
 * that, only the server's configuration.
 */
export class JudgeUnavailable extends Schema.TaggedError<JudgeUnavailable>("@deep-research/cli/JudgeUnavailable")(
  "JudgeUnavailable",
  { message: Schema.String }
) {}
