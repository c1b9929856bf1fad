/**
 * No identical request twice in a session. Within `share`, the search provider, the content extractor and the
 * summarizer in context are replaced by views that send each distinct request once and hand its answer to every
 * researcher that asks, including one that asks while the first request is still in flight: searches by normalised
 * query and options, extractions by normalised URL (still batched: the URLs of one call go out in one request), and
 * fetch-time summaries by the text summarised. Built on Effect's `Request` / `RequestResolver` with a request cache
 * that lives as long as the session's run.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Equal from "effect/Equal"
import * as Hash from "effect/Hash"
import * as Request from "effect/Request"
import * as RequestResolver from "effect/RequestResolver"
import * as ContentExtractor from "./ContentExtractor.js"
import type { MalformedOutput, ProviderError } from "./Errors.js"
import * as Novelty from "./Novelty.js"
import * as SearchProvider from "./SearchProvider.js"
import { ExtractFailure, type ExtractResult, type SearchResult, type SourceSummary } from "./Source.js"
import * as Summarizer from "./Summarizer.js"

// =============================================================================
// Requests
// =============================================================================

/** One search: a query as normalised and its options, every field a primitive so that equal searches are equal. */
interface Search extends Request.Request<ReadonlyArray<SearchResult>, ProviderError> {
  readonly _tag: "Search"
  readonly query: string
  readonly maxResults: number
  readonly depth: string
  readonly includeRawContent: boolean
  readonly topic: string
  readonly timeRange: string
  readonly includeDomains: string
  readonly excludeDomains: string
}
const Search = Request.tagged<Search>("Search")

/** One page to read, by normalised URL (the URL sent is the first asker's). */
class Extract extends Request.TaggedClass("Extract")<ExtractResult, ProviderError, { readonly url: string }> {
  [Equal.symbol](that: Equal.Equal): boolean {
    return that instanceof Extract && Novelty.normalizeUrl(that.url) === Novelty.normalizeUrl(this.url)
  }
  [Hash.symbol](): number {
    return Hash.string(Novelty.normalizeUrl(this.url))
  }
}

/** One summary, by the text summarised (the URL and title given are the first asker's). */
class Summary extends Request.TaggedClass("Summary")<
  SourceSummary,
  ProviderError | MalformedOutput,
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

// =============================================================================
// Shared views
// =============================================================================

const sharedSearch = (provider: SearchProvider.Service): SearchProvider.Service => {
  const resolver = RequestResolver.fromEffect((request: Search) =>
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
  )
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
          excludeDomains: sorted(options.excludeDomains)
        }),
        resolver
      )
  }
}

const sharedExtractor = (extractor: ContentExtractor.Service): ContentExtractor.Service => {
  // The URLs asked for together (and not known yet) go out in one call; each URL's result goes to every asker.
  const resolver = RequestResolver.makeBatched((requests: ReadonlyArray<Extract>): Effect.Effect<void> =>
    extractor.extract(requests.map((request) => request.url)).pipe(
      Effect.matchCauseEffect({
        onFailure: (cause) =>
          Effect.forEach(requests, (request) => Request.failCause(request, cause), { discard: true }),
        onSuccess: (results) =>
          Effect.forEach(
            requests,
            (request, i) => {
              const result = results[i]
              return Request.succeed(
                request,
                result ?? new ExtractFailure({ url: request.url, reason: "the extractor gave no result for this URL" })
              )
            },
            { discard: true }
          )
      })
    )
  )
  return {
    name: extractor.name,
    extract: (urls) => Effect.forEach(urls, (url) => Effect.request(new Extract({ url }), resolver), { batching: true })
  }
}

const sharedSummarizer = (summarizer: Summarizer.Service): Summarizer.Service => {
  const resolver = RequestResolver.fromEffect((request: Summary) =>
    summarizer.summarize({ url: request.url, title: request.title, content: request.content })
  )
  return { summarize: (input) => Effect.request(new Summary(input), resolver) }
}

/** Entries a session's request cache holds at most. */
const cacheCapacity = 100_000

/**
 * Runs an effect with the search provider, the content extractor and the summarizer in context shared: each distinct
 * request of the effect is sent once.
 */
export const share = <A, E, R>(
  self: Effect.Effect<A, E, R>
): Effect.Effect<A, E, R | SearchProvider.SearchProvider | ContentExtractor.ContentExtractor | Summarizer.Summarizer> =>
  Effect.gen(function* () {
    const search = sharedSearch(yield* SearchProvider.SearchProvider)
    const extractor = sharedExtractor(yield* ContentExtractor.ContentExtractor)
    const summarizer = sharedSummarizer(yield* Summarizer.Summarizer)
    const cache = yield* Request.makeCache({ capacity: cacheCapacity, timeToLive: Duration.infinity })
    return yield* self.pipe(
      Effect.provideService(SearchProvider.SearchProvider, search),
      Effect.provideService(ContentExtractor.ContentExtractor, extractor),
      Effect.provideService(Summarizer.Summarizer, summarizer),
      Effect.withRequestCaching(true),
      Effect.withRequestCache(cache)
    )
  })
