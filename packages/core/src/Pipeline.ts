/**
 * The research pipeline: clarify -> brief -> supervision rounds of parallel research units -> synthesis, over the
 * ports in context. The session is checkpointed to the `SessionStore` after every phase, every finished research unit
 * and every supervision round, and locked for the run; `resume` continues a stored session from its last checkpoint
 * without redoing finished phases or finished research units, nor sending again a search, extraction or summary an
 * earlier run was answered (they are journaled beside the session while it runs).
 *
 * Here a session is begun or continued (a slot, its lock, its stored state); the phases of each run, in order over
 * what the run shares, are in `phases/Run.ts`.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import type { ContentExtractor } from "./ContentExtractor.js"
import {
  ResearchInvalidInput,
  type ModelMalformedOutput,
  type ProviderError,
  type ResearchSessionBusy,
  type ResearchSessionCorrupt,
  type ResearchSessionNotFound,
  type Ungrounded
} from "./Errors.js"
import type * as ModelRouter from "./ModelRouter.js"
import * as Checkpoint from "./phases/Checkpoint.js"
import * as Clarify from "./phases/Clarify.js"
import * as Continuation from "./phases/Continuation.js"
import * as Review from "./phases/Review.js"
import * as ResearchUnit from "./phases/ResearchUnit.js"
import { drive } from "./phases/Run.js"
import * as ResearchConfig from "./ResearchConfig.js"
import * as ResearchEvents from "./ResearchEvents.js"
import type { SearchProvider } from "./SearchProvider.js"
import * as Session from "./Session.js"
import * as SessionLimit from "./SessionLimit.js"
import { SessionStore } from "./SessionStore.js"
import type { Summarizer } from "./Summarizer.js"
import * as NewSession from "./internal/session/newSession.js"
import * as ResumeSettings from "./internal/session/resumeSettings.js"
import * as SessionRecord from "./internal/session/sessionRecord.js"
import * as Telemetry from "./Telemetry.js"

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
  /**
   * A new budget (either field left out keeps the stored one). It replaces the stored budget; when the budget is what
   * stopped research, research goes on. One that does not exceed what the session has spent is `ResearchInvalidInput`.
   */
  readonly budget?: ResumeSettings.BudgetChange | undefined
  /**
   * The decision about the plan of a session awaiting review (`awaiting_review`): approve, edit or cancel. Without it,
   * the `UserInput` in context is asked; where there is none, research goes on as planned.
   */
  readonly review?: Review.Decision | undefined
  /** A direction to research further: a completed session is reopened in it (`extend`). */
  readonly direction?: string | undefined
  /** The supervision rounds a continuation may run; `Continuation.defaultRounds` when left out. */
  readonly rounds?: number | undefined
}

/**
 * What `research` can fail with: a provider's error (a model's, once its retries are spent: see `Resilience`), a
 * model's answer that never decoded, a run that found no source and must rest on one, a session id that is taken by
 * another run or stored corrupt, and input that was refused.
 */
export type ResearchFailure =
  | ProviderError
  | ModelMalformedOutput
  | Ungrounded
  | ResearchSessionCorrupt
  | ResearchSessionBusy
  | ResearchInvalidInput

/** What `resume` can fail with: what `research` can, and an id that no stored session has. */
export type ResumeFailure = ResearchFailure | ResearchSessionNotFound

/**
 * What the pipeline needs in context. `ResearchEvents`, `UserInput`, `Pricing` and `SessionLimit` are used when
 * present.
 */
export type Requirements = ModelRouter.ModelRouter | SearchProvider | ContentExtractor | Summarizer | SessionStore

// =============================================================================
// Helpers
// =============================================================================

/** A new session id: the UTC time and six random characters, e.g. `dr-20260301-142530-k3x9qa`. */
export const newSessionId: Effect.Effect<string> = NewSession.newSessionId

const decodeConfig = NewSession.decodeConfig

// =============================================================================
// Beginning and continuing a session
// =============================================================================

type Interruptible = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>

/**
 * Begins the research of a session its run has locked, stored as it was asked for (new, or queued): stores it running,
 * then researches. Called uninterruptibly, so that a cancel that comes meanwhile (a client's, right after it was told
 * the run started) waits for the session to be stored; the run is stopped once its research may be.
 */
