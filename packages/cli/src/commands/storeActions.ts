/**
 * What `list`, `show`, `delete` and `import` do with the session store, apart from their command-line definitions (`store`), so
 * that the quick entry of these commands (`internal/commandLine/storeCommandLine`) runs them without loading the
 * parser or anything a research run needs.
 */
import * as Research from "@deep-research/core/Research"
import * as Session from "@deep-research/core/Session"
import * as SessionStore from "@deep-research/core/SessionStore"
import * as SourceLibrary from "@deep-research/core/SourceLibrary"
import * as SqlSessionStore from "@deep-research/providers/SqlSessionStore"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Store from "../Store.js"
import { Exited } from "../internal/commandLine/exited.js"
import type { Credentials } from "../internal/config/credentials.js"
import { printable, printableLine } from "../internal/terminal/printable.js"
import * as FollowUps from "../internal/terminal/followUps.js"
import { steeringLines } from "../internal/terminal/steering.js"

const storeAt = (directory: string, credentials: Credentials) =>
  Store.storeLayerOrFail(directory, credentials).pipe(
    Layer.mapError((error) => new Exited({ code: 2, message: `error: ${error.message}` }))
  )

/** Runs `f` over the session store of a store folder (or of the database the credentials name). */
export const withStoreAt = <A, E>(
  directory: string,
  credentials: Credentials,
  f: (sessions: SessionStore.Service, credentials: Credentials) => Effect.Effect<A, E>
) =>
  Effect.flatMap(SessionStore.SessionStore, (sessions) => f(sessions, credentials)).pipe(
    Effect.provide(storeAt(directory, credentials))
  )

/** Runs `f` over the library of a store folder's sessions (or of the database the credentials name). */
export const withLibraryAt = <A, E>(
  directory: string,
  credentials: Credentials,
  f: (library: SourceLibrary.Service) => Effect.Effect<A, E>
) => Effect.flatMap(SourceLibrary.SourceLibrary, f).pipe(Effect.provide(storeAt(directory, credentials)))

/** Why `search` has nothing to look for, or undefined when its terms hold a word. */
export const emptyTerms = (terms: string): string | undefined =>
  SourceLibrary.termsOf(terms).length > 0
    ? undefined
    : 'error: nothing to search for: give words to look for, such as deep-research search "heat pump efficiency" ' +
      '(letters or digits; common words such as "the" are left out)'

/** `search`: the library's passages holding every word of `terms`, best first (json: one JSON line each). */
export const search = (library: SourceLibrary.Service, terms: string, limit: number | undefined, json: boolean) =>
  Effect.gen(function* () {
    const passages = yield* library
      .search(terms, { limit })
      .pipe(Effect.mapError((error) => new Exited({ code: 2, message: `error: ${error.message}` })))
    if (json) {
      for (const [i, { score, sessionId, snippet, sourceId, title, url }] of passages.entries()) {
        yield* Console.log(JSON.stringify({ rank: i + 1, sessionId, sourceId, url, title, snippet, score }))
      }
      return
    }
    if (passages.length === 0) {
      return yield* Console.log(`Nothing in the library holds every word of "${printableLine(terms)}".`)
    }
    for (const [i, passage] of passages.entries()) {
      yield* Console.log(
        [
          `${i + 1}. ${printableLine(passage.title) || passage.url}`,
          `   ${printableLine(passage.url)}`,
          `   session ${passage.sessionId} · source ${passage.sourceId}`,
          `   ${printableLine(passage.snippet)}`
        ].join("\n")
      )
    }
  })

/**
 * With a database, the sessions sent to its cluster that no runner has started yet (`ClusterQueue`); the store has
 * none of them. Read before the store is, so that one a runner starts in between is found there.
 */
