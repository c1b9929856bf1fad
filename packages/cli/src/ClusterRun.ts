/**
 * `deep-research "<question>" --database URL` and `deep-research resume <id> --database URL`: the session is sent to
 * the cluster (whichever runner holds its shard runs it), and this process follows its progress and report from the
 * PostgreSQL store; `--detach` prints the session's id and returns at once. Stopping this process (Ctrl-C) stops
 * only the following: the session runs on. A plan to review (`--review`) waits in the database; on a terminal it is
 * asked here and the decision sent to the session, elsewhere the run goes on as planned (detached, it waits for
 * `resume` or the HTTP API).
 */
import {
  Errors,
  Pipeline,
  type ResearchEvents,
  Review,
  type Session,
  SessionStore,
  UserInput
} from "@deep-research/core"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { randomUUID } from "node:crypto"
import * as Cluster from "./Cluster.js"
import * as ClusterQueue from "./ClusterQueue.js"
import type * as CliConfig from "./CliConfig.js"
import * as Progress from "./Progress.js"
import { conflict } from "./RunSchema.js"
import * as Store from "./Store.js"
import { reportFile, reportSummary, unwrittenReport, writeReport } from "./internal/terminal/reportSummary.js"
import { userInput } from "./internal/terminal/userInput.js"
import type { Refusal } from "./Worker.js"

const sink: Progress.Sink = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
  width: () => process.stderr.columns ?? 100
}

const say = (resolved: CliConfig.Resolved, text: string) =>
  Effect.sync(() => (resolved.json ? process.stderr : process.stdout).write(`${text}\n`))

/** The store and a cluster client, over the database of the configuration. */
const connect = (resolved: CliConfig.Resolved) =>
  Effect.gen(function* () {
    const url = resolved.credentials.databaseUrl
    if (url === undefined) return yield* Effect.fail<Refusal>({ code: 2, message: "no database was given" })
    yield* Effect.mapError(Store.checkDatabase(resolved.credentials), (error) => ({ code: 2, message: error.message }))
    return Layer.merge(
      Store.storeLayer(resolved.storeDir, resolved.credentials),
      Cluster.clientLayer(url, Cluster.advisoryLocksFromEnv(process.env))
    ).pipe(Layer.mapError((error): Refusal => ({ code: 2, message: `cannot join the cluster: ${error.message}` })))
  })

/**
 * Renders the session's events as the store receives them, until the session settles after `since` (its checkpoint
 * time when it was sent); returns it. The log is read from `from` on, and from where it was last read, so each event
 * is shown once.
 */
export const follow = (sessionId: string, renderer: Progress.Renderer, since = 0, from = 0) =>
  Effect.gen(function* () {
    const store = yield* SessionStore.SessionStore
    let shown = from
    let ended = false
    const step = Effect.gen(function* () {
      const events: ReadonlyArray<ResearchEvents.ResearchEvent> = yield* store
        .events(sessionId)
        .pipe(Effect.catchTag("ResearchSessionNotFound", () => Effect.succeed([])))
      for (const event of events.slice(shown)) {
        renderer.onEvent(event)
        if (Cluster.isLastEvent(event)) ended = true
      }
      shown = Math.max(shown, events.length)
      const session = yield* store.load(sessionId).pipe(Effect.option)
      return session._tag === "Some" && session.value.updatedAt > since && Cluster.isSettled(session.value)
        ? session.value
        : undefined
    })
    let settled = yield* step
    // Said once, when nothing has come of the session for a while: most likely no worker is running.
    let polls = 0
    while (settled === undefined) {
      yield* Effect.sleep("300 millis")
      settled = yield* step
      polls++
      if (polls === 50 && shown === from) {
        renderer.log(
          `Nothing from session ${sessionId} after 15 s: is a deep-research worker running on this database? ` +
            "The session waits in the database until one is."
        )
      }
    }
    // The run saved its final status before it published its last event: read on until that event is shown (or a few
    // seconds, for a run that stopped without one).
    for (let after = 0; !ended && after < Cluster.pollsForLastEvent; after++) {
      yield* Effect.sleep("300 millis")
      yield* step
    }
    renderer.finish()
    return settled
  })

