/**
 * The research pipeline: clarify -> brief -> supervision rounds of parallel research units -> synthesis, over the
 * ports in context. The session is checkpointed to the `SessionStore` after every phase, every finished research unit
 * and every supervision round, and locked for the run; `resume` continues a stored session from its last checkpoint
 * without redoing finished phases or finished research units, nor sending again a search, extraction or summary an
 * earlier run was answered (they are journaled beside the session while it runs).
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Random from "effect/Random"
import * as Budget from "./Budget.js"
import type { ContentExtractor } from "./ContentExtractor.js"
import { InvalidInput, type ResearchError, type SessionCorrupt, Ungrounded } from "./Errors.js"
import * as ModelRouter from "./ModelRouter.js"
import * as ResearchUnit from "./phases/ResearchUnit.js"
import * as SessionRequests from "./SessionRequests.js"
import * as Brief from "./phases/Brief.js"
import * as Checkpoint from "./phases/Checkpoint.js"
import * as Clarify from "./phases/Clarify.js"
import * as Supervisor from "./phases/Supervisor.js"
import * as Synthesis from "./phases/Synthesis.js"
import * as Verification from "./phases/Verification.js"
import * as Pricing from "./Pricing.js"
import type { Report } from "./Research.js"
import * as ResearchConfig from "./ResearchConfig.js"
import * as ResearchEvents from "./ResearchEvents.js"
import { QuestionLanguage, type SearchProvider } from "./SearchProvider.js"
import * as Language from "./internal/text/language.js"
import * as Session from "./Session.js"
import * as SessionLimit from "./SessionLimit.js"
import { SessionStore } from "./SessionStore.js"
import type { Summarizer } from "./Summarizer.js"
import * as SessionRecord from "./internal/session/sessionRecord.js"
import * as Telemetry from "./Telemetry.js"
import * as Tokens from "./Tokens.js"
import type * as Usage from "./Usage.js"
import * as UsageLedger from "./UsageLedger.js"

// =============================================================================
// Options
// =============================================================================

/** Options of a research run. */
export interface ResearchOptions {
  readonly config?: ResearchConfig.ResearchConfig | Partial<typeof ResearchConfig.ResearchConfig.Encoded> | undefined
  /** The session's id; a new one by default. */
  readonly sessionId?: string | undefined
  /**
   * What to do when clarification is needed: ask the `UserInput` in context ("ask", the default when one is
   * provided), go on with the model's understanding as constraints ("proceed", the default otherwise), or stop with
   * status awaiting_clarification ("await", for callers that answer later through `resume`).
   */
  readonly clarification?: Clarify.Mode | undefined
  /**
   * When the session was asked for, in milliseconds since the epoch, when that was before this run starts (a session
   * sent to a cluster and started later by a runner); the run's start by default.
   */
  readonly createdAt?: number | undefined
}

/** Options of `resume`. */
export interface ResumeOptions {
  /**
   * The answer to the clarifying question of a session awaiting one. Without it, the `UserInput` in context is asked;
   * where there is none, research goes on with the clarification's understanding as constraints.
   */
  readonly answer?: string | undefined
  /** What to do when clarification is needed, as `ResearchOptions.clarification`: a queued session's first run asks. */
  readonly clarification?: Clarify.Mode | undefined
}

/**
 * What the pipeline needs in context. `ResearchEvents`, `UserInput`, `Pricing` and `SessionLimit` are used when
 * present.
 */
export type Requirements = ModelRouter.ModelRouter | SearchProvider | ContentExtractor | Summarizer | SessionStore

// =============================================================================
// Helpers
// =============================================================================

const idAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

/** A new session id: the UTC time and six random characters, e.g. `dr-20260301-142530-k3x9qa`. */
export const newSessionId: Effect.Effect<string> = Effect.gen(function* () {
  const now = yield* Clock.currentTimeMillis
  const stamp = new Date(now).toISOString().slice(0, 19).replace(/[-:]/g, "").replace("T", "-")
  let suffix = ""
  for (let i = 0; i < 6; i++) suffix += idAlphabet[yield* Random.nextIntBetween(0, idAlphabet.length)] ?? "x"
  return `dr-${stamp}-${suffix}`
})

