/**
 * One run of a session: the phases in order (clarify -> brief -> supervision -> synthesis -> verification), each a small step over the
 * `Run` record that the run shares (its running session, account, budget and request journal). Each step skips what
 * the session has done already, so a resumed run picks up at its last checkpoint. The pipeline (`Pipeline.ts`) begins
 * and continues sessions and hands each run here; a new step is one more function and one more line in `steps`.
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as Budget from "../Budget.js"
import * as PolicedSources from "../internal/session/policedSources.js"
import { today } from "../internal/text/calendar.js"
import * as Novelty from "../Novelty.js"
import { type ResearchError, Ungrounded } from "../Errors.js"
import * as ModelRouter from "../ModelRouter.js"
import * as Pricing from "../Pricing.js"
import type { Report } from "../Research.js"
import type * as ResearchConfig from "../ResearchConfig.js"
import * as ReportShape from "../ReportShape.js"
import * as ResearchEvents from "../ResearchEvents.js"
import { QuestionLanguage } from "../SearchProvider.js"
import * as Session from "../Session.js"
import * as SessionRequests from "../SessionRequests.js"
import { SessionStore, type Service as SessionStoreService } from "../SessionStore.js"
import * as SourcePolicy from "../SourcePolicy.js"
import * as Task from "../Task.js"
import * as Tokens from "../Tokens.js"
import type * as Usage from "../Usage.js"
import * as UsageLedger from "../UsageLedger.js"
import * as Brief from "./Brief.js"
import * as Checkpoint from "./Checkpoint.js"
import * as Clarify from "./Clarify.js"
import * as Continuation from "./Continuation.js"
import * as Library from "./Library.js"
import * as Review from "./Review.js"
import type * as ResearchUnit from "./ResearchUnit.js"
import * as Supervisor from "./Supervisor.js"
import * as Synthesis from "./Synthesis.js"
import * as StreamingVerification from "./StreamingVerification.js"
import * as Verification from "./Verification.js"

// =============================================================================
// The run record
// =============================================================================

/**
 * Whether a phase has finished. A phase's result is saved with its completion mark, in one checkpoint; a result
 * without the mark (a session saved by an earlier version, which saved them one after the other) counts too.
 */
const isDone = (session: Session.Session, phase: Usage.Phase): boolean => {
  if (session.phasesCompleted.includes(phase)) return true
  switch (phase) {
    case "clarification":
      return session.clarification !== undefined
    case "brief":
      return session.brief !== undefined || session.briefFallback
    case "supervision":
      return false
    case "synthesis":
      return session.report !== undefined
    case "verification":
      return session.verification !== undefined
    case "answer":
      return false
  }
}

/** What every step of a run shares: the running session and what the run holds for its life. */
interface Run<R> {
  readonly initial: Session.Session
  readonly config: ResearchConfig.ResearchConfig
  readonly mode: Clarify.Mode
  readonly runUnit: ResearchUnit.Runner<R>
  readonly store: SessionStoreService
  readonly ledger: UsageLedger.UsageLedger
  readonly budget: Budget.Service
  readonly journal: SessionRequests.Journal
  readonly session: Checkpoint.Handle
  /** The source policy, checked on every result and page, and what it removed so far. */
  readonly enforcement: PolicedSources.Enforcement
}

/** The session with what the source policy removed so far, when it removed anything. */
const stamped = (session: Session.Session, removals: SourcePolicy.Removals): Session.Session =>
  removals.total === 0 || session.sourcePolicyRemovals === removals
    ? session
    : Checkpoint.patch(session, { sourcePolicyRemovals: removals })

/**
 * The running session, each of whose checkpoints also writes the request journal, so that the two keep pace, and what
 * the source policy removed so far.
 */
const journalingCheckpoints = (
  handle: Checkpoint.Handle,
  journal: SessionRequests.Journal,
  removals: Ref.Ref<SourcePolicy.Removals>
): Checkpoint.Handle => ({
  ...handle,
  update: (label, change) =>
    Ref.get(removals).pipe(
      Effect.flatMap((removed) => handle.update(label, (s) => stamped(change(s), removed))),
      Effect.tap(() => journal.flush)
    ),
  phase: (phase, body, record) =>
    handle
      .phase(phase, Effect.zip(body, Ref.get(removals)), ([result, removed], s) =>
        stamped(record === undefined ? s : record(result, s), removed)
      )
      .pipe(
        Effect.map(([result]) => result),
        Effect.tap(() => journal.flush)
      )
})

