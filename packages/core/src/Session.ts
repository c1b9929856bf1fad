/**
 * A research session: everything a run has done, checkpointed after every phase, researcher and round, so that a
 * killed run resumes where it stopped. The Schema is versioned; stores migrate older versions on load.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { InvalidInput, ResearchError } from "./Errors.js"
import { Brief, ClarificationRecord, Report, SupervisionRound } from "./Research.js"
import { ResearchConfig } from "./ResearchConfig.js"
import { Source } from "./Source.js"
import { Phase, PhaseMetrics, RoleUsage } from "./Usage.js"

/** The version written by this library. */
export const currentVersion = 1

/** Where a session stands. */
export const Status = Schema.Literal("running", "awaiting_clarification", "completed", "failed", "cancelled")
export type Status = typeof Status.Type

/** Ids: letters, digits, `-` and `_`, 1 to 128 characters. Nothing that could name another path. */
export const SessionId = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/),
  Schema.annotations({ identifier: "SessionId", description: "letters, digits, - and _ (at most 128)" })
)

const isSessionId = Schema.is(SessionId)

/** The id when it is a valid session id, else `InvalidInput` saying what an id may hold. */
export const validateId = (id: string): Effect.Effect<string, InvalidInput> => {
  if (isSessionId(id)) return Effect.succeed(id)
  // A hostile id can be long: it is shown shortened.
  const shown: string = id
  return Effect.fail(
    new InvalidInput({
      reason: `${JSON.stringify(shown.length > 40 ? `${shown.slice(0, 40)}…` : shown)} is not a session id (letters, digits, - and _, at most 128, not starting with - or _)`
    })
  )
}

/** A research session. */
export class Session extends Schema.Class<Session>("@deep-research/core/Session")({
  version: Schema.Literal(currentVersion),
  id: SessionId,
  query: Schema.String,
  createdAt: Schema.Number,
  updatedAt: Schema.Number,
  config: ResearchConfig,
  status: Status,
  clarification: Schema.optional(ClarificationRecord),
  brief: Schema.optional(Brief),
  /** True when the brief is the original query because the brief phase failed. */
  briefFallback: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  rounds: Schema.Array(SupervisionRound),
  /** Why supervision stopped, once it has. */
  supervisionStopReason: Schema.optional(Schema.String),
  sources: Schema.Array(Source),
  report: Schema.optional(Report),
  /** The phases that have finished; a resumed run never redoes them. */
  phasesCompleted: Schema.optionalWith(Schema.Array(Phase), { default: () => [] }),
  metrics: Schema.Array(PhaseMetrics),
  /** What every role spent over the whole session, across resumes. */
  usage: Schema.Array(RoleUsage),
  error: Schema.optional(ResearchError)
}) {}

/** Where a listed session stands: its status, or `corrupt` when its stored file cannot be read back. */
export const SummaryStatus = Schema.Literal(...Status.literals, "corrupt", "unreadable", "interrupted")
export type SummaryStatus = typeof SummaryStatus.Type

/** A line of a session listing. */
export class SessionSummary extends Schema.Class<SessionSummary>("@deep-research/core/SessionSummary")({
  id: Schema.String,
  status: SummaryStatus,
  query: Schema.String,
  createdAt: Schema.Number,
  updatedAt: Schema.Number,
  costUsd: Schema.Number,
  /** Why the session cannot be read, when the status is `corrupt` (bad content) or `unreadable` (the system refused). */
  error: Schema.optional(Schema.String)
}) {}

/** The listing line of a session. */
export const summarize = (session: Session): SessionSummary =>
  new SessionSummary({
    id: session.id,
    status: session.status,
    query: session.query,
    createdAt: session.createdAt,
    updatedAt: session.updatedAt,
    costUsd: session.usage.reduce((n, r) => n + r.costUsd, 0)
  })