const decodeConfig = (
  config: ResearchOptions["config"]
): Effect.Effect<ResearchConfig.ResearchConfig, InvalidInput> => {
  if (config instanceof ResearchConfig.ResearchConfig) return Effect.succeed(config)
  // No configuration is the defaults, decoded once rather than for every session.
  if (config === undefined) return Effect.succeed(ResearchConfig.defaults)
  return ResearchConfig.decode(config).pipe(
    Effect.mapError(
      (error) =>
        new InvalidInput({
          reason: `the research configuration is invalid:\n${ParseResult.TreeFormatter.formatErrorSync(error)}`
        })
    )
  )
}

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
  }
}

// =============================================================================
// The run
// =============================================================================

/** The running session, each of whose checkpoints also writes the request journal, so that the two keep pace. */
const journalingCheckpoints = (handle: Checkpoint.Handle, journal: SessionRequests.Journal): Checkpoint.Handle => ({
  ...handle,
  update: (label, change) => Effect.tap(handle.update(label, change), () => journal.flush),
  phase: (phase, body, record) => Effect.tap(handle.phase(phase, body, record), () => journal.flush)
})

const drive = <R>(initial: Session.Session, mode: Clarify.Mode, runUnit: ResearchUnit.Runner<R>) =>
  Effect.gen(function* () {
    const store = yield* SessionStore
    const config = initial.config
    const ledger = yield* UsageLedger.make(initial.usage)
    const table = Option.getOrElse(yield* Effect.serviceOption(Pricing.Pricing), () => Pricing.defaultTable)
    const budget = yield* Budget.make(config.budget, UsageLedger.totals(initial.usage), {
      table,
      reportModel: (yield* ModelRouter.ModelRouter).resolve("report").model
    })
    // What earlier runs of the session were answered is not asked again; what this run is answered is journaled.
    const journal = yield* SessionRequests.journal(initial.id)
    const session = journalingCheckpoints(yield* Checkpoint.make(initial, ledger), journal)
    const done = (phase: Usage.Phase) => Effect.map(session.get, (s) => isDone(s, phase))
    // Why the report rests on no source, when it does and the run requires sources.
    const ungroundedReason = (report: Report): string | undefined =>
      config.requireSources && report.grounding?.sources === 0 ? (report.grounding.reason ?? "no source") : undefined

    const steps = Effect.gen(function* () {
      // A resumed run starts afresh: the failure an earlier run stopped on is no longer the session's. (A new
      // session was saved running, and needs no second save.)
      if (initial.status !== "running" || initial.error !== undefined) {
        yield* session.update("running", (s) => {
          const { error: _earlier, ...rest } = s
          return new Session.Session({ ...rest, status: "running" })
        })
      }

      // Each phase's first call is checked against the budget like every research call: a budget too small for it
      // skips the phase (no question asked, the original question as the brief) and keeps the reserve for the report.
      const affordable = (role: Usage.Role) =>
        Effect.flatMap(ModelRouter.forRole(role), (model) =>
          budget.covers({ role, model: model.model, inputTokens: Tokens.estimateTokens(initial.query) + 1_000 })
        )

      if (config.allowClarification && !(yield* done("clarification")) && (yield* affordable("clarification"))) {
        const outcome = yield* session.phase("clarification", Clarify.run(initial.query, mode), (outcome, s) =>
          Checkpoint.patch(s, {
            clarification: outcome.record,
            status: outcome.awaiting ? "awaiting_clarification" : "running"
          })
        )
        if (outcome.awaiting) return yield* session.get
      }

      const constraints = Clarify.constraints((yield* session.get).clarification)

      if (!(yield* done("brief"))) {
        yield* session.phase(
          "brief",
          (yield* affordable("brief"))
            ? Brief.run(initial.query, (yield* session.get).clarification)
            : Brief.fallback(initial.query),
          (outcome, s) => Checkpoint.patch(s, { brief: outcome.brief, briefFallback: outcome.fallback })
        )
      }
      const brief = (yield* session.get).brief

      if (!(yield* done("supervision"))) {
        yield* session.phase(
          "supervision",
          Effect.gen(function* () {
            const outcome = yield* Supervisor.run({
              query: initial.query,
              brief,
              constraints,
              config,
              session,
              budget,
              runUnit
            })
            // A supervisor that fails before anything was found leaves nothing to write about: the run fails (and
            // can be resumed); with findings in hand, the report is written from them.
            if (outcome.error !== undefined && Synthesis.completedResults(yield* session.get).length === 0) {
              return yield* Effect.fail(outcome.error)
            }
            return outcome
          }).pipe(
            // Providers with an edition per language (Wikipedia) search the question's.
            Effect.provideService(QuestionLanguage, Language.forReport(initial.query, brief?.language).code)
          ),
          (outcome, s) => Checkpoint.patch(s, { supervisionStopReason: outcome.reason })
        )
      }

      if (!(yield* done("synthesis"))) {
        const current = yield* session.get
        // The report file first, then one checkpoint with the report, the completion mark and the status: a
        // completed session always has its report file.
        yield* session.phase(
          "synthesis",
          Effect.tap(Synthesis.run({ query: initial.query, brief, constraints, session: current }), (report) =>
            store.saveReport(current.id, report.markdown)
          ),
          // A run that requires sources and found none is not completed: it fails below, its report kept. A report still
          // to be checked is completed once it is.
          (report, s) =>
            Checkpoint.patch(s, {
              report,
              status: ungroundedReason(report) === undefined && !config.verify ? "completed" : s.status
            })
        )
      }
      // Every cited sentence checked against its sources (see phases/Verification.ts).
      if (config.verify && !(yield* done("verification"))) {
        yield* Verification.inSession(
          session,
          { query: initial.query, brief },
          (r) => ungroundedReason(r) === undefined
        )
      }
      const written = (yield* session.get).report
      const ungrounded = written === undefined ? undefined : ungroundedReason(written)
      if (ungrounded !== undefined) return yield* Effect.fail(new Ungrounded({ reason: ungrounded }))

      const finished = yield* session.get
      const completed =
        finished.status === "completed"
          ? finished
          : yield* session.update("completed", (s) => Checkpoint.patch(s, { status: "completed" }))
      // A completed session is never run again: its journal is of no more use.
      yield* journal.discard
      const spent = UsageLedger.totals(completed.usage)
      yield* ResearchEvents.publish({
        _tag: "SessionCompleted",
        durationMillis: completed.metrics.reduce((n, m) => n + m.durationMillis, 0),
        tokens: spent.tokens,
        costUsd: spent.costUsd
      })
      return completed
    })

    return yield* steps.pipe(
      // Searches, extractions and summaries are shared by the session's researchers and its runs: none is made twice.
      SessionRequests.shareJournaled(journal),
      Effect.provideService(UsageLedger.UsageLedger, ledger),
      // Every model call of the run is reserved against its budget (see `ModelRouter`).
      Effect.provideService(Budget.Budget, budget),
      Effect.tapError((error: ResearchError) =>
        Effect.zipRight(
          Effect.ignore(session.update("failed", (s) => Checkpoint.patch(s, { status: "failed", error }))),
          ResearchEvents.publish({ _tag: "SessionFailed", error: error.message })
        )
      ),
      // A defect (a bug, not an error of the union) still leaves the session marked failed, resumable.
      Effect.tapDefect((defect) =>
        Cause.isInterruptedOnly(defect)
          ? Effect.void
          : Effect.zipRight(
              Effect.ignore(session.update("failed", (s) => Checkpoint.patch(s, { status: "failed" }))),
              ResearchEvents.publish({ _tag: "SessionFailed", error: Cause.pretty(defect).slice(0, 2_000) })
            )
      ),
      Effect.onInterrupt(() =>
        Effect.zipRight(
          Effect.ignore(session.update("cancelled", (s) => Checkpoint.patch(s, { status: "cancelled" }))),
          ResearchEvents.publish({ _tag: "SessionCancelled" })
        )
      )
    )
  })

