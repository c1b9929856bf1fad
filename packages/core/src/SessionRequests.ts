/**
 * No identical request twice in a session. Within `share`, the search provider, the content extractor and the
 * summarizer in context are replaced by views that send each distinct request once and hand its answer to every
 * researcher that asks, including one that asks while the first request is still in flight: searches by normalised
 * query and options, extractions by normalised URL (still batched: the URLs of one call go out in one request), and
 * fetch-time summaries by the text summarised. Extractions are built on Effect's `Request` / `RequestResolver` (for
 * their batching) with a request cache that lives as long as the session's run; searches and summaries, which are not
 * batched, on a map of answers by key that does the same for a fifth of the runtime steps (see `keyed`). With the
 * session's `journal`, what was answered also outlives the run: each answer is journaled to the session's store, and
 * a resumed run takes from the journal what is there instead of sending it again.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Equal from "effect/Equal"
import * as Fiber from "effect/Fiber"
import * as Hash from "effect/Hash"
import * as Option from "effect/Option"
import * as Request from "effect/Request"
import * as RequestResolver from "effect/RequestResolver"
import type * as Scope from "effect/Scope"
import * as ContentExtractor from "./ContentExtractor.js"
import type { MalformedOutput, ProviderError } from "./Errors.js"
import * as RequestJournal from "./internal/requestJournal.js"
import * as Novelty from "./Novelty.js"
import * as SearchProvider from "./SearchProvider.js"
import type { SessionStore } from "./SessionStore.js"
import { ExtractFailure, type ExtractResult, type SearchResult, type SourceSummary } from "./Source.js"
import * as Summarizer from "./Summarizer.js"

// =============================================================================
// Requests
// =============================================================================

/** One page to read, by normalised URL (the URL sent is the first asker's). */
class Extract extends Request.TaggedClass("Extract")<ExtractResult, ProviderError, { readonly url: string }> {
  [Equal.symbol](that: Equal.Equal): boolean {
    return that instanceof Extract && Novelty.normalizeUrl(that.url) === Novelty.normalizeUrl(this.url)
  }
  [Hash.symbol](): number {
    return Hash.string(Novelty.normalizeUrl(this.url))
  }
}

/** Whitespace and case do not make a different web search. */
export const normalizeQuery = (query: string): string => query.trim().replace(/\s+/g, " ").toLowerCase()

const sorted = (values: ReadonlyArray<string> | undefined): string => [...(values ?? [])].sort().join(",")
const listOf = (joined: string): ReadonlyArray<string> | undefined => (joined === "" ? undefined : joined.split(","))

// =============================================================================
// Shared views
// =============================================================================

/** A request in flight or answered: its answer, the askers waiting for it, and its sender while it runs. */
interface Shared<A, E> {
  readonly answer: Deferred.Deferred<A, E>
  waiting: number
  sender: Fiber.RuntimeFiber<boolean> | undefined
  settled: boolean
}

/**
 * Each distinct request, by key, sent once for every asker, as Effect's request cache shares a request: the first
 * asker starts it in a fiber of its own (carrying the asker's context: its span, its session); later askers, while it
 * runs and after, wait for the same answer, a failure included. When every asker has stopped waiting before the
 * answer came, the request is interrupted and forgotten, so that the next asker sends it again.
 */