const begin = <R>(
  runUnit: ResearchUnit.Runner<R>,
  interruptible: Interruptible,
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

/** Locks a new session's id, makes sure nothing is stored under it, and begins its research. */
const beginNew = <R>(
  runUnit: ResearchUnit.Runner<R>,
  interruptible: Interruptible,
  asked: { readonly id: string; readonly query: string; readonly config: ResearchConfig.ResearchConfig },
  options: ResearchOptions | undefined,
  mode: Clarify.Mode
) =>
  Effect.gen(function* () {
    const store = yield* SessionStore
    yield* store.lock(asked.id)
    const existing = yield* Effect.either(store.load(asked.id))
    if (existing._tag === "Right") {
      return yield* Effect.fail(
        new ResearchInvalidInput({ reason: `a session with id ${asked.id} already exists; resume it instead` })
      )
    }
    if (existing.left._tag !== "ResearchSessionNotFound") return yield* Effect.fail(existing.left)
    const session = yield* SessionRecord.newSession(asked.id, asked.query, asked.config, options?.createdAt, "running")
    return yield* begin(runUnit, interruptible, session, mode)
  })

const researchWith = <R>(runUnit: ResearchUnit.Runner<R>, query: string, options?: ResearchOptions) =>
  Effect.gen(function* () {
    if (query.trim() === "") return yield* Effect.fail(new ResearchInvalidInput({ reason: "the question is empty" }))
    const config = yield* decodeConfig(options?.config)
    const id = yield* Session.validateId(options?.sessionId ?? (yield* newSessionId))
    yield* Effect.annotateCurrentSpan(Telemetry.attributes.sessionId, id)
    const mode = options?.clarification ?? (yield* Clarify.defaultMode)
    // With a `SessionLimit` in context, the run waits for a slot before it locks or creates its session; stopped
    // while it waits, it stores the session cancelled.
    let began = false
    return yield* SessionLimit.withSlot(
      // From its lock to its first checkpoint a new session is made whole or not at all.
      Effect.scoped(
        Effect.uninterruptibleMask((interruptible) =>
          Effect.suspend(() => {
            began = true
            return beginNew(runUnit, interruptible, { id, query, config }, options, mode)
          })
        )
      )
    ).pipe(
      Effect.onInterrupt(() =>
        began
          ? Effect.void
          : SessionRecord.storedCancelled(SessionRecord.newSession(id, query, config, options?.createdAt, "cancelled"))
      ),
      ResearchEvents.withSessionId(id)
    )
  }).pipe((run) => Telemetry.sessionRun("Pipeline.research", options?.sessionId, undefined, run))

/** A stored session with the answer to its awaited question folded in (asked of the `UserInput` when none came). */
const withAnswer = (stored: Session.Session, answer: string | undefined) =>
  Effect.gen(function* () {
    if (stored.status !== "awaiting_clarification" || stored.clarification === undefined) return stored
    const question = stored.clarification.decision.question
    return Checkpoint.patch(stored, {
      clarification: Clarify.answered(stored.clarification, answer ?? (yield* Clarify.askNow(question)))
    })
  })

/** Runs a stored session on once its run has locked it: a queued one begins, any other continues from its checkpoint. */
const runStored = <R>(
  runUnit: ResearchUnit.Runner<R>,
  interruptible: Interruptible,
  id: string,
  options: ResumeOptions | undefined,
  mode: Clarify.Mode
) =>
  Effect.gen(function* () {
    const store = yield* SessionStore
    yield* store.lock(id)
    const stored = yield* Effect.flatMap(store.load(id), (loaded) => ResumeSettings.withBudget(loaded, options?.budget))
    if (options?.answer !== undefined && stored.status !== "awaiting_clarification") {
      return yield* new ResearchInvalidInput({
        reason: `session ${id} is not waiting for an answer (its status is ${stored.status})`
      })
    }
    if (options?.review !== undefined && stored.status !== "awaiting_review") {
      return yield* new ResearchInvalidInput({
        reason: `session ${id} is not waiting for its plan to be reviewed (its status is ${stored.status})`
      })
    }
    if (stored.status === "completed" && options?.direction === undefined) return stored
    if (options?.direction !== undefined && stored.status !== "completed") {
      return yield* new ResearchInvalidInput({
        reason: `session ${id} is not finished (its status is ${stored.status})`
      })
    }
    // A continuation is stored reopened before research goes on: a crash right after leaves one `resume` carries on.
    const direction = options?.direction
    const current = direction === undefined ? stored : yield* Continuation.stored(stored, direction, options?.rounds)
    if (current.status === "queued") {
      const now = yield* Clock.currentTimeMillis
      return yield* begin(
        runUnit,
        interruptible,
        Checkpoint.patch(current, { status: "running", updatedAt: now }),
        mode
      )
    }
    return yield* interruptible(
      Effect.gen(function* () {
        const answered = yield* withAnswer(current, options?.answer)
        // The decision is stored before research goes on: a crash right after it does not lose it.
        // Stamped with its time, so that whoever follows the session from the store sees that it moved.
        const session =
          options?.review === undefined
            ? answered
            : Checkpoint.patch(yield* Review.apply(answered, options.review), {
                updatedAt: yield* Clock.currentTimeMillis
              })
        if (options?.review !== undefined) yield* store.save(session)
        if (options?.review?.action === "cancel") return session
        const events = yield* SessionRecord.recordingEvents(id)
        return yield* Effect.zipRight(Telemetry.publishTrace, drive(session, mode, runUnit)).pipe(
          Effect.provideService(ResearchEvents.ResearchEvents, events)
        )
      })
    )
  })

/** Runs a stored session on from its checkpoint; `queued` when it was stored queued, its research not begun. */
const continueSession = <R>(
  runUnit: ResearchUnit.Runner<R>,
  id: string,
  options: ResumeOptions | undefined,
  queued: boolean
) =>
  Effect.gen(function* () {
    const mode = options?.clarification ?? (yield* Clarify.defaultMode)
    return yield* SessionLimit.withSlot(
      Effect.scoped(Effect.uninterruptibleMask((interruptible) => runStored(runUnit, interruptible, id, options, mode)))
    ).pipe(
      // A queued session stopped before its research began (while it waited for a slot) is kept, cancelled.
      Effect.onInterrupt(() => (queued ? SessionRecord.cancelledIfQueued(id) : Effect.void)),
      ResearchEvents.withSessionId(id)
    )
  })

const resumeWith = <R>(runUnit: ResearchUnit.Runner<R>, sessionId: string, options?: ResumeOptions) =>
  Effect.gen(function* () {
    const id = yield* Session.validateId(sessionId)
    const store = yield* SessionStore
    // An unknown id fails here, before the lock writes anything for it (the file store makes a folder to lock).
    const stored = yield* store.load(id)
    // A queued session's first run is its research, traced as a new session's is.
    if (stored.status === "queued") {
      return yield* Telemetry.sessionRun(
        "Pipeline.research",
        id,
        undefined,
        continueSession(runUnit, id, options, true)
      )
    }
    const previous = Telemetry.lastTrace(yield* Effect.orElseSucceed(store.events(id), () => []))
    return yield* Telemetry.sessionRun("Pipeline.resume", id, previous, continueSession(runUnit, id, options, false))
  })

/** `research` and `resume` over a given research unit runner. */
export const make = <R>(runUnit: ResearchUnit.Runner<R>) => ({
  research: (query: string, options?: ResearchOptions) => researchWith(runUnit, query, options),
  resume: (sessionId: string, options?: ResumeOptions) => resumeWith(runUnit, sessionId, options)
})

const pipeline = make(ResearchUnit.run)

/** Researches a question: the returned session is completed (report in `session.report`) or awaiting clarification. */
export const research: (
  query: string,
  options?: ResearchOptions
) => Effect.Effect<Session.Session, ResearchFailure, Requirements> = pipeline.research

/**
 * Stores a new session of `query`, queued: its question and settings, nothing researched, so that its id can be given
 * out before its research begins (a server's acknowledgement); `resume` begins it. Durable once this returns, as the
 * store's `save` is (SQLite and PostgreSQL commit). A given id must be new: one that is stored already is
 * `ResearchInvalidInput`; without one, a new id is made (and not looked for in the store: ids are random).
 */
export const enqueue = (
  query: string,
  options?: {
    readonly sessionId?: string | undefined
    readonly config?: ResearchOptions["config"]
    readonly createdAt?: number | undefined
  }
): Effect.Effect<Session.Session, ResearchInvalidInput | ResearchSessionCorrupt, SessionStore> =>
  Effect.gen(function* () {
    if (query.trim() === "") return yield* Effect.fail(new ResearchInvalidInput({ reason: "the question is empty" }))
    const config = yield* decodeConfig(options?.config)
    const given = options?.sessionId
    const id = given === undefined ? yield* newSessionId : yield* Session.validateId(given)
    const store = yield* SessionStore
    if (given !== undefined) {
      const existing = yield* Effect.either(store.load(id))
      if (existing._tag === "Right") {
        return yield* new ResearchInvalidInput({ reason: `a session with id ${id} already exists; resume it instead` })
      }
      if (existing.left._tag !== "ResearchSessionNotFound") return yield* existing.left
    }
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
): Effect.Effect<void, ResearchInvalidInput, SessionStore> =>
  Effect.gen(function* () {
    if (query.trim() === "") return yield* Effect.fail(new ResearchInvalidInput({ reason: "the question is empty" }))
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
) => Effect.Effect<Session.Session, ResumeFailure, Requirements> = pipeline.resume