/** `research` and `resume` over a given research unit runner. */
export const make = <R>(runUnit: ResearchUnit.Runner<R>) => {
  /**
   * Begins the research of a session its run has locked, stored as it was asked for (new, or queued): stores it
   * running, then researches. Called uninterruptibly, so that a cancel that comes meanwhile (a client's, right after
   * it was told the run started) waits for the session to be stored; the run is stopped once its research may be.
   */
  const begin = (
    interruptible: <A, E, R2>(effect: Effect.Effect<A, E, R2>) => Effect.Effect<A, E, R2>,
    session: Session.Session,
    mode: Clarify.Mode
  ) =>
    Effect.gen(function* () {
      const store = yield* SessionStore
      yield* store.save(session)
      const events = yield* SessionRecord.recordingEvents(session.id)
      const research = ResearchEvents.publish({ _tag: "SessionStarted", query: session.query }).pipe(
        Effect.zipRight(Telemetry.publishTrace),
        Effect.zipRight(drive(session, mode, runUnit))
      )
      return yield* interruptible(research).pipe(
        // Stopped before the run's own checkpoints took over (its first event, its journal), the session is marked
        // cancelled here, never left stored as running with no run.
        Effect.onInterrupt(() => SessionRecord.cancelledIfRunning(session.id)),
        Effect.provideService(ResearchEvents.ResearchEvents, events)
      )
    })

  const research = (query: string, options?: ResearchOptions) =>
    Effect.gen(function* () {
      if (query.trim() === "") return yield* Effect.fail(new InvalidInput({ reason: "the question is empty" }))
      const config = yield* decodeConfig(options?.config)
      const id = yield* Session.validateId(options?.sessionId ?? (yield* newSessionId))
      yield* Effect.annotateCurrentSpan(Telemetry.attributes.sessionId, id)
      const store = yield* SessionStore
      const mode = options?.clarification ?? (yield* Clarify.defaultMode)
      // With a `SessionLimit` in context, the run waits for a slot before it locks or creates its session; stopped
      // while it waits, it stores the session cancelled.
      let began = false
      return yield* SessionLimit.withSlot(
        // From its lock to its first checkpoint a new session is made whole or not at all.
        Effect.scoped(
          Effect.uninterruptibleMask((interruptible) =>
            Effect.gen(function* () {
              began = true
              yield* store.lock(id)
              const existing = yield* Effect.either(store.load(id))
              if (existing._tag === "Right") {
                return yield* Effect.fail(
                  new InvalidInput({ reason: `a session with id ${id} already exists; resume it instead` })
                )
              }
              if (existing.left._tag !== "SessionNotFound") return yield* Effect.fail(existing.left)
              const session = yield* SessionRecord.newSession(id, query, config, options?.createdAt, "running")
              return yield* begin(interruptible, session, mode)
            })
          )
        )
      ).pipe(
        Effect.onInterrupt(() =>
          began
            ? Effect.void
            : SessionRecord.storedCancelled(
                SessionRecord.newSession(id, query, config, options?.createdAt, "cancelled")
              )
        ),
        ResearchEvents.withSessionId(id)
      )
    }).pipe((run) => Telemetry.sessionRun("Pipeline.research", options?.sessionId, undefined, run))

  const resume = (sessionId: string, options?: ResumeOptions) =>
    Effect.gen(function* () {
      const id = yield* Session.validateId(sessionId)
      const store = yield* SessionStore
      // An unknown id fails here, before the lock writes anything for it (the file store makes a folder to lock).
      const stored = yield* store.load(id)
      // A queued session's first run is its research, traced as a new session's is.
      if (stored.status === "queued") {
        return yield* Telemetry.sessionRun("Pipeline.research", id, undefined, continueSession(id, options, true))
      }
      const previous = Telemetry.lastTrace(yield* Effect.orElseSucceed(store.events(id), () => []))
      return yield* Telemetry.sessionRun("Pipeline.resume", id, previous, continueSession(id, options, false))
    })

  /** Runs a stored session on from its checkpoint; `queued` when it was stored queued, its research not begun. */
  const continueSession = (id: string, options: ResumeOptions | undefined, queued: boolean) =>
    Effect.gen(function* () {
      const store = yield* SessionStore
      const mode = options?.clarification ?? (yield* Clarify.defaultMode)
      return yield* SessionLimit.withSlot(
        Effect.scoped(
          Effect.uninterruptibleMask((interruptible) =>
            Effect.gen(function* () {
              yield* store.lock(id)
              const stored = yield* store.load(id)
              if (options?.answer !== undefined && stored.status !== "awaiting_clarification") {
                return yield* new InvalidInput({
                  reason: `session ${id} is not waiting for an answer (its status is ${stored.status})`
                })
              }
              if (stored.status === "completed") return stored
              if (stored.status === "queued") {
                const now = yield* Clock.currentTimeMillis
                return yield* begin(
                  interruptible,
                  Checkpoint.patch(stored, { status: "running", updatedAt: now }),
                  mode
                )
              }
              return yield* interruptible(
                Effect.gen(function* () {
                  const session =
                    stored.status === "awaiting_clarification" && stored.clarification !== undefined
                      ? Checkpoint.patch(stored, {
                          clarification: Clarify.answered(
                            stored.clarification,
                            options?.answer ?? (yield* Clarify.askNow(stored.clarification.decision.question))
                          )
                        })
                      : stored
                  const events = yield* SessionRecord.recordingEvents(id)
                  return yield* Effect.zipRight(Telemetry.publishTrace, drive(session, mode, runUnit)).pipe(
                    Effect.provideService(ResearchEvents.ResearchEvents, events)
                  )
                })
              )
            })
          )
        )
      ).pipe(
        // A queued session stopped before its research began (while it waited for a slot) is kept, cancelled.
        Effect.onInterrupt(() => (queued ? SessionRecord.cancelledIfQueued(id) : Effect.void)),
        ResearchEvents.withSessionId(id)
      )
    })

  return { research, resume }
}

