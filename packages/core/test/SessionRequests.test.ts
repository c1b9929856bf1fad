import { assert, describe, it } from "@effect/vitest"
import { Effect, Ref } from "effect"
import * as ContentExtractor from "../src/ContentExtractor.js"
import * as SearchProvider from "../src/SearchProvider.js"
import { ProviderUnavailable } from "../src/Errors.js"
import * as SessionRequests from "../src/SessionRequests.js"
import { ExtractedPage, SearchResult, SourceSummary } from "../src/Source.js"
import * as Summarizer from "../src/Summarizer.js"

/** Fakes that count what reaches them, each call taking a moment so that callers overlap. */
const counting = Effect.gen(function* () {
  const searches = yield* Ref.make<ReadonlyArray<string>>([])
  const extracts = yield* Ref.make<ReadonlyArray<ReadonlyArray<string>>>([])
  const summaries = yield* Ref.make(0)
  const search: SearchProvider.Service = {
    name: "fake",
    search: (query) =>
      Effect.as(
        Effect.zipRight(
          Ref.update(searches, (all) => [...all, query]),
          Effect.sleep("10 millis")
        ),
        [
          new SearchResult({
            url: `https://a.org/${encodeURIComponent(query)}`,
            title: query,
            snippet: "s",
            provider: "fake"
          })
        ]
      )
  }
  const extractor: ContentExtractor.Service = {
    name: "fake",
    extract: (urls) =>
      Effect.as(
        Effect.zipRight(
          Ref.update(extracts, (all) => [...all, urls]),
          Effect.sleep("10 millis")
        ),
        urls.map((url) => new ExtractedPage({ url, title: "T", content: `page ${url}` }))
      )
  }
  const summarizer: Summarizer.Service = {
    summarize: (input) =>
      Effect.as(
        Effect.zipRight(
          Ref.update(summaries, (n) => n + 1),
          Effect.sleep("10 millis")
        ),
        new SourceSummary({ summary: `about ${input.content.slice(0, 10)}`, excerpts: [] })
      )
  }
  return { searches, extracts, summaries, search, extractor, summarizer }
})

const shared = <A, E>(
  fakes: Effect.Effect.Success<typeof counting>,
  program: Effect.Effect<
    A,
    E,
    SearchProvider.SearchProvider | ContentExtractor.ContentExtractor | Summarizer.Summarizer
  >
) =>
  SessionRequests.share(program).pipe(
    Effect.provideService(SearchProvider.SearchProvider, fakes.search),
    Effect.provideService(ContentExtractor.ContentExtractor, fakes.extractor),
    Effect.provideService(Summarizer.Summarizer, fakes.summarizer)
  )

describe("SessionRequests", () => {
  it.live("the same search asked by several researchers at once, in other spacing and case, goes out once", () =>
    Effect.gen(function* () {
      const fakes = yield* counting
      const results = yield* shared(
        fakes,
        Effect.forEach(
          ["Heat pumps", "heat  pumps ", "HEAT PUMPS", "gas boilers"],
          (query) => Effect.flatMap(SearchProvider.SearchProvider, (s) => s.search(query, { maxResults: 3 })),
          { concurrency: "unbounded" }
        )
      )
      assert.deepStrictEqual([...(yield* Ref.get(fakes.searches))].sort(), ["gas boilers", "heat pumps"])
      assert.strictEqual(results[0]?.[0]?.url, results[2]?.[0]?.url)
    })
  )

  it.live("different options are a different search", () =>
    Effect.gen(function* () {
      const fakes = yield* counting
      yield* shared(
        fakes,
        Effect.flatMap(SearchProvider.SearchProvider, (s) =>
          Effect.zip(s.search("q", { maxResults: 3 }), s.search("q", { maxResults: 3, topic: "news" }))
        )
      )
      assert.strictEqual((yield* Ref.get(fakes.searches)).length, 2)
    })
  )

  it.live("extractions go out once per normalised URL, the URLs of one call in one batch", () =>
    Effect.gen(function* () {
      const fakes = yield* counting
      const pages = yield* shared(
        fakes,
        Effect.flatMap(ContentExtractor.ContentExtractor, (e) =>
          Effect.zip(
            e.extract(["https://a.org/1", "https://a.org/2"]),
            e.extract(["https://a.org/1/", "https://a.org/3"]),
            { concurrent: true }
          )
        )
      )
      const calls = yield* Ref.get(fakes.extracts)
      assert.deepStrictEqual(
        calls
          .flat()
          .map((url) => url.replace(/\/$/, ""))
          .sort(),
        ["https://a.org/1", "https://a.org/2", "https://a.org/3"]
      )
      assert.strictEqual(pages[1].length, 2)
      assert.strictEqual(pages[1][0]?._tag, "ExtractedPage")
    })
  )

  it.live("a text summarised once is not summarised again, whichever URL it came from", () =>
    Effect.gen(function* () {
      const fakes = yield* counting
      yield* shared(
        fakes,
        Effect.flatMap(Summarizer.Summarizer, (s) =>
          Effect.all(
            [
              s.summarize({ url: "https://a.org", title: "A", content: "the same text" }),
              s.summarize({ url: "https://mirror.org", title: "A mirror", content: "the same text" }),
              s.summarize({ url: "https://b.org", title: "B", content: "another text" })
            ],
            { concurrency: "unbounded" }
          )
        )
      )
      assert.strictEqual(yield* Ref.get(fakes.summaries), 2)
    })
  )
})

