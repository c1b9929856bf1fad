/**
 * What clients ask of the runs a process hosts (`Runs`): start, status, list, answer, resume, cancel, delete,
 * evaluate, and the resumption of what a stopped process accepted. Each is a function over the `Host`.
 */
import { Errors, FollowUp, Pipeline, ResearchConfig, Review, SessionStore } from "@deep-research/core"
import type { Session } from "@deep-research/core"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as SqlSessionStore from "@deep-research/providers/SqlSessionStore"
import type * as CliConfig from "../../CliConfig.js"
import { conflict, RunConflict, type StartOptions } from "../../RunSchema.js"
import * as Store from "../../Store.js"
import * as DecodeIssues from "../serving/decodeIssues.js"
import * as StoredEvaluation from "../../StoredEvaluation.js"
import * as Wiring from "../../Wiring.js"
import { answerable, resumable, reviewable, statusOf } from "./runStates.js"
import { background, type Host, loadFrom, notRunning, storeOf } from "./host.js"

/**
 * The source policy, the review, the report's language and shape a client chose, by the names the settings use (the
 * report's length, outline and instructions are `reportWords`, `reportOutline` and `reportInstructions` there).
 */
const steeringOf = (options: StartOptions) => {
  const { excludeDomains, includeDomains, library, reportLanguage, review, since, sources, until } = options
  const { instructions: reportInstructions, outline: reportOutline, words: reportWords } = options
  const chosen = { includeDomains, excludeDomains, since, until, sources, review, reportLanguage, library }
  const shape = { reportWords, reportOutline, reportInstructions }
  return Object.fromEntries(Object.entries({ ...chosen, ...shape }).filter(([, value]) => value !== undefined))
}

/**
 * The research configuration of a run: the resolved one with what the client chose, refused as the CLI refuses it (a
 * source policy that cannot hold: `until` before `since`, a day the calendar has not, a domain that names no host).
 */
export const configFor = (resolved: CliConfig.Resolved, options: StartOptions) =>
  Schema.decodeUnknownEither(ResearchConfig.Bounded, { errors: "all" })({
    ...Schema.encodeSync(ResearchConfig.ResearchConfig)(resolved.research),
    ...(options.maxRounds !== undefined ? { maxSupervisionRounds: options.maxRounds } : {}),
    ...(options.concurrency !== undefined ? { maxConcurrentResearchUnits: options.concurrency } : {}),
    ...(options.maxToolCalls !== undefined ? { researcherMaxToolCalls: options.maxToolCalls } : {}),
    ...(options.allowClarification !== undefined ? { allowClarification: options.allowClarification } : {}),
    ...(options.requireSources !== undefined ? { requireSources: options.requireSources } : {}),
    ...(options.verify !== undefined ? { verify: options.verify } : {}),
    ...steeringOf(options),
    budget: {
      ...Schema.encodeSync(ResearchConfig.Budget)(resolved.research.budget),
      ...(options.budgetTokens !== undefined ? { maxTokens: options.budgetTokens } : {}),
      ...(options.budgetUsd !== undefined ? { maxUsd: options.budgetUsd } : {})
    }
  }).pipe(
    Either.mapLeft(
      (error) =>
        new Errors.ResearchInvalidInput({
          // Said as a sentence ('until': until (2023-01-01) is before since (2024-01-01).), not Schema's tree.
          reason:
            DecodeIssues.messageOf(ParseResult.ArrayFormatter.formatErrorSync(error)) ??
            ParseResult.TreeFormatter.formatErrorSync(error)
        })
    )
  )

/**
 * Starts a session: stored queued first (synced, or committed), so that the id given out is never lost, whatever
 * happens to this process after; then run in the background, which begins it once a slot is free.
 */
export const start = (host: Host, question: string, options: StartOptions, clarification: "await" | "proceed") =>
  Effect.gen(function* () {
    const config = yield* configFor(host.resolved, options)
    const { id: sessionId } = yield* host
      .onRuntime(Pipeline.enqueue(question, { config }))
      .pipe(
        Effect.catchTag("ResearchSessionCorrupt", (error) => new Errors.ResearchInvalidInput({ reason: error.message }))
      )
    return yield* background(
      host,
      sessionId,
      Pipeline.resume(sessionId, { clarification: host.resolved.askClarification ? clarification : "proceed" })
    )
  })

