import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Duration, Effect, Layer, Redacted } from "effect"
import { SearchProvider } from "@deep-research/core"
import * as SemanticScholar from "../../src/search/SemanticScholar.js"
import { Emulator } from "@deep-research/emulator"

const scholarAt = (emulator: Emulator.Handle, options: Partial<SemanticScholar.Options> = {}) =>
  SemanticScholar.make({ baseUrl: emulator.baseUrl("semanticScholar"), ...options })

const searchFailure = (emulator: Emulator.Handle, reply: Emulator.Reply) =>
  Effect.gen(function* () {
    yield* emulator.respond("semanticScholar.search", reply)
    return yield* Effect.flip(scholarAt(emulator).search("q", { maxResults: 3 }))
  })

const attention = {
  paperId: "204e3073870fae3d05bcbc2f6a8e263d9b72e776",
  title: "Attention is All you Need",
  url: "https://www.semanticscholar.org/paper/204e3073870fae3d05bcbc2f6a8e263d9b72e776",
  abstract: "The dominant sequence transduction models are based on complex recurrent or convolutional networks.",
  year: 2017,
  venue: "Neural Information Processing Systems",
  citationCount: 123456,
  publicationDate: "2017-06-12",
  authors: [{ name: "Ashish Vaswani" }, { name: "Noam Shazeer" }, { name: "Niki Parmar" }, { name: "Jakob Uszkoreit" }]
}

describe("SemanticScholar mapping", () => {
  it("asks for the paper fields, the limit, and a publication date bound for a time range", () => {
    const params = SemanticScholar.searchParams(
      "transformers",
      { maxResults: 250, timeRange: "month" },
      Date.parse("2026-03-31T12:00:00Z")
    )
    assert.strictEqual(params.get("query"), "transformers")
    assert.strictEqual(params.get("limit"), "100")
    assert.strictEqual(params.get("fields"), SemanticScholar.fields)
    assert.strictEqual(params.get("publicationDateOrYear"), "2026-02-28:")
    assert.isNull(SemanticScholar.searchParams("q", { maxResults: 5 }, 0).get("publicationDateOrYear"))
  })

  it("describes a paper by authors, year, venue and citation count", () => {
    assert.strictEqual(
      SemanticScholar.describePaper(attention),
      "Ashish Vaswani, Noam Shazeer, Niki Parmar et al. · 2017 · Neural Information Processing Systems · 123,456 citations"
    )
  })
})

describe("SemanticScholar against the emulator", () => {
  it.scopedLive("maps papers to results: abstract as snippet and raw content, publication date, paper URL", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond(
        "semanticScholar.search",
        Emulator.semanticScholarPapers([
          attention,
          { paperId: "abc123", title: "A paper without abstract", year: 2020, abstract: null, url: null }
        ])
      )
      const results = yield* scholarAt(emulator).search("attention transformer", { maxResults: 5 })
      assert.strictEqual(results.length, 2)
      const [first, second] = results
      assert.strictEqual(first?.title, "Attention is All you Need")
      assert.strictEqual(first?.url, attention.url)
      assert.strictEqual(first?.publishedDate, "2017-06-12")
      assert.strictEqual(first?.provider, "semantic-scholar")
      assert.include(first?.snippet ?? "", "2017 · Neural Information Processing Systems · 123,456 citations")
      assert.include(first?.snippet ?? "", "The dominant sequence transduction models")
      assert.include(first?.rawContent ?? "", attention.abstract)
      assert.deepStrictEqual(
        first?.work?.authors,
        attention.authors.map((a) => a.name)
      )
      assert.strictEqual(first?.work?.venue, "Neural Information Processing Systems")
      assert.isFalse(first?.work?.preprint)
      assert.strictEqual(second?.url, "https://www.semanticscholar.org/paper/abc123")
      assert.strictEqual(second?.publishedDate, "2020")
      assert.isUndefined(second?.rawContent)
      assert.include(second?.snippet ?? "", "No abstract available.")
      assert.isAbove(first?.score ?? 0, second?.score ?? 0)

      const [request] = yield* emulator.requests("semanticScholar.search")
      assert.strictEqual(request?.method, "GET")
      assert.strictEqual(request?.query["query"], "attention transformer")
      assert.strictEqual(request?.query["limit"], "5")
      assert.include(request?.query["fields"] ?? "", "citationCount")
      assert.isUndefined(request?.headers["x-api-key"])
    })
  )

  it.scopedLive("sends the API key when one is given", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("semanticScholar.search", Emulator.semanticScholarPapers([]))
      const results = yield* scholarAt(emulator, { apiKey: Redacted.make("s2-key") }).search("q", { maxResults: 3 })
      assert.deepStrictEqual(results, [])
      const [request] = yield* emulator.requests("semanticScholar.search")
      assert.strictEqual(request?.headers["x-api-key"], "s2-key")
    })
  )

  it.scopedLive("maps 429 to ProviderRateLimited with the retry-after delay", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      const error = yield* searchFailure(emulator, {
        kind: "fault",
        fault: { type: "rate_limit", retryAfterSeconds: 4 }
      })
      assert.strictEqual(error._tag, "ProviderRateLimited")
      if (error._tag === "ProviderRateLimited") assert.deepStrictEqual(error.retryAfter, Duration.seconds(4))
    })
  )

  it.scopedLive("maps 403 (a refused key) to ProviderAuthenticationFailed", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      const error = yield* searchFailure(emulator, { kind: "fault", fault: { type: "auth" } })
      assert.strictEqual(error._tag, "ProviderAuthenticationFailed")
    })
  )

  it.scopedLive("maps 5xx to ProviderUnavailable and 400 to ProviderInvalidRequest", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      const unavailable = yield* searchFailure(emulator, {
        kind: "fault",
        fault: { type: "server_error", status: 500 }
      })
      assert.strictEqual(unavailable._tag, "ProviderUnavailable")
      const invalid = yield* searchFailure(emulator, { kind: "fault", fault: { type: "context_length" } })
      assert.strictEqual(invalid._tag, "ProviderInvalidRequest")
      assert.include(invalid.message, "Query is too long")
    })
  )

  it.scopedLive("layerConfig works without a key and reads SEMANTIC_SCHOLAR_BASE_URL", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("semanticScholar.search", Emulator.semanticScholarPapers([attention]))
      const provider = yield* Effect.provide(
        SearchProvider.SearchProvider,
        SemanticScholar.layerConfig().pipe(
          Layer.provide(
            Layer.setConfigProvider(
              ConfigProvider.fromMap(new Map([["SEMANTIC_SCHOLAR_BASE_URL", emulator.baseUrl("semanticScholar")]]))
            )
          )
        )
      )
      const results = yield* provider.search("q", { maxResults: 1 })
      assert.strictEqual(results[0]?.title, "Attention is All you Need")
    })
  )

  it("exports its rate limit default: one request a second", () => {
    assert.strictEqual(SemanticScholar.policy.requestsPerSecond, 1)
  })
})
