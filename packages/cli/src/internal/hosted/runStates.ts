/**
 * Where a hosted session stands, from what a process knows of it: the status clients see, and whether a stopped session
 * can take an answer or be resumed. Pure, shared by the runs of one process (`Runs`) and those of a cluster
 * (`ClusterRuns`); apart from `Runs` to keep the host's machinery on its own.
 */
import { Review, type Session } from "@deep-research/core"
import * as Effect from "effect/Effect"
import type * as Progress from "../../Progress.js"
import { conflict, type RunConflict, type RunStatus } from "../../RunSchema.js"

/** The phase the progress view gives a session that ended as the store has it (`Progress.reduce`'s names). */
const settledPhases: Partial<Record<Session.Session["status"], string>> = {
  completed: "completed",
  failed: "failed",
  cancelled: "cancelled",
  awaiting_clarification: "waiting for an answer",
  awaiting_review: "waiting for review"
}

const planOf = (session: Session.Session) => {
  const plan = Review.planOf(session)
  return plan === undefined ? {} : { plan }
}

/**
 * A session's status from what is known of it: the stored session, the progress of its events, whether a run of it
 * is going (and still waiting to start), and the question it was started with when nothing is stored yet.
 */
export const statusOf = (
  sessionId: string,
  known: {
    readonly stored: Session.Session | undefined
    readonly live: Progress.State | undefined
    readonly running: boolean
    readonly queued: boolean
    readonly query: string | undefined
  }
): RunStatus => {
  const { live, running, stored } = known
  // A session no run holds is where its store says, whatever this process saw of it (nothing, after a restart; its
  // events a moment behind the store, as a run ends).
  const settled = running || stored === undefined ? undefined : settledPhases[stored.status]
  return {
    sessionId,
    query: stored?.query ?? known.query ?? "",
    // While a run goes on the stored status may still be the previous one (an answered question).
    status: known.queued ? "queued" : running ? "running" : (stored?.status ?? "running"),
    running,
    phase: settled ?? live?.phase ?? "starting",
    round: live?.round ?? stored?.rounds.length ?? 0,
    researchers: live === undefined ? [] : [...live.researchers.entries()].map(([id, r]) => ({ id, ...r })),
    sources: stored?.sources.length ?? live?.sources ?? 0,
    tokens: live?.tokens ?? stored?.usage.reduce((n, r) => n + r.inputTokens + r.outputTokens, 0) ?? 0,
    costUsd: live?.costUsd ?? stored?.usage.reduce((n, r) => n + r.costUsd, 0) ?? 0,
    ...(!running && stored?.status === "awaiting_clarification" && stored.clarification !== undefined
      ? { clarificationQuestion: stored.clarification.decision.question }
      : {}),
    ...(!running && stored?.status === "awaiting_review" ? planOf(stored) : {}),
    ...(stored?.sourcePolicyRemovals === undefined ? {} : { sourcePolicyRemovals: stored.sourcePolicyRemovals }),
    ...(stored?.error === undefined ? {} : { error: stored.error.message }),
    reportReady: stored?.report !== undefined,
    ...(stored?.report?.grounding === undefined ? {} : { grounding: stored.report.grounding })
  }
}

/** Whether a stopped session can take an answer: only one waiting for it. */
export const answerable = (session: Session.Session): Effect.Effect<void, RunConflict> =>
  session.status === "awaiting_clarification"
    ? Effect.void
    : Effect.fail(conflict(session.id, session.status, "cannot take an answer"))

/** Whether a stopped session can take a review of its plan: only one waiting for it. */
export const reviewable = (session: Session.Session): Effect.Effect<void, RunConflict> =>
  session.status === "awaiting_review"
    ? Effect.void
    : Effect.fail(conflict(session.id, session.status, "cannot take a review of its plan"))

/** Whether a stopped session can be resumed: not a completed one, nor one waiting for an answer or a review. */
export const resumable = (session: Session.Session): Effect.Effect<void, RunConflict> =>
  session.status === "completed" || session.status === "awaiting_clarification" || session.status === "awaiting_review"
    ? Effect.fail(conflict(session.id, session.status, "cannot be resumed"))
    : Effect.void
