/**
 * The journal of a session's answered requests: the searches, extracted pages and fetch-time summaries its runs
 * received, kept as one artefact of the session in its store (`requests.json`), so that a resumed run does not send
 * them again. Failures are not kept: a resumed run asks again. The journal is written behind the run, one write at a
 * time with the latest state (never once per request), flushed at checkpoints and when the run ends.
 */
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as HashMap from "effect/HashMap"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Queue from "effect/Queue"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { SessionStore } from "../../SessionStore.js"
import { ExtractedPage, SearchResult, SourceSummary } from "../../Source.js"
import * as Permits from "../resilience/permits.js"
import { sha256Hex } from "./sha256.js"

// =============================================================================
// The file
// =============================================================================

/** A search as the session's request sharing keys it: the query normalised, the options as primitives. */
export const SearchKey = Schema.Struct({
  query: Schema.String,
  maxResults: Schema.Number,
  depth: Schema.String,
  includeRawContent: Schema.Boolean,
  topic: Schema.String,
  timeRange: Schema.String,
  includeDomains: Schema.String,
  excludeDomains: Schema.String,
  /** A source policy's date window, `since..until` (either side may be empty); "" when there is none. */
  dateWindow: Schema.optionalWith(Schema.String, { default: () => "" })
})
export type SearchKey = typeof SearchKey.Type

/** The journal as stored. Summaries are keyed by the SHA-256 of the text summarised, not by the text. */
export const JournalFile = Schema.Struct({
  version: Schema.Literal(1),
  searches: Schema.Array(Schema.Struct({ request: SearchKey, results: Schema.Array(SearchResult) })),
  pages: Schema.Array(Schema.Struct({ url: Schema.String, page: ExtractedPage })),
  summaries: Schema.Array(Schema.Struct({ contentSha256: Schema.String, summary: SourceSummary }))
})
export type JournalFile = typeof JournalFile.Type

/** The artefact the journal is kept in. */
export const fileName = "requests.json"

/** What the journal holds, by key: searches by `searchKey`, pages by normalised URL, summaries by `summaryKey`. */
export interface Entries {
  readonly searches: HashMap.HashMap<
    string,
    { readonly request: SearchKey; readonly results: ReadonlyArray<SearchResult> }
  >
  readonly pages: HashMap.HashMap<string, ExtractedPage>
  readonly summaries: HashMap.HashMap<string, SourceSummary>
}

export const emptyEntries: Entries = { searches: HashMap.empty(), pages: HashMap.empty(), summaries: HashMap.empty() }

/** The key of a search: every field, in a fixed order (a date window only when there is one: older keys stand). */
export const searchKey = (request: SearchKey): string =>
  JSON.stringify([
    request.query,
    request.maxResults,
    request.depth,
    request.includeRawContent,
    request.topic,
    request.timeRange,
    request.includeDomains,
    request.excludeDomains,
    ...(request.dateWindow === "" ? [] : [request.dateWindow])
  ])

/** The key of a summary: the SHA-256 of the text summarised, which keeps the texts themselves out of the journal. */
export const summaryKey = (content: string): string => sha256Hex(content)

const codec = Schema.parseJson(JournalFile)
const encodeFile = Schema.encodeSync(codec)
const decodeFile = Schema.decodeUnknownEither(codec)

/** The journal's text. */
export const encode = (entries: Entries): string =>
  encodeFile({
    version: 1,
    searches: [...HashMap.values(entries.searches)],
    pages: [...HashMap.toEntries(entries.pages)].map(([url, page]) => ({ url, page })),
    summaries: [...HashMap.toEntries(entries.summaries)].map(([contentSha256, summary]) => ({ contentSha256, summary }))
  })

/** The entries of a journal's text, or why it cannot be read. */
export const decode = (text: string): Either.Either<Entries, ParseResult.ParseError> =>
  Either.map(decodeFile(text), (file) => ({
    searches: HashMap.fromIterable(file.searches.map((entry) => [searchKey(entry.request), entry] as const)),
    pages: HashMap.fromIterable(file.pages.map((entry) => [entry.url, entry.page] as const)),
    summaries: HashMap.fromIterable(file.summaries.map((entry) => [entry.contentSha256, entry.summary] as const))
  }))

// =============================================================================
// The live journal
// =============================================================================

/** A run's journal: what earlier runs (and this one) were answered, and the recording of new answers. */
export interface Journal {
  readonly search: (key: string) => Effect.Effect<Option.Option<ReadonlyArray<SearchResult>>>
  readonly recordSearch: (request: SearchKey, results: ReadonlyArray<SearchResult>) => Effect.Effect<void>
  readonly page: (url: string) => Effect.Effect<Option.Option<ExtractedPage>>
  readonly recordPage: (url: string, page: ExtractedPage) => Effect.Effect<void>
  readonly summary: (key: string) => Effect.Effect<Option.Option<SourceSummary>>
  readonly recordSummary: (key: string, summary: SourceSummary) => Effect.Effect<void>
  /** Writes what is not written yet, and waits for it. */
  readonly flush: Effect.Effect<void>
  /** Removes the journal from the store (a finished session needs it no more) and records nothing after. */
  readonly discard: Effect.Effect<void>
}