const keyed = <A, E>() => {
  const requests = new Map<string, Shared<A, E>>()
  // An asker stops waiting: the request's sender, when it was the last to wait for an answer still to come.
  const leave = (key: string, shared: Shared<A, E>): Fiber.RuntimeFiber<boolean> | undefined => {
    shared.waiting -= 1
    if (shared.waiting > 0 || shared.sender === undefined) return undefined
    const sender = shared.sender
    shared.sender = undefined
    if (requests.get(key) === shared) requests.delete(key)
    return sender
  }
  return (key: string, send: () => Effect.Effect<A, E>): Effect.Effect<A, E> =>
    Effect.uninterruptibleMask((restore) =>
      Effect.withFiberRuntime((fiber) => {
        const known = requests.get(key)
        const shared: Shared<A, E> = known ?? {
          answer: Deferred.unsafeMake(fiber.id()),
          waiting: 0,
          sender: undefined,
          settled: false
        }
        shared.waiting += 1
        // Within the mask, as `onExit` would (its own mask a few steps more): the asker always leaves.
        const awaited = Effect.matchCauseEffect(restore(Deferred.await(shared.answer)), {
          onFailure: (cause) => {
            const sender = leave(key, shared)
            return sender === undefined
              ? Effect.failCause(cause)
              : Effect.zipRight(Fiber.interrupt(sender), Effect.failCause(cause))
          },
          onSuccess: (answer) => {
            const sender = leave(key, shared)
            return sender === undefined ? Effect.succeed(answer) : Effect.as(Fiber.interrupt(sender), answer)
          }
        })
        if (known !== undefined) return awaited
        requests.set(key, shared)
        return Effect.flatMap(
          Effect.forkDaemon(
            Effect.ensuring(
              Effect.interruptible(Deferred.complete(shared.answer, Effect.suspend(send))),
              Effect.sync(() => {
                shared.settled = true
                shared.sender = undefined
              })
            )
          ),
          (sender) => {
            if (!shared.settled) shared.sender = sender
            return awaited
          }
        )
      })
    )
}

/** Sends a request not found in the journal, and journals its answer. */
const answered = <A, E>(
  known: Effect.Effect<Option.Option<A>>,
  send: Effect.Effect<A, E>,
  record: (answer: A) => Effect.Effect<void>
): Effect.Effect<A, E> =>
  Effect.flatMap(known, Option.match({ onSome: Effect.succeed, onNone: () => Effect.tap(send, record) }))

const sendSearch = (provider: SearchProvider.Service, request: RequestJournal.SearchKey) =>
  provider.search(request.query, {
    maxResults: request.maxResults,
    ...(request.depth !== "" ? { depth: request.depth === "advanced" ? "advanced" : "basic" } : {}),
    ...(request.includeRawContent ? { includeRawContent: true } : {}),
    ...(request.topic === "news" || request.topic === "finance" || request.topic === "general"
      ? { topic: request.topic }
      : {}),
    ...(request.timeRange === "day" ||
    request.timeRange === "week" ||
    request.timeRange === "month" ||
    request.timeRange === "year"
      ? { timeRange: request.timeRange }
      : {}),
    ...(listOf(request.includeDomains) !== undefined ? { includeDomains: listOf(request.includeDomains) } : {}),
    ...(listOf(request.excludeDomains) !== undefined ? { excludeDomains: listOf(request.excludeDomains) } : {})
  })

const sharedSearch = (provider: SearchProvider.Service, journal: RequestJournal.Journal): SearchProvider.Service => {
  const share = keyed<ReadonlyArray<SearchResult>, ProviderError>()
  return {
    name: provider.name,
    search: (query, options) => {
      const request: RequestJournal.SearchKey = {
        query: normalizeQuery(query),
        maxResults: options.maxResults,
        depth: options.depth ?? "",
        includeRawContent: options.includeRawContent === true,
        topic: options.topic ?? "",
        timeRange: options.timeRange ?? "",
        includeDomains: sorted(options.includeDomains),
        excludeDomains: sorted(options.excludeDomains)
      }
      const key = RequestJournal.searchKey(request)
      return share(key, () =>
        answered(journal.search(key), sendSearch(provider, request), (results) =>
          journal.recordSearch(request, results)
        )
      )
    }
  }
}

/** Sends one batch of extractions; each URL's result goes to every asker, and each page read is journaled. */
const sendExtracts = (
  extractor: ContentExtractor.Service,
  journal: RequestJournal.Journal,
  requests: ReadonlyArray<Extract>
): Effect.Effect<void> =>
  extractor.extract(requests.map((request) => request.url)).pipe(
    Effect.matchCauseEffect({
      onFailure: (cause) => Effect.forEach(requests, (request) => Request.failCause(request, cause), { discard: true }),
      onSuccess: (results) =>
        Effect.forEach(
          requests,
          (request, i) => {
            const result =
              results[i] ??
              new ExtractFailure({ url: request.url, reason: "the extractor gave no result for this URL" })
            // A page that could not be read is asked for again by a resumed run: the failure may have passed.
            return Effect.zipRight(
              result._tag === "ExtractedPage"
                ? journal.recordPage(Novelty.normalizeUrl(request.url), result)
                : Effect.void,
              Request.succeed(request, result)
            )
          },
          { discard: true }
        )
    })
  )