/** The source policy of a session's settings, with what it removed before and what its sources' searches said. */
const enforcementOf = (initial: Session.Session) =>
  Effect.gen(function* () {
    const enforcement: PolicedSources.Enforcement = {
      policy: SourcePolicy.fromSettings(initial.config),
      today: yield* today,
      removals: yield* Ref.make(initial.sourcePolicyRemovals ?? SourcePolicy.noRemovals),
      seen: new Map(
        initial.sources.map((s) => [
          Novelty.normalizeUrl(s.url),
          { provider: s.provider, publishedDate: s.publishedDate, work: s.work }
        ])
      )
    }
    return enforcement
  })

/** Opens a run of `initial`: its account, its budget, its request journal and its running session. */
const open = <R>(initial: Session.Session, mode: Clarify.Mode, runUnit: ResearchUnit.Runner<R>) =>
  Effect.gen(function* () {
    const config = initial.config
    const ledger = yield* UsageLedger.make(initial.usage)
    const table = Option.getOrElse(yield* Effect.serviceOption(Pricing.Pricing), () => Pricing.defaultTable)
    const budget = yield* Budget.make(config.budget, UsageLedger.totals(initial.usage), {
      table,
      reportModel: (yield* ModelRouter.ModelRouter).resolve("report").model,
      // A long report asked for keeps back what its plan will take (`ReportShape`).
      reportTokens: ReportShape.reserveTokensFor(config)
    })
    // What earlier runs of the session were answered is not asked again; what this run is answered is journaled.
    const journal = yield* SessionRequests.journal(initial.id)
    const enforcement = yield* enforcementOf(initial)
    const session = journalingCheckpoints(yield* Checkpoint.make(initial, ledger), journal, enforcement.removals)
    const store = yield* SessionStore
    const run: Run<R> = { initial, config, mode, runUnit, store, ledger, budget, journal, session, enforcement }
    return run
  })

const done = <R>(run: Run<R>, phase: Usage.Phase) => Effect.map(run.session.get, (s) => isDone(s, phase))

/** Why the report rests on no source, when it does and the run requires sources. */
const ungroundedReason = (config: ResearchConfig.ResearchConfig, report: Report): string | undefined =>
  config.requireSources && report.grounding?.sources === 0 ? (report.grounding.reason ?? "no source") : undefined

/**
 * Each phase's first call is checked against the budget like every research call: a budget too small for it skips the
 * phase (no question asked, the original question as the brief) and keeps the reserve for the report.
 */
const affordable = <R>(run: Run<R>, role: Usage.Role) =>
  Effect.flatMap(ModelRouter.forRole(role), (model) =>
    run.budget.covers({ role, model: model.model, inputTokens: Tokens.estimateTokens(run.initial.query) + 1_000 })
  )

// =============================================================================
// Steps
// =============================================================================

/**
 * A resumed run starts afresh: the failure an earlier run stopped on is no longer the session's. (A new session was
 * saved running, and needs no second save.)
 */
const markRunning = <R>(run: Run<R>) =>
  run.initial.status !== "running" || run.initial.error !== undefined
    ? run.session.update("running", (s) => {
        const { error: _earlier, ...rest } = s
        return new Session.Session({ ...rest, status: "running" })
      })
    : Effect.void

/** Clarification, when it is allowed, not done and affordable; true when the run stops to wait for the answer. */
const clarify = <R>(run: Run<R>) =>
  Effect.gen(function* () {
    if (!run.config.allowClarification || (yield* done(run, "clarification"))) return false
    if (!(yield* affordable(run, "clarification"))) return false
    const outcome = yield* run.session.phase("clarification", Clarify.run(run.initial.query, run.mode), (outcome, s) =>
      Checkpoint.patch(s, {
        clarification: outcome.record,
        status: outcome.awaiting ? "awaiting_clarification" : "running"
      })
    )
    return outcome.awaiting
  })

/** The brief, from the task as asked; the question stands in when the budget cannot pay for one. */
const writeBrief = <R>(run: Run<R>) =>
  Effect.gen(function* () {
    if (yield* done(run, "brief")) return
    const asked = Task.fromSession(yield* run.session.get)
    yield* run.session.phase(
      "brief",
      (yield* affordable(run, "brief")) ? Brief.run(asked) : Brief.fallback(run.initial.query),
      (outcome, s) => Checkpoint.patch(s, { brief: outcome.brief, briefFallback: outcome.fallback })
    )
  })

/**
 * The review of the plan (`review`): the supervisor's first round of directives is planned and saved, not run; then the
 * user is asked (a terminal), or the session waits `awaiting_review` (a caller that answers later), or, where nobody
 * can answer, the run says so and goes on. Returns the session when the run stops here (waiting, or cancelled).
 */