const waitingOf = (credentials: Credentials, id?: string) =>
  credentials.databaseUrl === undefined
    ? Effect.succeed([])
    : Effect.gen(function* () {
        const [Cluster, ClusterQueue] = yield* Effect.promise(() =>
          Promise.all([import("../Cluster.js"), import("../ClusterQueue.js")])
        )
        const waiting = yield* ClusterQueue.waiting(id).pipe(Effect.provide(Cluster.sqlLayer(credentials.databaseUrl!)))
        return waiting.map(ClusterQueue.listed)
      }).pipe(
        // The database was reached for the store already; a client of it that cannot be made leaves these out.
        Effect.catchAllCause((cause) =>
          Effect.as(Effect.logWarning("the sessions waiting for a runner could not be read", cause), [])
        )
      )

const storeError = (error: { readonly _tag: string; readonly message: string }) =>
  new Exited({
    code: error._tag === "ResearchSessionCorrupt" || error._tag === "ResearchSessionBusy" ? 1 : 2,
    message: error.message
  })

const formatDate = (millis: number) => new Date(millis).toISOString().replace("T", " ").slice(0, 16)

/** The question of a listed session on one line, or why it cannot be read when it has none. */
const listedQuestion = (s: { readonly query: string; readonly error?: string | undefined }) =>
  printableLine(s.error !== undefined && s.query === "" ? s.error : s.query)
    .replace(/\s+/g, " ")
    .slice(0, 80)

/** `list`: every session of the store, one line each under a header (json: one JSON line each). */
export const list = (sessions: SessionStore.Service, credentials: Credentials, json: boolean) =>
  Effect.gen(function* () {
    const sent = yield* waitingOf(credentials)
    const stored = yield* sessions.list
    const known = new Set(stored.map((summary) => summary.id))
    const queued = sent.filter((waiting) => !known.has(waiting.id))
    // Which sessions a simulated run made, so that none is taken for real research.
    const simulated = new Set(stored.filter((summary) => summary.simulated === true).map((summary) => summary.id))
    // Written at once: one write of the whole listing, not one a session.
    if (json) {
      return yield* Console.log(
        [
          ...queued.map((summary) => JSON.stringify({ ...summary, simulated: false })),
          ...stored.map((summary) =>
            JSON.stringify({
              ...Schema.encodeSync(Session.SessionSummary)(summary),
              simulated: summary.simulated === true
            })
          )
        ].join("\n")
      )
    }
    const summaries = [...queued, ...stored]
    if (summaries.length === 0) return yield* Console.log("No sessions yet.")
    const idWidth = Math.max(2, ...summaries.map((s) => s.id.length))
    // A report that rests on no source is said beside its status.
    const ungrounded = new Set(stored.filter((s) => s.grounding?.sources === 0).map((s) => s.id))
    const lines = summaries.map((s) => {
      const status = ungrounded.has(s.id) ? `${s.status}, no sources` : s.status
      const cost = `$${s.costUsd.toFixed(4)}`
      const mark = simulated.has(s.id) ? "[simulated] " : ""
      return `${s.id.padEnd(idWidth)}  ${status.padEnd(22)}  ${formatDate(s.createdAt)}  ${cost.padEnd(8)}  ${mark}${listedQuestion(s)}`
    })
    yield* Console.log(
      [
        `${"ID".padEnd(idWidth)}  ${"STATUS".padEnd(22)}  ${"CREATED (UTC)".padEnd(16)}  ${"COST".padEnd(8)}  QUESTION`,
        ...lines
      ].join("\n")
    )
  })

