/**
 * The shapes of hosted runs as clients see them, shared by the MCP server, the HTTP API and its typed client. Apart
 * from `Runs` so that a client loads none of the research wiring.
 */
import { Research } from "@deep-research/core"
import * as Schema from "effect/Schema"

const positiveInt = Schema.Int.pipe(Schema.positive())

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

/** What a client may choose for one run; everything else comes from the server's configuration. */
export const StartOptions = Schema.Struct({
  maxRounds: Schema.optional(positiveInt).annotations({ description: "Supervision rounds at most (default 6)" }),
  concurrency: Schema.optional(positiveInt).annotations({ description: "Researchers at once at most (default 5)" }),
  maxToolCalls: Schema.optional(positiveInt).annotations({
    description: "Search and extract calls per researcher (default 10)"
  }),
  budgetTokens: Schema.optional(positiveInt).annotations({ description: "Stop research at this many tokens" }),
  budgetUsd: Schema.optional(Schema.Number.pipe(Schema.positive())).annotations({
    description: "Stop research at this cost in USD"
  }),
  allowClarification: Schema.optional(Schema.Boolean).annotations({
    description:
      "Run the clarification phase first; when the question needs it, the session waits for an answer (default true)"
  }),
  requireSources: Schema.optional(Schema.Boolean).annotations({
    description:
      "Fail the run when its report rests on no source (default false: it completes and says so in the report and " +
      "its grounding)"
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
  status: Schema.Literal("queued", "running", "awaiting_clarification", "completed", "failed", "cancelled"),
  running: Schema.Boolean,
  phase: Schema.String,
  round: Schema.Number,
  researchers: Schema.Array(ResearcherStatus),
  sources: Schema.Number,
  tokens: Schema.Number,
  costUsd: Schema.Number,
  clarificationQuestion: Schema.optional(Schema.String),
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
  grounding: Schema.optional(Research.Grounding)
})
export type Listed = typeof Listed.Type

/** What a client asked that the session's state does not allow now (answering a running session, ...). */
export class RunConflict extends Schema.TaggedError<RunConflict>("@deep-research/cli/RunConflict")("RunConflict", {
  message: Schema.String
}) {}