describe("SessionRequests when an asker gives up", () => {
  it.live("a second asker still gets the answer when the first stops waiting for it", () =>
    Effect.gen(function* () {
      const fakes = yield* counting
      const slow: Summarizer.Service = {
        summarize: (input) =>
          Effect.as(Effect.sleep("100 millis"), new SourceSummary({ summary: input.content, excerpts: [] }))
      }
      const outcome = yield* SessionRequests.share(
        Effect.flatMap(Summarizer.Summarizer, (s) =>
          Effect.all(
            [
              s
                .summarize({ url: "https://a.org", title: "A", content: "text" })
                .pipe(Effect.timeoutOption("10 millis")),
              Effect.zipRight(
                Effect.sleep("5 millis"),
                s.summarize({ url: "https://b.org", title: "B", content: "text" })
              )
            ],
            { concurrency: "unbounded" }
          )
        )
      ).pipe(
        Effect.provideService(SearchProvider.SearchProvider, fakes.search),
        Effect.provideService(ContentExtractor.ContentExtractor, fakes.extractor),
        Effect.provideService(Summarizer.Summarizer, slow),
        Effect.timeoutOption("2 seconds")
      )
      assert.isTrue(outcome._tag === "Some", "the second asker never got its answer")
      if (outcome._tag === "Some") assert.strictEqual(outcome.value[1].summary, "text")
    })
  )
})

describe("SessionRequests when every asker gives up", () => {
  it.live("the request is stopped, and sent again for the next asker", () =>
    Effect.gen(function* () {
      const fakes = yield* counting
      const started = yield* Ref.make(0)
      const stopped = yield* Ref.make(0)
      const slow: Summarizer.Service = {
        summarize: (input) =>
          Effect.zipRight(
            Ref.update(started, (n) => n + 1),
            Effect.as(Effect.sleep("50 millis"), new SourceSummary({ summary: input.content, excerpts: [] }))
          ).pipe(Effect.onInterrupt(() => Ref.update(stopped, (n) => n + 1)))
      }
      const [first, second] = yield* SessionRequests.share(
        Effect.flatMap(Summarizer.Summarizer, (s) => {
          const ask = s.summarize({ url: "https://a.org", title: "A", content: "text" })
          return Effect.zip(ask.pipe(Effect.timeoutOption("5 millis")), ask)
        })
      ).pipe(
        Effect.provideService(SearchProvider.SearchProvider, fakes.search),
        Effect.provideService(ContentExtractor.ContentExtractor, fakes.extractor),
        Effect.provideService(Summarizer.Summarizer, slow)
      )
      assert.isTrue(first._tag === "None")
      assert.strictEqual(second.summary, "text")
      assert.strictEqual(yield* Ref.get(started), 2)
      assert.strictEqual(yield* Ref.get(stopped), 1)
    })
  )
})

describe("SessionRequests when a request fails", () => {
  it.live("a later asker is answered the same failure, the request not sent again", () =>
    Effect.gen(function* () {
      const fakes = yield* counting
      const sent = yield* Ref.make(0)
      const failing: SearchProvider.Service = {
        name: "fake",
        search: () =>
          Effect.zipRight(
            Ref.update(sent, (n) => n + 1),
            Effect.fail(new ProviderUnavailable({ provider: "fake", detail: "down" }))
          )
      }
      const outcomes = yield* SessionRequests.share(
        Effect.flatMap(SearchProvider.SearchProvider, (s) => {
          const ask = Effect.either(s.search("solar", { maxResults: 5 }))
          return Effect.zip(ask, ask)
        })
      ).pipe(
        Effect.provideService(SearchProvider.SearchProvider, failing),
        Effect.provideService(ContentExtractor.ContentExtractor, fakes.extractor),
        Effect.provideService(Summarizer.Summarizer, fakes.summarizer)
      )
      assert.isTrue(outcomes[0]._tag === "Left" && outcomes[1]._tag === "Left")
      assert.strictEqual(yield* Ref.get(sent), 1)
    })
  )
})