export const status = (host: Host, sessionId: string) =>
  Effect.gen(function* () {
    const stored = Option.getOrUndefined(yield* Effect.option(loadFrom(host, sessionId)))
    const live = host.progress.get(sessionId)
    const running = host.runs.has(sessionId)
    if (stored === undefined && live === undefined && !running)
      return yield* new Errors.ResearchSessionNotFound({ sessionId })
    return statusOf(sessionId, {
      stored,
      live,
      running,
      // A run waiting for its slot has its session stored queued; without a limit, it begins at once.
      queued: running && host.resolved.maxSessions !== undefined && stored?.status === "queued",
      query: undefined
    })
  })

export const list = (host: Host) =>
  Effect.gen(function* () {
    const summaries = yield* Effect.flatMap(storeOf(host), (store) => store.list)
    // Without a limit, a session this process runs is running from the moment it was stored queued.
    return host.resolved.maxSessions !== undefined
      ? summaries
      : summaries.map((summary) =>
          summary.status === "queued" && host.runs.has(summary.id)
            ? { ...summary, status: "running" as const }
            : summary
        )
  })

export const answer = (host: Host, sessionId: string, text: string) =>
  Effect.gen(function* () {
    yield* notRunning(host, sessionId, "cannot take an answer now")
    yield* answerable(yield* loadFrom(host, sessionId))
    return yield* background(host, sessionId, Pipeline.resume(sessionId, { answer: text }))
  })

export const review = (host: Host, sessionId: string, decision: Review.Decision) =>
  Effect.gen(function* () {
    yield* notRunning(host, sessionId, "cannot take a review of its plan now")
    const session = yield* loadFrom(host, sessionId)
    yield* reviewable(session)
    yield* Review.validate(session, decision)
    return yield* background(host, sessionId, Pipeline.resume(sessionId, { review: decision }))
  })

export const resume = (host: Host, sessionId: string, clarification?: "await" | "proceed") =>
  Effect.gen(function* () {
    yield* notRunning(host, sessionId, "cannot be resumed")
    yield* resumable(yield* loadFrom(host, sessionId))
    return yield* background(host, sessionId, Pipeline.resume(sessionId, { clarification }))
  })

/** A follow-up question answered from a finished session's stored sources; not while this process runs it. */
export const ask = (host: Host, sessionId: string, question: string, budget?: FollowUp.Options["budget"]) =>
  Effect.gen(function* () {
    yield* notRunning(host, sessionId, "cannot answer a follow-up question while it runs")
    return (yield* host.onRuntime(FollowUp.ask(sessionId, question, { budget }))).answer
  })

/** A finished session reopened in `direction`, researched in the background. */
export const extend = (host: Host, sessionId: string, direction: string, rounds: number | undefined) =>
  Effect.gen(function* () {
    yield* notRunning(host, sessionId, "cannot go deeper while it runs")
    const session = yield* loadFrom(host, sessionId)
    if (session.status !== "completed") {
      return yield* Effect.fail(conflict(sessionId, session.status, "cannot go deeper before it is completed"))
    }
    if (direction.trim() === "") return yield* new Errors.ResearchInvalidInput({ reason: "the direction is empty" })
    return yield* background(host, sessionId, FollowUp.extend(sessionId, direction, { rounds }))
  })

/** The sessions already said to be left for a run of the other kind (simulated or not), by host: said once each. */
const saidLeft = new WeakMap<Host, Set<string>>()

/**
 * Takes over the sessions a stopped process accepted and did not finish: stored queued or running with nothing holding
 * them (the store's `Unheld`: their process's lease lapsed), or, on a store without leases, listed queued or
 * interrupted. Oldest first, each through the session limit as any run; one another live process takes first is left
 * to it. A session simulated where this process is not, or the reverse, is left as it is for a run of its own kind,
 * and the log says so once. Run when the process starts and again while it serves, so that a peer that dies is taken
 * over without a restart.
 */