/** `show`: a session and its report (json: the whole session). */
export const show = (
  sessions: SessionStore.Service,
  credentials: Credentials,
  id: string,
  json: boolean,
  version?: number | undefined
) =>
  Effect.gen(function* () {
    const sent = yield* waitingOf(credentials, id)
    const loaded = yield* Effect.either(sessions.load(id))
    if (Either.isLeft(loaded)) {
      const waiting = sent[0]
      if (loaded.left._tag !== "ResearchSessionNotFound" || waiting === undefined) return yield* storeError(loaded.left)
      if (json) return yield* Console.log(JSON.stringify(waiting))
      yield* Console.log(`Session ${waiting.id} · queued · ${formatDate(waiting.createdAt)}`)
      yield* Console.log(`Question: ${printableLine(waiting.query)}`)
      return yield* Console.log("Waiting for a runner: no deep-research worker on this database has started it yet.")
    }
    const session = loaded.right
    if (version !== undefined) return yield* showVersion(session, version, json)
    if (json) return yield* Console.log(JSON.stringify(Schema.encodeSync(Session.Session)(session)))
    yield* Console.log(`Session ${session.id} · ${session.status} · ${formatDate(session.createdAt)}`)
    yield* Console.log(`Question: ${printableLine(session.query)}`)
    if (session.brief !== undefined) yield* Console.log(`Brief: ${printable(session.brief.brief)}`)
    yield* Console.log(`Rounds: ${session.rounds.length}, sources: ${session.sources.length}`)
    for (const line of steeringLines(session)) yield* Console.log(printable(line))
    if (session.error !== undefined) yield* Console.log(`Error: ${printableLine(session.error.message)}`)
    if (session.status === "awaiting_clarification" && session.clarification !== undefined) {
      yield* Console.log(`Waiting for an answer to: ${printableLine(session.clarification.decision.question)}`)
    }
    const changes = FollowUps.changesText(session)
    if (changes !== "") yield* Console.log(changes)
    if (session.report !== undefined) yield* Console.log(`\n${printable(session.report.markdown)}`)
    const thread = FollowUps.threadText(session)
    if (thread !== "") yield* Console.log(`\n${thread}`)
  })

/** `show --report-version N`: one version of the report (json: the report as stored). */
const showVersion = (session: Session.Session, version: number, json: boolean) =>
  Effect.gen(function* () {
    const report = FollowUps.reportOf(session, version)
    if (report === undefined) {
      const versions = session.reportVersions.length + (session.report === undefined ? 0 : 1)
      return yield* new Exited({
        code: 2,
        message: `session ${session.id} has no report version ${version} (it has ${versions})`
      })
    }
    if (json) return yield* Console.log(JSON.stringify(Schema.encodeSync(Research.Report)(report)))
    yield* Console.log(`Session ${session.id} · report version ${version}`)
    yield* Console.log(`\n${printable(report.markdown)}`)
  })

/** `delete`: a session and its files, and its messages in a cluster's database. */
export const remove = (sessions: SessionStore.Service, credentials: Credentials, id: string) =>
  Effect.gen(function* () {
    const sent = yield* waitingOf(credentials, id)
    // A session no runner has started is only its message: deleting it is forgetting that.
    yield* sessions.delete(id).pipe(
      Effect.catchIf(
        (error) => error._tag === "ResearchSessionNotFound" && sent.length > 0,
        () => Effect.void
      ),
      Effect.mapError(storeError)
    )
    // A session of a cluster's database leaves its messages there too (its `Run` holds the question).
    if (credentials.databaseUrl !== undefined) {
      const Cluster = yield* Effect.promise(() => import("../Cluster.js"))
      yield* Cluster.forgetStored(credentials.databaseUrl, id).pipe(
        Effect.catchAllCause((cause) =>
          Effect.logWarning(`the cluster's messages of deleted session ${id} were kept`, cause)
        )
      )
    }
    yield* Console.log(`Deleted session ${id}.`)
  })

/** `import`: the sessions of another store's database into this one, and one line of what came (json: one object). */
export const importFrom = (sessions: SessionStore.Service, into: string, from: string, json: boolean) =>
  Effect.gen(function* () {
    const done = yield* SqlSessionStore.importDatabase(sessions, from).pipe(
      Effect.mapError((error) => new Exited({ code: 1, message: `error: ${error.message}` }))
    )
    if (json) return yield* Console.log(JSON.stringify(done))
    yield* Console.log(
      `Imported ${done.imported} session(s) into ${into}` +
        (done.present > 0 ? `; ${done.present} it held already, left as they were` : "") +
        (done.unreadable.length > 0
          ? `; ${done.unreadable.length} could not be read: ${done.unreadable.join("; ")}`
          : "") +
        "."
    )
    if (done.unfinished.length > 0)
      yield* Console.log(
        `Unfinished when copied (queued or running): ${done.unfinished.join(", ")}. ` +
          "deep-research resume <id> finishes one."
      )
  })
