/**
 * The sessions a long-lived process runs for its clients: the MCP server and `deep-research serve` both host them
 * here. One runtime for the process's life, so every session shares the resilience state (breakers, rate limits),
 * the store and the progress stream; runs go on in the background and are reached by their session id. The host's
 * machinery is `internal/hosted/` (the host, what clients ask of it, a session's event stream).
 */
import {
  type Errors,
  type FollowUp,
  type Research,
  type Review,
  type Session,
  SessionStore,
  SourceLibrary
} from "@deep-research/core"
import * as Secrets from "@deep-research/providers/Secrets"
import type { Evaluation } from "@deep-research/evaluation"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import type * as Stream from "effect/Stream"
import type * as CliConfig from "./CliConfig.js"
import { secretsIn } from "./internal/config/credentials.js"
import type { JudgeUnavailable, Listed, RunConflict, RunStatus, Started, StartOptions } from "./RunSchema.js"
import { events, type NumberedEvent } from "./internal/hosted/events.js"
import { loadFrom, makeHost, storeOf } from "./internal/hosted/host.js"
import * as Requests from "./internal/hosted/requests.js"
import { answerable, resumable, reviewable, statusOf } from "./internal/hosted/runStates.js"
import { eachArtefact } from "./internal/serving/sessionReach.js"

// Shared with the runs of a cluster, which reach them here.
export { answerable, resumable, reviewable, statusOf }
export type { NumberedEvent }
export { configFor, notCancellable } from "./internal/hosted/requests.js"

// =============================================================================
// Service
// =============================================================================

type StoreError = Errors.ResearchSessionNotFound | Errors.ResearchSessionCorrupt | Errors.ResearchInvalidInput

/** The runs of a process. Every effect here needs nothing in context: it runs on the process's shared runtime. */
export interface Runs {
  /**
   * Starts a run in the background. A clarifying question makes the session wait for `answer` when the configuration
   * allows asking, unless `clarification` is `proceed`: then research goes on with the model's understanding.
   */
  readonly start: (
    question: string,
    options: StartOptions,
    clarification?: "await" | "proceed"
  ) => Effect.Effect<Started, Errors.ResearchInvalidInput>
  readonly status: (sessionId: string) => Effect.Effect<RunStatus, Errors.ResearchSessionNotFound>
  readonly list: Effect.Effect<ReadonlyArray<Listed>>
  readonly load: (sessionId: string) => Effect.Effect<Session.Session, StoreError>
  readonly answer: (sessionId: string, answer: string) => Effect.Effect<Started, StoreError | RunConflict>
  /** Approves, edits or cancels the plan of a session waiting for its review (`awaiting_review`). */
  readonly review: (sessionId: string, decision: Review.Decision) => Effect.Effect<Started, StoreError | RunConflict>
  readonly resume: (sessionId: string) => Effect.Effect<Started, StoreError | RunConflict>
  /**
   * Answers a follow-up question from a finished session's stored sources (`FollowUp.ask`), kept with the session.
   * Absent where runs cannot answer here (a cluster's client).
   */
  readonly ask?: (
    sessionId: string,
    question: string,
    budget?: FollowUp.Options["budget"]
  ) => Effect.Effect<Research.FollowUpAnswer, FollowUp.Failure | RunConflict>
  /** Goes deeper: a finished session researches `direction` in the background (`FollowUp.extend`). */
  readonly extend?: (
    sessionId: string,
    direction: string,
    rounds?: number
  ) => Effect.Effect<Started, StoreError | RunConflict>
  readonly cancel: (
    sessionId: string
  ) => Effect.Effect<{ readonly sessionId: string; readonly status: string }, StoreError | RunConflict>
  readonly remove: (sessionId: string) => Effect.Effect<void, StoreError | Errors.ResearchSessionBusy | RunConflict>
  readonly evaluate: (
    sessionId: string
  ) => Effect.Effect<
    { readonly evaluation: Evaluation.Evaluation; readonly file: string },
    Errors.ResearchError | RunConflict | JudgeUnavailable
  >
  /** Whether this process runs the session now (queued included). */
  readonly isRunning: (sessionId: string) => boolean
  /** How many sessions run now: this process's (queued included), or on a cluster, the cluster's. */
  readonly running: Effect.Effect<number>
  /** Waits until the session's run in this process ends (at once when none runs). */
  readonly awaitRun: (sessionId: string) => Effect.Effect<void>
  /**
   * The session's event log after position `after`, then its events as they come while this process runs it; ends
   * when the run ends. A queued run's log starts once it does.
   */
  readonly events: (sessionId: string, after: number) => Stream.Stream<NumberedEvent>
  /** A named artefact kept beside the session (`SessionStore.artefact`). */
  readonly artefact: (sessionId: string, name: string) => Effect.Effect<Option.Option<string>, StoreError>
  /**
   * The artefact of that name of every session that keeps one, by session id, in one read (`SessionStore.artefactOfEach`);
   * none when the store has no such read.
   */
  readonly artefactOfEach: (name: string) => Effect.Effect<Option.Option<ReadonlyMap<string, string>>>
  /** Keeps a named artefact beside the session, replacing one of the same name (`SessionStore.saveArtefact`). */
  readonly saveArtefact: (
    sessionId: string,
    name: string,
    content: string
  ) => Effect.Effect<void, Errors.ResearchInvalidInput>
  /** A text about to leave the process (an answer, a refusal, a log line) without the process's secrets. */
  readonly scrub: (text: string) => string
  /**
   * The library's passages that match `terms`, best first (`SourceLibrary.search`), `limit` at most, of the sessions
   * `reaches` holds for (every session's without it).
   */
  readonly searchLibrary: (
    terms: string,
    options?: Pick<SourceLibrary.SearchOptions, "limit" | "reaches">
  ) => Effect.Effect<ReadonlyArray<SourceLibrary.Passage>, Errors.ResearchInvalidInput>
}