const review = <R>(run: Run<R>, task: Task.Task) =>
  Effect.gen(function* () {
    const current = yield* run.session.get
    if (run.config.review !== true || (yield* done(run, "supervision"))) return undefined
    if (current.review !== undefined && current.review.decision !== "pending") return undefined
    if (current.review === undefined && current.rounds.length > 0) return undefined
    if (current.rounds.length === 0) {
      const { budget, runUnit, session } = run
      const planning = Supervisor.run(task, { session, budget, runUnit, holdFirstRound: true })
      yield* Effect.provideService(planning, QuestionLanguage, task.questionLanguage.code)
    }
    const planned = yield* run.session.get
    const plan = Review.planOf(planned)
    // A supervisor that delegated nothing left nothing to review: supervision goes on as it would.
    if (plan === undefined) return undefined
    const mode = yield* Review.mode
    // Marked waiting before it is read: a run stopped at the prompt asks again when resumed (it searched unreviewed).
    const pending = new Session.PlanReview({ decision: "pending" })
    if (mode === "ask" && planned.review === undefined)
      yield* run.session.update("plan", (s) => Checkpoint.patch(s, { review: pending }))
    const decision = mode === "ask" ? yield* Review.askNow(plan) : Option.none()
    if (Option.isNone(decision) && mode === "await") {
      yield* ResearchEvents.publish({ _tag: "SessionAwaitingReview", ...plan })
      return yield* run.session.update("awaiting review", (s) =>
        Checkpoint.patch(s, { status: "awaiting_review", review: pending })
      )
    }
    if (Option.isNone(decision)) {
      // Said once, by the event (the CLI's line "the plan was not reviewed: nobody can answer here ..."), not a log too.
      yield* ResearchEvents.publish({ _tag: "PlanReviewed", decision: "unanswered" })
      yield* run.session.update("plan not reviewed", (s) =>
        Checkpoint.patch(s, { review: new Session.PlanReview({ decision: "unanswered" }) })
      )
      return undefined
    }
    const reviewed = yield* Review.apply(planned, decision.value)
    yield* run.session.update(`plan ${decision.value.action}`, () => reviewed)
    yield* ResearchEvents.publish({ _tag: "PlanReviewed", decision: Review.decisionWord(decision.value) })
    return reviewed.status === "cancelled" ? reviewed : undefined
  })

/** Supervision: the rounds of research units. */
const supervise = <R>(run: Run<R>, task: Task.Task) =>
  Effect.gen(function* () {
    if (yield* done(run, "supervision")) return
    const { budget, runUnit, session } = run
    const supervision = Effect.gen(function* () {
      const outcome = yield* Supervisor.run(task, { session, budget, runUnit })
      // A supervisor that fails before anything was found leaves nothing to write about: the run fails (and can be
      // resumed); with findings in hand, the report is written from them.
      if (outcome.error !== undefined && Synthesis.completedResults(yield* session.get).length === 0) {
        return yield* Effect.fail(outcome.error)
      }
      return outcome
    })
    yield* session.phase(
      "supervision",
      // Providers with an edition per language (Wikipedia) search the question's, whatever the report's language.
      Effect.provideService(supervision, QuestionLanguage, task.questionLanguage.code),
      (outcome, s) => Checkpoint.patch(s, { supervisionStopReason: outcome.reason })
    )
  })

/**
 * Synthesis: the report file first, then one checkpoint with the report, the completion mark and the status, so that
 * a completed session always has its report file. With the check on, the report's sentences are checked as it is
 * written (`StreamingVerification`); what was checked is handed to verification.
 */
const synthesize = <R>(run: Run<R>, task: Task.Task) =>
  Effect.gen(function* () {
    if (yield* done(run, "synthesis")) return StreamingVerification.none
    const current = yield* run.session.get
    const writing = Effect.tap(Synthesis.run(task, current), (report) =>
      run.store.saveReport(current.id, report.markdown)
    )
    const written = yield* run.session.phase(
      "synthesis",
      run.config.verify
        ? StreamingVerification.whileWriting(Synthesis.material(current).sources, Verification, writing)
        : Effect.map(writing, (value) => ({ value, early: StreamingVerification.none })),
      // A run that requires sources and found none is not completed: it fails in `complete`, its report kept. A report
      // still to be checked is completed once it is.
      ({ value: report }, s) =>
        Checkpoint.patch(s, {
          report,
          status: ungroundedReason(run.config, report) === undefined && !run.config.verify ? "completed" : s.status
        })
    )
    return written.early
  })