const pipeline = make(ResearchUnit.run)

/** Researches a question: the returned session is completed (report in `session.report`) or awaiting clarification. */
export const research: (
  query: string,
  options?: ResearchOptions
) => Effect.Effect<Session.Session, ResearchError, Requirements> = pipeline.research

/**
 * Stores a new session of `query`, queued: its question and settings, nothing researched, so that its id can be given
 * out before its research begins (a server's acknowledgement); `resume` begins it. Durable once this returns, as the
 * store's `save` is (the file store syncs the file and its folders; PostgreSQL commits). The id must be new: one that
 * is stored already is `InvalidInput`.
 */
export const enqueue = (
  query: string,
  options?: {
    readonly sessionId?: string | undefined
    readonly config?: ResearchOptions["config"]
    readonly createdAt?: number | undefined
  }
): Effect.Effect<Session.Session, InvalidInput | SessionCorrupt, SessionStore> =>
  Effect.gen(function* () {
    if (query.trim() === "") return yield* Effect.fail(new InvalidInput({ reason: "the question is empty" }))
    const config = yield* decodeConfig(options?.config)
    const id = yield* Session.validateId(options?.sessionId ?? (yield* newSessionId))
    const store = yield* SessionStore
    const existing = yield* Effect.either(store.load(id))
    if (existing._tag === "Right") {
      return yield* new InvalidInput({ reason: `a session with id ${id} already exists; resume it instead` })
    }
    if (existing.left._tag !== "SessionNotFound") return yield* existing.left
    const session = yield* SessionRecord.newSession(id, query, config, options?.createdAt, "queued")
    yield* store.save(session)
    return session
  }).pipe(Effect.withSpan("Pipeline.enqueue"))

