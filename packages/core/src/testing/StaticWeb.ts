/**
 * A small web held in memory: a `SearchProvider` that ranks its pages by the query's words, and a
 * `ContentExtractor` that serves them by URL. Part of the public testing API.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"
import * as ContentExtractor from "../ContentExtractor.js"
import type { ProviderError } from "../Errors.js"
import * as SearchProvider from "../SearchProvider.js"
import { ExtractedPage, ExtractFailure, SearchResult } from "../Source.js"

/** A page of the static web. */
export interface Page {
  readonly url: string
  readonly title: string
  readonly content: string
  /** The search snippet; the first 300 characters of the content when left out. */
  readonly snippet?: string | undefined
  readonly publishedDate?: string | undefined
}

/** Options of the static web. */
export interface Options {
  readonly pages: ReadonlyArray<Page>
  /** Name recorded on results; `static` by default. */
  readonly name?: string | undefined
  /** Results carry the page's content as raw content. */
  readonly includeRawContent?: boolean | undefined
  /** Decides the results of a query instead of word ranking: the URLs to return, in order. */
  readonly route?: ((query: string) => ReadonlyArray<string>) | undefined
  /** Fails a search or extraction call with a provider error (by query, or by the URLs). */
  readonly failSearch?: ((query: string, call: number) => ProviderError | undefined) | undefined
  readonly failExtract?: ((urls: ReadonlyArray<string>, call: number) => ProviderError | undefined) | undefined
}

const words = (text: string): ReadonlyArray<string> =>
  text
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((w) => w.length > 1)

const rank = (pages: ReadonlyArray<Page>, query: string): ReadonlyArray<Page> => {
  const terms = new Set(words(query))
  return pages
    .map((page) => {
      const text = words(`${page.title} ${page.content}`)
      const score = text.reduce((n, w) => (terms.has(w) ? n + 1 : n), 0)
      return { page, score }
    })
    .filter((x) => x.score > 0)
    .sort((a, b) => b.score - a.score)
    .map((x) => x.page)
}

/** The search provider and extractor over the pages. */
export const make = (
  options: Options
): Effect.Effect<{ readonly search: SearchProvider.Service; readonly extractor: ContentExtractor.Service }> =>
  Effect.gen(function* () {
    const name = options.name ?? "static"
    const byUrl = new Map(options.pages.map((p) => [p.url, p] as const))
    const searches = yield* Ref.make(0)
    const extractions = yield* Ref.make(0)
    const search: SearchProvider.Service = {
      name,
      search: (query, searchOptions) =>
        Effect.gen(function* () {
          const call = yield* Ref.updateAndGet(searches, (n) => n + 1)
          const failure = options.failSearch?.(query, call)
          if (failure !== undefined) return yield* Effect.fail(failure)
          const hits =
            options.route === undefined
              ? rank(options.pages, query)
              : options.route(query).flatMap((url) => {
                  const page = byUrl.get(url)
                  return page === undefined ? [] : [page]
                })
          return hits.slice(0, searchOptions.maxResults).map(
            (page, i) =>
              new SearchResult({
                url: page.url,
                title: page.title,
                snippet: page.snippet ?? page.content.slice(0, 300),
                ...(options.includeRawContent || searchOptions.includeRawContent ? { rawContent: page.content } : {}),
                score: 1 - i / Math.max(hits.length, 1),
                ...(page.publishedDate !== undefined ? { publishedDate: page.publishedDate } : {}),
                provider: name
              })
          )
        })
    }
    const extractor: ContentExtractor.Service = {
      name,
      extract: (urls) =>
        Effect.gen(function* () {
          const call = yield* Ref.updateAndGet(extractions, (n) => n + 1)
          const failure = options.failExtract?.(urls, call)
          if (failure !== undefined) return yield* Effect.fail(failure)
          return urls.map((url) => {
            const page = byUrl.get(url)
            return page === undefined
              ? new ExtractFailure({ url, reason: "not found (404)" })
              : new ExtractedPage({ url, title: page.title, content: page.content, contentType: "text/plain" })
          })
        })
    }
    return { search, extractor }
  })

/** The static web as the `SearchProvider` and `ContentExtractor` in context. */
export const layer = (
  options: Options
): Layer.Layer<SearchProvider.SearchProvider | ContentExtractor.ContentExtractor> =>
  Layer.unwrapEffect(
    Effect.map(make(options), ({ extractor, search }) =>
      Layer.merge(
        Layer.succeed(SearchProvider.SearchProvider, search),
        Layer.succeed(ContentExtractor.ContentExtractor, extractor)
      )
    )
  )