const sharedExtractor = (
  extractor: ContentExtractor.Service,
  journal: RequestJournal.Journal
): ContentExtractor.Service => {
  // The URLs asked for together (and not known yet) go out in one call; each URL's result goes to every asker.
  const resolver = RequestResolver.makeBatched((requests: ReadonlyArray<Extract>): Effect.Effect<void> =>
    Effect.gen(function* () {
      const unknown: Array<Extract> = []
      for (const request of requests) {
        const page = yield* journal.page(Novelty.normalizeUrl(request.url))
        if (Option.isSome(page)) yield* Request.succeed(request, page.value)
        else unknown.push(request)
      }
      if (unknown.length > 0) yield* sendExtracts(extractor, journal, unknown)
    })
  )
  return {
    name: extractor.name,
    extract: (urls) => Effect.forEach(urls, (url) => Effect.request(new Extract({ url }), resolver), { batching: true })
  }
}

const sharedSummarizer = (summarizer: Summarizer.Service, journal: RequestJournal.Journal): Summarizer.Service => {
  const share = keyed<SourceSummary, ProviderError | MalformedOutput>()
  return {
    summarize: (input) =>
      share(input.content, () => {
        const key = RequestJournal.summaryKey(input.content)
        return answered(
          journal.summary(key),
          summarizer.summarize({ url: input.url, title: input.title, content: input.content }),
          (summary) => journal.recordSummary(key, summary)
        )
      })
  }
}

/** Entries a session's request cache holds at most. */
const cacheCapacity = 100_000

/** A session's journal of answered requests: what its earlier runs were answered, and the recording of new answers. */
export type Journal = RequestJournal.Journal

/**
 * The journal of a session, kept in its store, for the life of the scope: read now (a journal that cannot be read is
 * ignored with a warning), written behind the run one write at a time, and flushed when the scope closes.
 */
export const journal: (sessionId: string) => Effect.Effect<Journal, never, SessionStore | Scope.Scope> =
  RequestJournal.make

/**
 * Runs an effect with the search provider, the content extractor and the summarizer in context shared and journaled:
 * each distinct request of the effect is sent once, and not at all when the journal holds its answer.
 */
export const shareJournaled =
  (journal: Journal) =>
  <A, E, R>(
    self: Effect.Effect<A, E, R>
  ): Effect.Effect<
    A,
    E,
    R | SearchProvider.SearchProvider | ContentExtractor.ContentExtractor | Summarizer.Summarizer
  > =>
    Effect.gen(function* () {
      const search = sharedSearch(yield* SearchProvider.SearchProvider, journal)
      const extractor = sharedExtractor(yield* ContentExtractor.ContentExtractor, journal)
      const summarizer = sharedSummarizer(yield* Summarizer.Summarizer, journal)
      const cache = yield* Request.makeCache({ capacity: cacheCapacity, timeToLive: Duration.infinity })
      return yield* self.pipe(
        // The three views in one change of the context (each `provideService` is a change of its own).
        Effect.mapInputContext((context: Context.Context<R>) =>
          Context.add(
            Context.add(
              Context.add(context, SearchProvider.SearchProvider, search),
              ContentExtractor.ContentExtractor,
              extractor
            ),
            Summarizer.Summarizer,
            summarizer
          )
        ),
        Effect.withRequestCaching(true),
        Effect.withRequestCache(cache)
      )
    })

/**
 * Runs an effect with the search provider, the content extractor and the summarizer in context shared: each distinct
 * request of the effect is sent once. Nothing is journaled.
 */
export const share: <A, E, R>(
  self: Effect.Effect<A, E, R>
) => Effect.Effect<
  A,
  E,
  R | SearchProvider.SearchProvider | ContentExtractor.ContentExtractor | Summarizer.Summarizer
> = shareJournaled(RequestJournal.none)
