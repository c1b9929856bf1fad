/**
 * What a runner of the research cluster does with a session's messages (`Cluster.ts` defines the messages and routes
 * them here): a `Run` starts or resumes the session, a `Resume` brings an answer or a plan's review, a `Continue` goes
 * deeper into a finished session (a run like the others: it takes its turn, and a runner that dies leaves it to the
 * shard's next owner, which goes on from its checkpoint), and an `Ask` answers a follow-up question from the session's
 * stored sources with this runner's models, its reply the answer as the session keeps it.
 */
import {
  Errors,
  FollowUp,
  Pipeline,
  type ResearchConfig,
  Review,
  type Session,
  SessionStore
} from "@deep-research/core"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { saidWhenHeld, saidWhenStopped, whenDatabaseAnswers, whenFree } from "../hosted/sessionHolds.js"

/** Whether a plan to review waits for a decision sent later (`await`) or the run goes on as planned (`proceed`). */
export const ReviewWait = Schema.Literal("await", "proceed")
export type ReviewWait = typeof ReviewWait.Type

/** A new budget given with a follow-up (either field left out keeps the stored one). */
export const BudgetChange = Schema.Struct({
  maxTokens: Schema.optional(Schema.Number),
  maxUsd: Schema.optional(Schema.Number)
})

/** What an `Ask` fails with, as its reply carries it (`FollowUp.Failure`). */
export const AskFailure = Schema.Union(
  Errors.ProviderError,
  Errors.ModelMalformedOutput,
  Errors.ResearchInvalidInput,
  Errors.ResearchSessionNotFound,
  Errors.ResearchSessionCorrupt,
  Errors.ResearchSessionBusy
)

/**
 * A session the cluster leaves alone. Not `cancelled`: on a cluster that is what a session interrupted by its runner's
 * shutdown or a shard's move is left as, and the shard's next owner resumes it.
 */
const terminal: ReadonlySet<Session.Session["status"]> = new Set([
  "completed",
  "awaiting_clarification",
  "awaiting_review",
  "failed"
])

/** Whether a session has stopped: done, waiting for an answer or a review, or failed. */
export const isSettled = (session: Session.Session): boolean => terminal.has(session.status)

/**
 * What a runner does with `Run`: a session not yet in the store is started; one that is there and still running (its
 * runner died) or cancelled (its runner stopped, or its shard moved) is resumed from its last checkpoint, once no other
 * run holds it; one that has settled (completed, waiting for an answer or a review, failed) is left as it is. A plan to
 * review (`review`) waits in the store, `awaiting_review`, for the decision a `Resume` brings, unless the sender said
 * nobody can answer.
 */
export const runSession = (
  sessionId: string,
  payload: {
    readonly question: string
    readonly config: ResearchConfig.ResearchConfig
    readonly clarification: "await" | "proceed"
    readonly review?: ReviewWait | undefined
    readonly sentAt?: number | undefined
  }
) =>
  Effect.gen(function* () {
    const store = yield* SessionStore.SessionStore
    const existing = yield* Effect.either(store.load(sessionId))
    if (Either.isRight(existing)) {
      if (isSettled(existing.right)) return existing.right
      return yield* Pipeline.resume(sessionId).pipe(
        saidWhenHeld(sessionId, `cluster: session ${sessionId} running (resumed from its last checkpoint)`)
      )
    }
    if (existing.left._tag !== "ResearchSessionNotFound") return yield* existing.left
    return yield* Pipeline.research(payload.question, {
      sessionId,
      config: payload.config,
      clarification: payload.clarification,
      createdAt: payload.sentAt
    }).pipe(saidWhenHeld(sessionId, `cluster: session ${sessionId} running`))
  }).pipe(
    (work) => whenDatabaseAnswers(sessionId, whenFree(sessionId, work)),
    Effect.provideService(Review.ReviewMode, payload.review ?? "await"),
    Effect.tap((session) => Effect.logInfo(`cluster: session ${sessionId} settled ${session.status}`)),
    saidWhenStopped(sessionId),
    Effect.asVoid,
    // A session that fails is marked failed in the store by the pipeline; the message is answered all the same, so
    // that the cluster does not deliver it again.
    Effect.catchAll((error) => Effect.logWarning(`session ${sessionId}: ${error.message}`)),
    Effect.annotateLogs("session", sessionId)
  )