export const resumeStopped = (host: Host) =>
  Effect.gen(function* () {
    const store = yield* storeOf(host)
    const unheld = yield* host.onRuntime(Effect.serviceOption(SqlSessionStore.Unheld))
    const stopped = Option.isSome(unheld)
      ? yield* unheld.value
      : (yield* store.list)
          .filter((summary) => summary.status === "queued" || summary.status === "interrupted")
          .sort((a, b) => a.createdAt - b.createdAt)
    const said = saidLeft.get(host) ?? new Set<string>()
    saidLeft.set(host, said)
    const resumed: Array<string> = []
    for (const { id, status } of stopped) {
      if (host.runs.has(id) || said.has(id)) continue
      const marker = yield* Effect.orElseSucceed(store.artefact(id, Store.simulatedArtefact), () => Option.none())
      if (Option.isSome(marker) !== host.resolved.simulate) {
        said.add(id)
        yield* Effect.logWarning(
          `session ${id} is left ${status}: it is ${host.resolved.simulate ? "not " : ""}simulated and this server ` +
            `is${host.resolved.simulate ? "" : " not"}; resume it with deep-research resume ${id}`
        )
        continue
      }
      // A queued session's first run asks, as a session started now would.
      const clarification = status === "queued" && host.resolved.askClarification ? "await" : "proceed"
      const started = yield* Effect.either(resume(host, id, clarification))
      if (Either.isLeft(started)) yield* Effect.logWarning(`session ${id} is left ${status}: ${started.left.message}`)
      else resumed.push(id)
    }
    if (resumed.length > 0) {
      yield* Effect.logInfo(
        `took over ${resumed.length} session(s) a stopped process had accepted: ${resumed.join(", ")}`
      )
    }
  })

/** How often a serving process looks for sessions a stopped process left. */
const takeOverEvery = "5 seconds"

/** `resumeStopped` now, then again and again for as long as the scope lasts. */
export const takeOverStopped = (host: Host) =>
  Effect.zipRight(
    resumeStopped(host),
    resumeStopped(host).pipe(
      Effect.catchAllCause((cause) => Effect.logWarning("could not look for sessions a stopped process left", cause)),
      Effect.repeat(Schedule.spaced(takeOverEvery)),
      Effect.delay(takeOverEvery),
      Effect.forkScoped
    )
  )

export const cancel = (host: Host, sessionId: string) =>
  Effect.gen(function* () {
    const run = host.runs.get(sessionId)
    if (run === undefined) return yield* notCancellable(yield* loadFrom(host, sessionId))
    // The run saves itself as cancelled when interrupted; its work so far stays in the store, resumable.
    yield* Fiber.interrupt(run.fiber)
    const session = yield* Effect.option(loadFrom(host, sessionId))
    // A run cancelled while queued stores its session cancelled; one stopped before it even began to wait is marked
    // here. Should the store have failed, it is cancelled still.
    if (Option.isSome(session) && session.value.status === "queued") {
      const { config, createdAt, query } = session.value
      yield* host.onRuntime(Pipeline.recordCancelled(query, { sessionId, config, createdAt })).pipe(Effect.ignore)
      return { sessionId, status: "cancelled" }
    }
    return { sessionId, status: Option.isSome(session) ? session.value.status : "cancelled" }
  })

/** A session this process does not run, which a cancel cannot stop: stopped already, or run by another process. */
export const notCancellable = (session: Session.Session): RunConflict =>
  session.status === "running"
    ? new RunConflict({
        message:
          `The session ${session.id} cannot be cancelled here: another process runs it (a deep-research command ` +
          "or server); stop it there."
      })
    : conflict(session.id, session.status, "cannot be cancelled")

export const remove = (host: Host, sessionId: string) =>
  notRunning(host, sessionId, "cannot be deleted now").pipe(
    Effect.zipRight(Effect.flatMap(storeOf(host), (store) => store.delete(sessionId))),
    Effect.tap(() => Effect.sync(() => host.progress.delete(sessionId)))
  )

/** Evaluates as `deep-research evaluate` does: a session a simulated run made is judged by the emulator. */
export const evaluate = (host: Host, sessionId: string) =>
  host.onRuntime(
    Effect.gen(function* () {
      const evaluation = StoredEvaluation.evaluateStored(
        sessionId,
        Store.artefactPlace(host.resolved.storeDir, host.resolved.credentials)
      )
      const simulated = yield* Effect.flatMap(SessionStore.SessionStore, (store) =>
        Store.wasSimulated(store, sessionId)
      )
      return yield* simulated && !host.resolved.simulate
        ? Effect.provide(evaluation, Wiring.simulatedJudgeLayer(host.resolved))
        : evaluation
    })
  )

export const awaitRun = (host: Host, sessionId: string): Effect.Effect<void> => {
  const run = host.runs.get(sessionId)
  return run === undefined ? Effect.void : Effect.asVoid(Fiber.await(run.fiber))
}