/** Verification: every cited sentence checked against its sources (see `Verification.ts`); on unless turned off. */
const verify = <R>(run: Run<R>, task: Task.Task, early: StreamingVerification.Early) =>
  Effect.gen(function* () {
    if (!run.config.verify || (yield* done(run, "verification"))) return
    yield* Verification.inSession(
      run.session,
      task,
      (report) => ungroundedReason(run.config, report) === undefined,
      early
    )
  })

/** Ends the run: a report that rests on no source when sources are required fails it; otherwise it is completed. */
const complete = <R>(run: Run<R>) =>
  Effect.gen(function* () {
    const written = (yield* run.session.get).report
    const ungrounded = written === undefined ? undefined : ungroundedReason(run.config, written)
    if (ungrounded !== undefined) return yield* Effect.fail(new Ungrounded({ reason: ungrounded }))
    const finished = yield* run.session.get
    const completed =
      finished.status === "completed"
        ? finished
        : yield* run.session.update("completed", (s) => Checkpoint.patch(s, { status: "completed" }))
    // A completed session is never run again: its journal is of no more use.
    yield* run.journal.discard
    const spent = UsageLedger.totals(completed.usage)
    yield* ResearchEvents.publish({
      _tag: "SessionCompleted",
      durationMillis: completed.metrics.reduce((n, m) => n + m.durationMillis, 0),
      tokens: spent.tokens,
      costUsd: spent.costUsd
    })
    return completed
  })

/** The steps of a run, in order; each skips what the session has done already. */
const steps = <R>(run: Run<R>) =>
  Effect.gen(function* () {
    yield* markRunning(run)
    if (yield* clarify(run)) return yield* run.session.get
    yield* writeBrief(run)
    // With the library on, what earlier sessions stored on the question comes first, before any search.
    if (run.config.library === true)
      yield* Library.consult(Task.fromSession(yield* run.session.get), run.session, run.store, run.enforcement.removals)
    const stopped = yield* review(run, Task.fromSession(yield* run.session.get))
    if (stopped !== undefined) return stopped
    // The task, from here to the report: the question, its clarification and brief (as reviewed), and the settings.
    const task = Task.fromSession(yield* run.session.get)
    yield* supervise(run, task)
    // The checks begun while the report is written live until verification has taken them.
    yield* Effect.scoped(Effect.flatMap(synthesize(run, task), (early) => verify(run, task, early)))
    return yield* complete(run)
  })

/** Runs the steps with what the run shares provided, and marks the session when the run ends otherwise. */
const within = <R, A, E extends ResearchError, R2>(run: Run<R>, body: Effect.Effect<A, E, R2>) =>
  body.pipe(
    // Every result and page is checked against the source policy, whatever the backend (or the journal) returned.
    PolicedSources.enforce(run.enforcement),
    // Searches, extractions and summaries are shared by the session's researchers and its runs: none is made twice.
    SessionRequests.shareJournaled(run.journal),
    // A continuation reads no page again that the session read before: those are answered from its stored sources.
    Continuation.storedPages(run.initial.continuations.length === 0 ? [] : run.initial.sources),
    Effect.provideService(UsageLedger.UsageLedger, run.ledger),
    // Every model call of the run is reserved against its budget (see `ModelRouter`).
    Effect.provideService(Budget.Budget, run.budget),
    Effect.tapError((error: E) =>
      Effect.zipRight(
        Effect.ignore(run.session.update("failed", (s) => Checkpoint.patch(s, { status: "failed", error }))),
        ResearchEvents.publish({ _tag: "SessionFailed", error: error.message })
      )
    ),
    // A defect (a bug, not an error of the union) still leaves the session marked failed, resumable.
    Effect.tapDefect((defect) =>
      Cause.isInterruptedOnly(defect)
        ? Effect.void
        : Effect.zipRight(
            Effect.ignore(run.session.update("failed", (s) => Checkpoint.patch(s, { status: "failed" }))),
            ResearchEvents.publish({ _tag: "SessionFailed", error: Cause.pretty(defect).slice(0, 2_000) })
          )
    ),
    Effect.onInterrupt(() =>
      Effect.zipRight(
        Effect.ignore(run.session.update("cancelled", (s) => Checkpoint.patch(s, { status: "cancelled" }))),
        ResearchEvents.publish({ _tag: "SessionCancelled" })
      )
    )
  )

/**
 * Runs a session from wherever it stands to its end: completed, awaiting clarification or review, failed or cancelled.
 */
export const drive = <R>(initial: Session.Session, mode: Clarify.Mode, runUnit: ResearchUnit.Runner<R>) =>
  Effect.flatMap(open(initial, mode, runUnit), (run) => within(run, steps(run)))