/** A journal that keeps nothing and knows nothing. */
export const none: Journal = {
  search: () => Effect.succeedNone,
  recordSearch: () => Effect.void,
  page: () => Effect.succeedNone,
  recordPage: () => Effect.void,
  summary: () => Effect.succeedNone,
  recordSummary: () => Effect.void,
  flush: Effect.void,
  discard: Effect.void
}

/** The least time between two writes behind the run, so that a busy run does not rewrite its journal back to back. */
const writeInterval = Duration.seconds(1)

const warnUnreadable = (sessionId: string, reason: string) =>
  Effect.logWarning(`the request journal of session ${sessionId} is ignored: ${reason}`)

/**
 * The session's journal as stored. A journal that cannot be read or decoded is ignored with a warning (the run sends
 * its requests again); the result says whether one was there, and whether it was of no use.
 */
export const load = (sessionId: string) =>
  Effect.gen(function* () {
    const store = yield* SessionStore
    const text = yield* store.artefact(sessionId, fileName).pipe(
      Effect.catchTag("ResearchSessionNotFound", () => Effect.succeedNone),
      Effect.catchAllCause((cause) =>
        Cause.isInterruptedOnly(cause)
          ? Effect.interrupt
          : Effect.as(warnUnreadable(sessionId, Cause.pretty(cause).split("\n")[0] ?? "unreadable"), Option.none())
      )
    )
    if (Option.isNone(text)) return { entries: emptyEntries, present: false, unusable: false }
    const decoded = decode(text.value)
    if (Either.isRight(decoded)) return { entries: decoded.right, present: true, unusable: false }
    yield* warnUnreadable(sessionId, ParseResult.TreeFormatter.formatErrorSync(decoded.left).slice(0, 500))
    return { entries: emptyEntries, present: true, unusable: true }
  })

/**
 * The journal of a session for the life of the scope: loaded from the store, written behind the run by one writer,
 * flushed when the scope closes. A write that fails is logged and never fails the run.
 */
export const make = (sessionId: string): Effect.Effect<Journal, never, SessionStore | Scope.Scope> =>
  Effect.gen(function* () {
    const store = yield* SessionStore
    const loaded = yield* load(sessionId)
    // Read and changed only in single runtime steps, so plain variables do (a write reads them once, then saves).
    let entries = loaded.entries
    // Counts changes; the store holds revision `written`. A journal that could not be read is replaced at the first
    // write, even by an empty one.
    let revision = loaded.unusable ? 1 : 0
    let written = 0
    let discarded = false
    // Whether the store may hold a journal of the session, for `discard`.
    let stored = loaded.present
    const writing = yield* Permits.make(1)
    const wake = yield* Queue.sliding<void>(1)

    const logged = (what: string) => (effect: Effect.Effect<void, unknown>) =>
      Effect.catchAllCause(effect, (cause) =>
        Cause.isInterruptedOnly(cause)
          ? Effect.interrupt
          : Effect.logWarning(`the request journal of session ${sessionId} could not be ${what}`, cause)
      )

    const upToDate = () => discarded || revision === written
    // Nothing new, nothing to wait for: a write under way is of a revision not yet counted as written.
    const write = Effect.suspend(() =>
      upToDate()
        ? Effect.void
        : writing.withPermit(
            Effect.suspend(() => {
              if (upToDate()) return Effect.void
              const saving = revision
              return Effect.andThen(store.saveArtefact(sessionId, fileName, encode(entries)), () => {
                written = saving
                stored = true
              })
            }).pipe(logged("written"))
          )
    )

    const discard = writing.withPermit(
      Effect.suspend(() => {
        entries = emptyEntries
        discarded = true
        return stored ? store.deleteArtefact(sessionId, fileName) : Effect.void
      }).pipe(
        Effect.andThen(() => {
          stored = false
        }),
        logged("removed")
      )
    )

    yield* Effect.forkScoped(
      Effect.forever(Effect.zipRight(Effect.zipRight(Queue.take(wake), write), Effect.sleep(writeInterval)))
    )
    yield* Effect.addFinalizer(() => write)

    const record = (change: (entries: Entries) => Entries) =>
      Effect.suspend(() => {
        if (discarded) return Effect.void
        entries = change(entries)
        revision += 1
        return Queue.offer(wake, undefined)
      })
    const lookup = <A>(find: (entries: Entries) => Option.Option<A>) => Effect.sync(() => find(entries))

    return {
      search: (key) => lookup((entries) => Option.map(HashMap.get(entries.searches, key), (entry) => entry.results)),
      recordSearch: (request, results) =>
        record((entries) => ({
          ...entries,
          searches: HashMap.set(entries.searches, searchKey(request), { request, results })
        })),
      page: (url) => lookup((entries) => HashMap.get(entries.pages, url)),
      recordPage: (url, page) => record((entries) => ({ ...entries, pages: HashMap.set(entries.pages, url, page) })),
      summary: (key) => lookup((entries) => HashMap.get(entries.summaries, key)),
      recordSummary: (key, summary) =>
        record((entries) => ({ ...entries, summaries: HashMap.set(entries.summaries, key, summary) })),
      flush: write,
      discard
    }
  })