const conclude = (resolved: CliConfig.Resolved, session: Session.Session | undefined, resumeHint: string) =>
  Effect.gen(function* () {
    if (session === undefined) return yield* Effect.fail<Refusal>({ code: 1, message: "the session was lost" })
    if (session.status === "awaiting_review" || (session.status === "cancelled" && session.review !== undefined)) {
      const plan = Review.planOf(session)
      const waiting =
        session.status === "awaiting_review" ? "waits for its plan to be reviewed" : "was cancelled at review"
      return yield* say(
        resolved,
        `${plan === undefined ? "" : `${Review.describe(plan)}\n\n`}The session ${session.id} ${waiting}; its plan ` +
          `is kept. Review it with: ${resumeHint} (on a terminal), or POST /api/sessions/${session.id}/review`
      )
    }
    if (session.status === "awaiting_clarification") {
      const question = session.clarification?.decision.question ?? ""
      return yield* say(
        resolved,
        `The question needs clarification: ${question}\nAnswer it with: ${resumeHint} --answer "..."`
      )
    }
    if (session.status !== "completed" || session.report === undefined) {
      return yield* Effect.fail<Refusal>({
        code: 1,
        message: `Research ${session.status}: ${failureOf(session)}\nResume it with: ${resumeHint}`
      })
    }
    const out = reportFile(resolved.out, session.id)
    // A simulated worker ran it when its report says so, though this client was not told: marked as a local run is.
    const simulate = resolved.simulate || Store.isSimulatedReport(session.report.markdown)
    const markdown = simulate ? Store.markSimulated(session.report.markdown) : session.report.markdown
    const unwritten = yield* writeReport(out, markdown, resolved.credentials)
    if (Option.isSome(unwritten)) {
      const kept = `in the database (deep-research show ${session.id} --database URL)`
      yield* Effect.sync(() => process.stderr.write(`${unwrittenReport(out, unwritten.value, kept)}\n`))
    }
    yield* say(
      resolved,
      reportSummary(session, {
        out: Option.isSome(unwritten) ? "in the database" : out,
        kept: "in the database",
        simulate
      })
    )
  })

/** A cluster or store error, as a message (its kind as messages name it, `Errors.kindOf`) and an exit code. */
const toRefusal = (error: Refusal | { readonly _tag: string; readonly message: string }): Refusal =>
  "code" in error
    ? error
    : { code: error._tag === "ResearchInvalidInput" ? 2 : 1, message: `${Errors.kindOf(error)}: ${error.message}` }

/** Why a settled session has no report: its error, kind and message, or "no report". */
const failureOf = (session: Session.Session): string =>
  session.error === undefined ? "no report" : `${Errors.kindOf(session.error)}: ${session.error.message}`

const rendererOf = (resolved: CliConfig.Resolved) =>
  Progress.makeRenderer(resolved.json ? "json" : process.stderr.isTTY ? "live" : "plain", sink)

/** Whether someone can review a plan here: a terminal, with the progress not printed as JSON. */
const canReview = (resolved: CliConfig.Resolved) =>
  !resolved.json && process.stdin.isTTY === true && process.stderr.isTTY === true

/**
 * A session as it settled, and while its plan waits for review on a terminal: the plan is asked about, the decision
 * sent to the session, and the session followed on. Returns the session as it settled, or cancelled at review.
 */
const reviewed = (resolved: CliConfig.Resolved, sessionId: string, settled: Session.Session | undefined) =>
  Effect.gen(function* () {
    const store = yield* SessionStore.SessionStore
    let session = settled
    while (session?.status === "awaiting_review" && canReview(resolved)) {
      const plan = Review.planOf(session)
      if (plan === undefined) break
      const asked = yield* Effect.provideService(Review.askNow(plan), UserInput.UserInput, userInput)
      const seen = (yield* Effect.orElseSucceed(store.events(sessionId), () => [])).length
      // No answer (an empty line, a closed input): the run goes on as planned, as a local one does.
      yield* Option.match(asked, {
        onNone: () => Cluster.resume(sessionId, undefined, randomUUID(), { review: "proceed" }),
        onSome: (decision) => Cluster.resume(sessionId, undefined, randomUUID(), { decision })
      })
      if (Option.isSome(asked) && asked.value.action === "cancel") return { ...session, status: "cancelled" as const }
      session = yield* follow(sessionId, rendererOf(resolved), session.updatedAt, seen)
    }
    return session
  })

/** Sends a new session to the cluster and follows it (or, detached, prints its id). */
export const submit = (resolved: CliConfig.Resolved, question: string, options: { readonly detach: boolean }) =>
  Effect.gen(function* () {
    const layer = yield* connect(resolved)
    const sessionId = yield* Pipeline.newSessionId
    const hint = `deep-research resume ${sessionId} --database URL`
    yield* Effect.gen(function* () {
      // Nobody here to review the plan (no terminal, not detached): the run goes on as planned.
      const review = options.detach || canReview(resolved) ? "await" : "proceed"
      const clarification = resolved.askClarification ? "await" : "proceed"
      yield* Cluster.submit(sessionId, question, resolved.research, clarification, review)
      if (options.detach) return yield* Effect.sync(() => process.stdout.write(`${sessionId}\n`))
      if (!resolved.json) yield* say(resolved, `Session ${sessionId} sent to the cluster; following it.`)
      const session = yield* reviewed(resolved, sessionId, yield* follow(sessionId, rendererOf(resolved)))
      yield* conclude(resolved, session, hint)
    }).pipe(Effect.mapError(toRefusal), Effect.provide(layer), Effect.scoped)
  })