/** How a process hosts its runs. */
export interface Options {
  /**
   * Take over the sessions a stopped process accepted and did not finish (stored queued, or interrupted), on start and
   * while serving: what `serve` does, so that nothing acknowledged is lost to a crash, its own or a peer's.
   */
  readonly resumeStopped?: boolean | undefined
}

/**
 * Builds the runtime (a configuration the providers refuse fails here, not on every call) and hosts runs on it until
 * the scope closes, when every run still going is interrupted (each saves itself as cancelled, resumable).
 */
export const make = (
  resolved: CliConfig.Resolved,
  options: Options = {}
): Effect.Effect<Runs, Errors.ResearchInvalidInput, Scope.Scope> =>
  Effect.tap(makeHost(resolved), (host) =>
    options.resumeStopped === true ? Requests.takeOverStopped(host) : Effect.void
  ).pipe(
    Effect.map((host): Runs => ({
      start: (question, options, clarification = "await") => Requests.start(host, question, options, clarification),
      status: (sessionId) => Requests.status(host, sessionId),
      list: Requests.list(host),
      load: (sessionId) => loadFrom(host, sessionId),
      answer: (sessionId, text) => Requests.answer(host, sessionId, text),
      review: (sessionId, decision) => Requests.review(host, sessionId, decision),
      resume: (sessionId) => Requests.resume(host, sessionId),
      ask: (sessionId, question, budget) => Requests.ask(host, sessionId, question, budget),
      extend: (sessionId, direction, rounds) => Requests.extend(host, sessionId, direction, rounds),
      cancel: (sessionId) => Requests.cancel(host, sessionId),
      remove: (sessionId) => Requests.remove(host, sessionId),
      evaluate: (sessionId) => Requests.evaluate(host, sessionId),
      isRunning: (sessionId) => host.runs.has(sessionId),
      running: Effect.sync(() => host.runs.size),
      awaitRun: (sessionId) => Requests.awaitRun(host, sessionId),
      events: (sessionId, after) => events(host, sessionId, after),
      artefact: (sessionId, name) => Effect.flatMap(storeOf(host), (store) => store.artefact(sessionId, name)),
      artefactOfEach: (name) => Effect.flatMap(storeOf(host), (store) => eachArtefact(store)(name)),
      saveArtefact: (sessionId, name, content) =>
        Effect.flatMap(storeOf(host), (store) => store.saveArtefact(sessionId, name, content)),
      scrub: Secrets.scrubber(secretsIn(resolved.credentials)),
      searchLibrary: (terms, options) =>
        host.onRuntime(Effect.flatMap(SourceLibrary.SourceLibrary, (library) => library.search(terms, options)))
    }))
  )

/**
 * What runs take of their session store and their configuration alike: artefacts, the library, and their secrets to
 * scrub.
 */
export const storeParts = (
  context: Context.Context<SessionStore.SessionStore | SourceLibrary.SourceLibrary>,
  resolved: CliConfig.Resolved
): Pick<Runs, "artefact" | "artefactOfEach" | "saveArtefact" | "scrub" | "searchLibrary"> => {
  const store = Context.get(context, SessionStore.SessionStore)
  const library = Context.get(context, SourceLibrary.SourceLibrary)
  return {
    artefact: (sessionId, name) => store.artefact(sessionId, name),
    artefactOfEach: eachArtefact(store),
    saveArtefact: (sessionId, name, content) => store.saveArtefact(sessionId, name, content),
    scrub: Secrets.scrubber(secretsIn(resolved.credentials)),
    searchLibrary: (terms, options) => library.search(terms, options)
  }
}

/**
 * Runs that take questions and answers without the process's secrets (its keys, its API token, its database's URL):
 * a client's question that holds one is researched, stored, shown and logged with `[redacted]` in its place, and no
 * model is sent it. Their `scrub` takes the same secrets out of what the doors answer.
 */
export const withoutSecrets = (runs: Runs, secrets: ReadonlyArray<Redacted.Redacted<string>>): Runs => {
  const scrub = Secrets.scrubber(secrets)
  const { ask, extend } = runs
  return {
    ...runs,
    start: (question, options, clarification) => runs.start(scrub(question), options, clarification),
    answer: (sessionId, answer) => runs.answer(sessionId, scrub(answer)),
    ...(ask === undefined ? {} : { ask: (sessionId, question, budget) => ask(sessionId, scrub(question), budget) }),
    ...(extend === undefined
      ? {}
      : { extend: (sessionId, direction, rounds) => extend(sessionId, scrub(direction), rounds) }),
    scrub: (text) => scrub(runs.scrub(text)),
    review: (sessionId, decision) =>
      runs.review(
        sessionId,
        decision.action === "edit"
          ? {
              ...decision,
              ...(decision.brief === undefined ? {} : { brief: scrub(decision.brief) }),
              ...(decision.directives === undefined ? {} : { directives: decision.directives.map(scrub) })
            }
          : decision
      )
  }
}

/** The most characters of a question a listing of sessions shows; the session's own status has all of it. */
export const listedQuestionLength = 300

/**
 * Runs whose listing shows each question's first `listedQuestionLength` characters, `…` where it was cut, so that a
 * list of many sessions is not as large as all their questions.
 */
export const withShortListing = (runs: Runs): Runs => ({
  ...runs,
  list: Effect.map(runs.list, (listed) =>
    listed.map((entry) =>
      entry.query.length <= listedQuestionLength
        ? entry
        : { ...entry, query: `${entry.query.slice(0, listedQuestionLength)}…` }
    )
  )
})