/**
 * What a runner does with `Resume`. A decision about a plan is applied to a session that waits for one; delivered again
 * (its runner died after storing it), it finds the session already decided: one left running goes on from its
 * checkpoint, any other is left as it is.
 */
export const resumeSession = (
  sessionId: string,
  payload: {
    readonly answer?: string | undefined
    readonly decision?: Review.Decision | undefined
    readonly review?: ReviewWait | undefined
  }
) =>
  Effect.gen(function* () {
    const { answer, decision } = payload
    if (decision !== undefined) {
      const stored = yield* Effect.flatMap(SessionStore.SessionStore, (store) => store.load(sessionId))
      if (stored.status !== "awaiting_review") {
        if (stored.status !== "running") return stored
        yield* Effect.logInfo(`cluster: session ${sessionId} was reviewed already; resumed from its last checkpoint`)
        return yield* Pipeline.resume(sessionId)
      }
      yield* Effect.logInfo(`cluster: session ${sessionId} plan ${Review.decisionWord(decision)}`)
    }
    return yield* Pipeline.resume(sessionId, { answer, review: decision })
  }).pipe(
    (work) => whenDatabaseAnswers(sessionId, whenFree(sessionId, work)),
    Effect.provideService(Review.ReviewMode, payload.review ?? "await"),
    Effect.asVoid,
    Effect.catchAll((error) => Effect.logWarning(`session ${sessionId}: ${error.message}`)),
    Effect.annotateLogs("session", sessionId)
  )

/**
 * What a runner does with `Ask`: the question answered from the session's stored sources (`FollowUp.ask`), kept with
 * the session; the reply is the answer, or why there is none. `answered` is how many answers the session kept when the
 * message was sent: delivered again (its runner died after keeping the answer, before replying), it finds the answer
 * kept and replies with it rather than paying for it twice. Not in the session's turn: a session a run holds is
 * `ResearchSessionBusy` at once, as it is on a single server.
 */
export const askSession = (
  sessionId: string,
  payload: {
    readonly question: string
    readonly answered: number
    readonly budget?: typeof BudgetChange.Type | undefined
  }
) =>
  Effect.gen(function* () {
    const stored = yield* Effect.flatMap(SessionStore.SessionStore, (store) => store.load(sessionId))
    const kept = stored.answers.slice(payload.answered).find((answer) => answer.question === payload.question.trim())
    if (kept !== undefined) return kept
    const { answer } = yield* FollowUp.ask(sessionId, payload.question, { budget: payload.budget })
    yield* Effect.logInfo(`cluster: session ${sessionId} answered a follow-up question (covered: ${answer.covered})`)
    return answer
  }).pipe((work) => whenDatabaseAnswers(sessionId, work), Effect.annotateLogs("session", sessionId))

/**
 * What a runner does with `Continue`: the finished session goes deeper in `direction` (`FollowUp.extend`).
 * `continuations` is how many the session had when the message was sent: delivered again (its runner died), it finds
 * this one already begun, and a session left running goes on from its checkpoint, any other is left as it is.
 */
export const continueSession = (
  sessionId: string,
  payload: {
    readonly direction: string
    readonly rounds?: number | undefined
    readonly budget?: typeof BudgetChange.Type | undefined
    readonly continuations: number
  }
) =>
  Effect.gen(function* () {
    const stored = yield* Effect.flatMap(SessionStore.SessionStore, (store) => store.load(sessionId))
    if (stored.continuations.length > payload.continuations || stored.status !== "completed") {
      if (isSettled(stored)) return stored
      return yield* Pipeline.resume(sessionId).pipe(
        saidWhenHeld(sessionId, `cluster: session ${sessionId} continuation resumed from its last checkpoint`)
      )
    }
    return yield* FollowUp.extend(sessionId, payload.direction, {
      rounds: payload.rounds,
      budget: payload.budget
    }).pipe(saidWhenHeld(sessionId, `cluster: session ${sessionId} going deeper`))
  }).pipe(
    (work) => whenDatabaseAnswers(sessionId, whenFree(sessionId, work)),
    Effect.provideService(Review.ReviewMode, "proceed"),
    Effect.tap((session) => Effect.logInfo(`cluster: session ${sessionId} settled ${session.status}`)),
    saidWhenStopped(sessionId),
    Effect.asVoid,
    Effect.catchAll((error) => Effect.logWarning(`session ${sessionId}: ${error.message}`)),
    Effect.annotateLogs("session", sessionId)
  )