/**
 * Stores a session that was asked for and cancelled before any run of it started (one waiting in a queue of the
 * caller's, a cluster's): its question and settings, status cancelled, nothing researched, so that `resume` can run it
 * later. A session stored queued under that id (`enqueue`) is marked cancelled; one stored otherwise is left as it
 * is; a store that fails leaves nothing, said in the log.
 */
export const recordCancelled = (
  query: string,
  options: {
    readonly sessionId: string
    readonly config?: ResearchOptions["config"]
    readonly createdAt?: number | undefined
  }
): Effect.Effect<void, InvalidInput, SessionStore> =>
  Effect.gen(function* () {
    if (query.trim() === "") return yield* Effect.fail(new InvalidInput({ reason: "the question is empty" }))
    const config = yield* decodeConfig(options.config)
    const id = yield* Session.validateId(options.sessionId)
    yield* SessionRecord.storedCancelled(
      SessionRecord.newSession(id, query, config, options.createdAt, "cancelled")
    ).pipe(ResearchEvents.withSessionId(id))
  })

/**
 * Continues a stored session from its last checkpoint (with the answer to its clarifying question, when it awaits
 * one); a queued one (`enqueue`) begins its research. A completed session is returned as it is.
 */
export const resume: (
  sessionId: string,
  options?: ResumeOptions
) => Effect.Effect<Session.Session, ResearchError, Requirements> = pipeline.resume
