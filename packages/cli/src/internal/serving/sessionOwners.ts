/**
 * Who a session belongs to, where a server tells its callers apart (a token for each, `DEEP_RESEARCH_API_TOKEN`
 * holding several): the caller that started it, through any door (`/api`, `/v1`, MCP over HTTP). Its caller is stored
 * beside the session (the artefact `caller.json`, a digest of the token as `TaskOwners` names a caller), so it holds
 * after a restart and on every server of a cluster. This is the one place that decides whether a caller may reach a
 * session, by the rule of `sessionReach.ts` (which also keeps a run's library to what its session's owner reaches):
 * another caller is told the session does not exist (`No session with id …`, as for one that never was), and listings
 * and library searches leave it out. A session with no recorded caller (started from the CLI on the machine, or on a
 * server with one shared token or none) is everyone's, as is everything on a server that cannot tell its callers
 * apart. The local CLI reads the store itself and sees every session.
 */
import { Errors } from "@deep-research/core"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import type * as Runs from "../../Runs.js"
import { encodeOwner, ownerArtefact, ownersOf, reachesOwned, storedOwner } from "./sessionReach.js"

export { ownerArtefact }

/** The caller of a request that presented no token of the server: it reaches only the sessions no one owns. */
export const nobody = "nobody"

/** A caller that stands for one token of several, the only kind a session is bound to. */
const isTokenCaller = (caller: string): boolean => caller.startsWith("token:")

/** The callers of the sessions this server started and could not yet bind (the store refused the binding). */
type Pending = Map<string, string>

/**
 * The caller a session is bound to: one this server has yet to store, else the stored one `stored` reads; none for no
 * one's.
 */
const boundTo =
  (pending: Pending, stored: (sessionId: string) => Effect.Effect<Option.Option<string>>) =>
  (sessionId: string): Effect.Effect<Option.Option<string>> => {
    const waiting = pending.get(sessionId)
    return waiting !== undefined ? Effect.succeed(Option.some(waiting)) : stored(sessionId)
  }

/** Retries of a binding that waits for its session: every quarter second for ten seconds, then every ten for an hour. */
const untilStored = Schedule.union(
  Schedule.intersect(Schedule.spaced("250 millis"), Schedule.recurs(40)),
  Schedule.intersect(Schedule.spaced("10 seconds"), Schedule.recurs(360))
)

/**
 * Binds a new session to its caller before the client is answered: the store keeps the binding even for a session a
 * cluster's runner has yet to store. A binding the store refused (the database out of reach) is held by this server,
 * and stored again in the background.
 */
const bind = (runs: Runs.Runs, pending: Pending, sessionId: string, caller: string): Effect.Effect<void> => {
  const save = runs.saveArtefact(sessionId, ownerArtefact, encodeOwner(caller))
  return Effect.catchAll(save, () =>
    Effect.sync(() => pending.set(sessionId, caller)).pipe(
      Effect.zipRight(
        Effect.forkDaemon(
          save.pipe(
            Effect.retry(untilStored),
            Effect.tapError((error) =>
              Effect.logWarning(`the caller of session ${sessionId} was not stored: ${error.message}`)
            ),
            Effect.ensuring(Effect.sync(() => pending.delete(sessionId))),
            Effect.ignore
          )
        )
      ),
      Effect.asVoid
    )
  )
}

/**
 * The runs as one caller reaches them: what it starts is bound to it (when it is a token's caller), and a session
 * bound to another caller is, for every request by its id, a session that does not exist.
 */
const asCaller = (runs: Runs.Runs, pending: Pending, caller: string): Runs.Runs => {
  /** Whether the caller reaches a session, its owner read by `stored`: it is no one's, or the caller's own. */
  const reachesBy = (stored: (sessionId: string) => Effect.Effect<Option.Option<string>>) => {
    const owner = boundTo(pending, stored)
    return (sessionId: string) => Effect.map(owner(sessionId), (bound) => reachesOwned(Option.some(caller), bound))
  }
  const reaches = reachesBy((sessionId) => storedOwner(runs.artefact, sessionId))
  /** For a listing or a search, which asks about many sessions: the owners read at once. */
  const reachesEach = Effect.map(ownersOf(runs.artefact, runs.artefactOfEach), reachesBy)
  const reached = <A, E>(
    sessionId: string,
    effect: Effect.Effect<A, E>
  ): Effect.Effect<A, E | Errors.ResearchSessionNotFound> =>
    Effect.flatMap(reaches(sessionId), (may): Effect.Effect<A, E | Errors.ResearchSessionNotFound> =>
      may ? effect : Effect.fail(new Errors.ResearchSessionNotFound({ sessionId }))
    )
  const mine = <A extends { readonly sessionId: string }>(started: A) =>
    isTokenCaller(caller) ? Effect.as(bind(runs, pending, started.sessionId, caller), started) : Effect.succeed(started)
  const { ask, extend } = runs
  return {
    ...runs,
    start: (question, options, clarification) => Effect.flatMap(runs.start(question, options, clarification), mine),
    status: (sessionId) => reached(sessionId, runs.status(sessionId)),
    // The owners read once for the listing (or the search), not once a session.
    list: Effect.flatMap(Effect.zip(runs.list, reachesEach), ([listed, reachesOne]) =>
      Effect.filter(listed, (entry) => reachesOne(entry.id), { concurrency: 8 })
    ),
    load: (sessionId) => reached(sessionId, runs.load(sessionId)),
    answer: (sessionId, answer) => reached(sessionId, runs.answer(sessionId, answer)),
    review: (sessionId, decision) => reached(sessionId, runs.review(sessionId, decision)),
    resume: (sessionId) => reached(sessionId, runs.resume(sessionId)),
    ...(ask === undefined
      ? {}
      : { ask: (sessionId, question, budget) => reached(sessionId, ask(sessionId, question, budget)) }),
    ...(extend === undefined
      ? {}
      : { extend: (sessionId, direction, rounds) => reached(sessionId, extend(sessionId, direction, rounds)) }),
    cancel: (sessionId) => reached(sessionId, runs.cancel(sessionId)),
    remove: (sessionId) => reached(sessionId, runs.remove(sessionId)),
    evaluate: (sessionId) => reached(sessionId, runs.evaluate(sessionId)),
    events: (sessionId, after) =>
      Stream.unwrap(Effect.map(reaches(sessionId), (may) => (may ? runs.events(sessionId, after) : Stream.empty))),
    // Kept to the caller's sessions as the library ranks them: up to `limit` of theirs, however many others outrank them.
    searchLibrary: (terms, options) =>
      Effect.flatMap(reachesEach, (reachesOne) => runs.searchLibrary(terms, { ...options, reaches: reachesOne }))
  }
}

/**
 * How a server's doors reach its runs for a caller: as that caller when the server tells its callers apart (several
 * tokens), else the runs themselves, every session shared.
 */
export const forCallers = (runs: Runs.Runs, tellsApart: boolean): ((caller: string | undefined) => Runs.Runs) => {
  const pending: Pending = new Map()
  return (caller) => (tellsApart ? asCaller(runs, pending, caller ?? nobody) : runs)
}
