/**
 * The source policy enforced where every result and page of a run passes: the search provider and the content
 * extractor in context are replaced by views that push the policy down to the backend (as search options) and then
 * check every result and every page themselves, whatever the backend returned. What is removed is counted, per
 * reason, in a `Ref` the run writes into the session at each checkpoint; nothing removed reaches a researcher, so it
 * reaches no summary, finding or report. A page extracted is judged by what the search that found it said of it (its
 * date, its backend): a page no search dated is undated.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Ref from "effect/Ref"
import * as ContentExtractor from "../../ContentExtractor.js"
import * as Novelty from "../../Novelty.js"
import * as ResearchEvents from "../../ResearchEvents.js"
import * as SearchProvider from "../../SearchProvider.js"
import { ExtractFailure, type ExtractResult, type SearchResult } from "../../Source.js"
import * as SourcePolicy from "../../SourcePolicy.js"

/** What a search said of a URL it returned, for judging the page when it is extracted. */
export interface Seen {
  readonly provider: string
  readonly publishedDate?: string | undefined
  readonly work?: { readonly year?: number | undefined } | undefined
}

/** What the views share over a run. */
export interface Enforcement {
  readonly policy: SourcePolicy.Policy
  readonly today: string
  readonly removals: Ref.Ref<SourcePolicy.Removals>
  /** The results let through so far, by normalised URL. */
  readonly seen: Map<string, Seen>
}

const words: Readonly<Record<SourcePolicy.RemovalReason, string>> = {
  excluded_domain: "its domain is excluded",
  outside_included_domains: "its domain is not among the included ones",
  before_since: "it is dated before the window",
  after_until: "it is dated after the window",
  undated: "its date is not known and a date window is set",
  kind: "it is not of the kinds of source asked for"
}

/** Why a removal happened, in words for the researcher's notes. */
export const reasonWords = (reason: SourcePolicy.RemovalReason): string => words[reason]

const record = (enforcement: Enforcement, removed: ReadonlyArray<SourcePolicy.Removal>) =>
  removed.length === 0
    ? Effect.void
    : Ref.updateAndGet(enforcement.removals, (removals) => SourcePolicy.addRemovals(removals, removed)).pipe(
        Effect.flatMap((removals) =>
          ResearchEvents.publish({ _tag: "SourcesRemoved", removed: removed.length, total: removals.total })
        )
      )

const policedSearch = (provider: SearchProvider.Service, enforcement: Enforcement): SearchProvider.Service => {
  const pushed = SourcePolicy.pushdown(enforcement.policy, enforcement.today)
  return {
    name: provider.name,
    search: (query, options) =>
      Effect.gen(function* () {
        const results = yield* provider.search(query, {
          ...options,
          ...pushed,
          // A request's own time range stands only when the policy has none.
          timeRange: pushed.timeRange ?? options.timeRange
        })
        const kept: Array<SearchResult> = []
        const removed: Array<SourcePolicy.Removal> = []
        for (const result of results) {
          const reason = SourcePolicy.check(enforcement.policy, result)
          if (reason === undefined) {
            kept.push(result)
            enforcement.seen.set(Novelty.normalizeUrl(result.url), {
              provider: result.provider,
              publishedDate: result.publishedDate,
              work: result.work
            })
          } else {
            removed.push(new SourcePolicy.Removal({ url: result.url, reason }))
          }
        }
        yield* record(enforcement, removed)
        return kept
      })
  }
}

/** Why a page (asked for as `asked`, read at `url`) is outside the policy, judged by what the search said of it. */
const pageReason = (enforcement: Enforcement, extractorName: string, asked: string, url: string) => {
  const seen = enforcement.seen.get(Novelty.normalizeUrl(asked)) ?? enforcement.seen.get(Novelty.normalizeUrl(url))
  const described = (at: string): SourcePolicy.Described => ({
    url: at,
    provider: seen?.provider ?? extractorName,
    publishedDate: seen?.publishedDate,
    work: seen?.work
  })
  return (
    SourcePolicy.check(enforcement.policy, described(asked)) ?? SourcePolicy.check(enforcement.policy, described(url))
  )
}

const policedExtractor = (extractor: ContentExtractor.Service, enforcement: Enforcement): ContentExtractor.Service => ({
  name: extractor.name,
  extract: (urls) =>
    Effect.gen(function* () {
      // A URL outside the policy is not even fetched; a page read elsewhere (a redirect) is judged where it was read.
      const refused = new Map<string, SourcePolicy.RemovalReason>()
      for (const url of urls) {
        const reason = pageReason(enforcement, extractor.name, url, url)
        if (reason !== undefined) refused.set(url, reason)
      }
      const asked = urls.filter((url) => !refused.has(url))
      const read = asked.length === 0 ? [] : yield* extractor.extract(asked)
      const removed: Array<SourcePolicy.Removal> = []
      const outside = (url: string, reason: SourcePolicy.RemovalReason): ExtractResult => {
        removed.push(new SourcePolicy.Removal({ url, reason }))
        return new ExtractFailure({ url, reason: `left out by the source policy: ${reasonWords(reason)}` })
      }
      let next = 0
      const results = urls.map((url): ExtractResult => {
        const early = refused.get(url)
        if (early !== undefined) return outside(url, early)
        const result = read[next++] ?? new ExtractFailure({ url, reason: "the extractor gave no result for this URL" })
        if (result._tag === "ExtractFailure") return result
        const reason = pageReason(enforcement, extractor.name, url, result.url)
        return reason === undefined ? result : outside(url, reason)
      })
      yield* record(enforcement, removed)
      return results
    })
})

/**
 * Runs an effect with the search provider and the content extractor in context policed by `enforcement`. With an
 * empty policy the effect runs as it is.
 */
export const enforce =
  (enforcement: Enforcement) =>
  <A, E, R>(
    self: Effect.Effect<A, E, R>
  ): Effect.Effect<A, E, R | SearchProvider.SearchProvider | ContentExtractor.ContentExtractor> =>
    !SourcePolicy.isActive(enforcement.policy)
      ? self
      : Effect.gen(function* () {
          const search = policedSearch(yield* SearchProvider.SearchProvider, enforcement)
          const extractor = policedExtractor(yield* ContentExtractor.ContentExtractor, enforcement)
          return yield* Effect.mapInputContext(self, (context: Context.Context<R>) =>
            Context.add(
              Context.add(context, SearchProvider.SearchProvider, search),
              ContentExtractor.ContentExtractor,
              extractor
            )
          )
        })