/** Sends `Resume` (with the answer, if any) to a stored session and follows it. */
export const resume = (resolved: CliConfig.Resolved, sessionId: string, answer: string | undefined) =>
  Effect.gen(function* () {
    const layer = yield* connect(resolved)
    yield* Effect.gen(function* () {
      const store = yield* SessionStore.SessionStore
      const hint = `deep-research resume ${sessionId} --database URL`
      const found = yield* Effect.either(store.load(sessionId))
      if (Either.isLeft(found)) {
        const [queued] = found.left._tag === "ResearchSessionNotFound" ? yield* ClusterQueue.waiting(sessionId) : []
        // A mistyped id is refused here, before anything is sent for it.
        if (queued === undefined) {
          return yield* Effect.fail<Refusal>({
            code: found.left._tag === "ResearchSessionNotFound" ? 2 : 1,
            message: found.left.message
          })
        }
        // Sent, and no worker has started it: it runs when one does, and following it is all a resume can do.
        if (answer !== undefined) {
          return yield* Effect.fail<Refusal>({
            code: 2,
            message: `The session ${sessionId} is queued: no worker has started it, so it has asked nothing to answer.`
          })
        }
        if (!resolved.json)
          yield* say(resolved, `Session ${sessionId} is queued until a worker starts it; following it.`)
        return yield* conclude(resolved, yield* follow(sessionId, rendererOf(resolved)), hint)
      }
      const stored = found.right
      if (answer !== undefined && stored.status !== "awaiting_clarification") {
        return yield* Effect.fail<Refusal>({
          code: 2,
          message: conflict(stored.id, stored.status, "cannot take an answer").message
        })
      }
      if (stored.status === "completed") return yield* conclude(resolved, stored, hint)
      if (stored.status === "awaiting_review" && canReview(resolved)) {
        // The plan is asked about on the terminal: the session is followed from where it waits.
        return yield* conclude(resolved, yield* reviewed(resolved, sessionId, stored), hint)
      }
      const seen = (yield* Effect.orElseSucceed(store.events(sessionId), () => [])).length
      // Off a terminal a plan waiting for review goes on as planned, as a local resume's does.
      yield* Cluster.resume(sessionId, answer, randomUUID(), { review: "proceed" })
      const session = yield* follow(sessionId, rendererOf(resolved), stored.updatedAt, seen)
      yield* conclude(resolved, yield* reviewed(resolved, sessionId, session), hint)
    }).pipe(Effect.mapError(toRefusal), Effect.provide(layer), Effect.scoped)
  })

/**
 * Sends `Continue` to a finished stored session (`deep-research continue <id> --database URL`): a runner researches
 * the direction, and this process follows it to its new report as it follows any run.
 */
export const extend = (
  resolved: CliConfig.Resolved,
  sessionId: string,
  direction: string,
  options: {
    readonly rounds?: number | undefined
    readonly budget?: { readonly maxTokens?: number | undefined; readonly maxUsd?: number | undefined } | undefined
  }
) =>
  Effect.gen(function* () {
    const layer = yield* connect(resolved)
    yield* Effect.gen(function* () {
      const store = yield* SessionStore.SessionStore
      const stored = yield* Effect.mapError(store.load(sessionId), (error): Refusal => ({
        code: error._tag === "ResearchSessionNotFound" ? 2 : 1,
        message: error.message
      }))
      if (stored.status !== "completed") {
        return yield* Effect.fail<Refusal>({
          code: 2,
          message: conflict(sessionId, stored.status, "cannot go deeper before it is completed").message
        })
      }
      const seen = (yield* Effect.orElseSucceed(store.events(sessionId), () => [])).length
      yield* Cluster.extend(sessionId, direction, stored.continuations.length, randomUUID(), options)
      if (!resolved.json) yield* say(resolved, `Session ${sessionId} sent to the cluster to go deeper; following it.`)
      const session = yield* follow(sessionId, rendererOf(resolved), stored.updatedAt, seen)
      yield* conclude(resolved, session, `deep-research resume ${sessionId} --database URL`)
    }).pipe(Effect.mapError(toRefusal), Effect.provide(layer), Effect.scoped)
  })
