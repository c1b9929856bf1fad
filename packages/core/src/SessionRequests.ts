/**
 * No identical request twice in a session. Within `share`, the search provider, the content extractor and the
 * summarizer in context are replaced by views that send each distinct request once and hand its answer to every
 * researcher that asks, including one that asks while the first request is still in flight: searches by normalised
 * query and options, extractions by normalised URL (still batched: the URLs of one call go out in one request), and
 * fetch-time summaries by the text summarised. Built on Effect's `Request` / `RequestResolver` with a request cache
 * that lives as long as the session's run: a request whose askers all gave up before its answer came is interrupted,
 * and the next asker sends it again. With the session's `journal`, what was answered also outlives the run: each
 * answer is journaled to the session's store, and a resumed run takes from the journal what is there instead of
 * sending it again.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Context from "effect/Context"
import * as Equal from "effect/Equal"
import * as Hash from "effect/Hash"
import * as Option from "effect/Option"
import * as Request from "effect/Request"
import * as RequestResolver from "effect/RequestResolver"
import type * as Scope from "effect/Scope"
import * as ContentExtractor from "./ContentExtractor.js"
import type { ModelMalformedOutput, ProviderError } from "./Errors.js"
import * as RequestJournal from "./internal/session/requestJournal.js"
import { ModelRouter } from "./ModelRouter.js"
import * as Novelty from "./Novelty.js"
import * as Resilience from "./Resilience.js"
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

/** One search: a query as normalised and its options, every field a primitive so that equal searches are equal. */
interface Search extends Request.Request<ReadonlyArray<SearchResult>, ProviderError>, RequestJournal.SearchKey {
  readonly _tag: "Search"
}
const Search = Request.tagged<Search>("Search")

const searchKeyOf = (request: Search): RequestJournal.SearchKey => ({
  query: request.query,
  maxResults: request.maxResults,
  depth: request.depth,
  includeRawContent: request.includeRawContent,
  topic: request.topic,
  timeRange: request.timeRange,
  includeDomains: request.includeDomains,
  excludeDomains: request.excludeDomains,
  dateWindow: request.dateWindow
})

/** One summary, by the text summarised (the URL and title sent are the first asker's). */
class Summary extends Request.TaggedClass("Summary")<
  SourceSummary,
  ProviderError | ModelMalformedOutput,
  { readonly url: string; readonly title: string; readonly content: string }
> {
  [Equal.symbol](that: Equal.Equal): boolean {
    return that instanceof Summary && that.content === this.content
  }
  [Hash.symbol](): number {
    return Hash.string(this.content)
  }
}

/** Whitespace and case do not make a different web search. */
export const normalizeQuery = (query: string): string => query.trim().replace(/\s+/g, " ").toLowerCase()

const sorted = (values: ReadonlyArray<string> | undefined): string => [...(values ?? [])].sort().join(",")
const listOf = (joined: string): ReadonlyArray<string> | undefined => (joined === "" ? undefined : joined.split(","))
const dateWindowOf = (window: string): { readonly since?: string; readonly until?: string } => {
  const [since = "", until = ""] = window.split("..")
  return { ...(since !== "" ? { since } : {}), ...(until !== "" ? { until } : {}) }
}

// =============================================================================
// Shared views
// =============================================================================

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
    ...(listOf(request.excludeDomains) !== undefined ? { excludeDomains: listOf(request.excludeDomains) } : {}),
    ...dateWindowOf(request.dateWindow)
  })

const sharedSearch = (provider: SearchProvider.Service, journal: RequestJournal.Journal): SearchProvider.Service => {
  const resolver = RequestResolver.fromEffect((request: Search) => {
    const key = searchKeyOf(request)
    return answered(journal.search(RequestJournal.searchKey(key)), sendSearch(provider, key), (results) =>
      journal.recordSearch(key, results)
    )
  })
  return {
    name: provider.name,
    search: (query, options) =>
      Effect.request(
        Search({
          query: normalizeQuery(query),
          maxResults: options.maxResults,
          depth: options.depth ?? "",
          includeRawContent: options.includeRawContent === true,
          topic: options.topic ?? "",
          timeRange: options.timeRange ?? "",
          includeDomains: sorted(options.includeDomains),
          excludeDomains: sorted(options.excludeDomains),
          dateWindow:
            options.since === undefined && options.until === undefined
              ? ""
              : `${options.since ?? ""}..${options.until ?? ""}`
        }),
        resolver
      )
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
  const resolver = RequestResolver.fromEffect((request: Summary) => {
    const key = RequestJournal.summaryKey(request.content)
    return answered(
      journal.summary(key),
      summarizer.summarize({ url: request.url, title: request.title, content: request.content }),
      (summary) => journal.recordSummary(key, summary)
    )
  })
  return { summarize: (input) => Effect.request(new Summary(input), resolver) }
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

const unprotected: Pick<Resilience.Service, "wrapSearchProvider" | "wrapContentExtractor"> = {
  wrapSearchProvider: (provider) => provider,
  wrapContentExtractor: (extractor) => extractor
}

/**
 * The policy search and extraction go through: the `Resilience` in context, else the one the `ModelRouter` was made
 * under (the README's wiring provides it to the layers, not to the program), else none.
 */
const resilience = Effect.gen(function* () {
  const inContext = yield* Effect.serviceOption(Resilience.Resilience)
  if (Option.isSome(inContext)) return inContext.value
  const router = yield* Effect.serviceOption(ModelRouter)
  return Option.isSome(router) && router.value.resilience !== undefined ? router.value.resilience : unprotected
})

/**
 * Runs an effect with the search provider, the content extractor and the summarizer in context shared and journaled:
 * each distinct request of the effect is sent once, and not at all when the journal holds its answer. Search and
 * extraction go through the resilience policy (`resilience` above): this is where every provider a user gives the
 * pipeline is protected, whoever wrote it.
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
      const policy = yield* resilience
      const search = sharedSearch(policy.wrapSearchProvider(yield* SearchProvider.SearchProvider), journal)
      const extractor = sharedExtractor(policy.wrapContentExtractor(yield* ContentExtractor.ContentExtractor), journal)
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
