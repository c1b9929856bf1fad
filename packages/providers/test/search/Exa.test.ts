import { assert, describe, it } from "@effect/vitest"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import { ConfigProvider, Duration, Effect, Layer, Redacted } from "effect"
import { SearchProvider } from "@deep-research/core"
import * as Exa from "../../src/search/Exa.js"
import { Emulator } from "@deep-research/emulator"

const exaAt = (emulator: Emulator.Handle, options: Partial<Exa.Options> = {}) =>
  Exa.make({ apiKey: Redacted.make("exa-emulator"), baseUrl: emulator.baseUrl("exa"), ...options })

const searchFailure = (emulator: Emulator.Handle, reply: Emulator.Reply) =>
  Effect.gen(function* () {
    yield* emulator.respond("exa.search", reply)
    return yield* Effect.flip(exaAt(emulator).search.search("q", { maxResults: 3 }))
  })

describe("Exa mapping", () => {
  it("builds the search body with contents, filters, a start date for the time range and a category", () => {
    const now = Date.parse("2026-03-10T00:00:00.000Z")
    assert.deepStrictEqual(
      Exa.searchBody(
        "coral bleaching",
        {
          maxResults: 7,
          includeRawContent: true,
          topic: "news",
          timeRange: "week",
          includeDomains: ["nature.com"],
          excludeDomains: ["example.com"]
        },
        "auto",
        now
      ),
      {
        query: "coral bleaching",
        type: "auto",
        numResults: 7,
        contents: { highlights: { maxCharacters: 500, query: "coral bleaching" }, text: { maxCharacters: 50_000 } },
        includeDomains: ["nature.com"],
        excludeDomains: ["example.com"],
        startPublishedDate: "2026-03-03T00:00:00.000Z",
        category: "news"
      }
    )
  })

  it("leaves out what was not asked for", () => {
    assert.deepStrictEqual(Exa.searchBody("q", { maxResults: 500 }, "auto", 0), {
      query: "q",
      type: "auto",
      numResults: 100,
      contents: { highlights: { maxCharacters: 500, query: "q" } }
    })
  })

  it("exports its rate limit default as resilience overrides", () => {
    assert.strictEqual(Exa.policy.requestsPerSecond, 5)
    assert.strictEqual(Exa.policy.burst, 5)
  })
})

describe("Exa against the emulator", () => {
  it.scopedLive("searches with the key header and maps highlights, text, score and date", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond(
        "exa.search",
        Emulator.exaResults([
          {
            url: "https://a.org/reefs",
            title: "Reefs in trouble",
            highlights: ["Corals bleach when water warms.", "Recovery takes a decade."],
            text: "Full article text about reefs.",
            score: 0.42,
            publishedDate: "2025-06-01T00:00:00.000Z"
          },
          { url: "https://b.org/plain", title: "", summary: "A summary only." },
          { url: "https://c.org/text", title: "Text only", text: "word ".repeat(200) }
        ])
      )
      const results = yield* exaAt(emulator).search.search("coral bleaching", {
        maxResults: 5,
        includeRawContent: true
      })
      assert.deepStrictEqual(
        results.map((r) => [r.url, r.title, r.snippet, r.rawContent, r.score, r.publishedDate, r.provider]),
        [
          [
            "https://a.org/reefs",
            "Reefs in trouble",
            "Corals bleach when water warms. … Recovery takes a decade.",
            "Full article text about reefs.",
            0.42,
            "2025-06-01T00:00:00.000Z",
            "exa"
          ],
          ["https://b.org/plain", "https://b.org/plain", "A summary only.", undefined, undefined, undefined, "exa"],
          [
            "https://c.org/text",
            "Text only",
            `${"word ".repeat(100).slice(0, 500)}…`,
            "word ".repeat(200),
            undefined,
            undefined,
            "exa"
          ]
        ]
      )
      const [request] = yield* emulator.requests("exa.search")
      assert.strictEqual(request?.headers["x-api-key"], "exa-emulator")
      assert.deepInclude(request?.body, { query: "coral bleaching", numResults: 5, type: "auto" })
    })
  )

  it.scopedLive("returns at most maxResults results", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond(
        "exa.search",
        Emulator.exaResults([1, 2, 3, 4].map((n) => ({ url: `https://a.org/${n}`, title: `R${n}` })))
      )
      const results = yield* exaAt(emulator).search.search("q", { maxResults: 2 })
      assert.deepStrictEqual(
        results.map((r) => r.url),
        ["https://a.org/1", "https://a.org/2"]
      )
    })
  )

  it.scopedLive("extracts through /contents, one result per URL, failures from statuses", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond(
        "exa.contents",
        Emulator.exaContents(
          [{ url: "https://a.org/1", title: "One", text: "Page one text." }],
          [{ url: "https://b.org/2", tag: "CRAWL_NOT_FOUND" }]
        )
      )
      const results = yield* exaAt(emulator).extractor.extract([
        "https://a.org/1",
        "https://b.org/2",
        "https://c.org/3"
      ])
      assert.deepStrictEqual(
        results.map((r) => (r._tag === "ExtractedPage" ? [r.url, r.title, r.content] : [r.url, r.reason])),
        [
          ["https://a.org/1", "One", "Page one text."],
          ["https://b.org/2", "Exa could not read the page: CRAWL_NOT_FOUND (404)"],
          ["https://c.org/3", "Exa did not return this URL"]
        ]
      )
      const [request] = yield* emulator.requests("exa.contents")
      assert.deepInclude(request?.body, { urls: ["https://a.org/1", "https://b.org/2", "https://c.org/3"] })
    })
  )

  it.scopedLive("maps 401 to ProviderAuthenticationFailed", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      const error = yield* searchFailure(emulator, { kind: "fault", fault: { type: "auth" } })
      assert.strictEqual(error._tag, "ProviderAuthenticationFailed")
      assert.include(error.message, "Invalid API key")
    })
  )

  it.scopedLive("maps 429 to ProviderRateLimited with the retry-after delay", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      const error = yield* searchFailure(emulator, {
        kind: "fault",
        fault: { type: "rate_limit", retryAfterSeconds: 7 }
      })
      assert.strictEqual(error._tag, "ProviderRateLimited")
      if (error._tag === "ProviderRateLimited") assert.deepStrictEqual(error.retryAfter, Duration.seconds(7))
    })
  )

  it.scopedLive("maps 402 (no more credits) to ProviderQuotaExhausted", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      const error = yield* searchFailure(emulator, { kind: "fault", fault: { type: "quota" } })
      assert.strictEqual(error._tag, "ProviderQuotaExhausted")
    })
  )

  it.scopedLive("maps 5xx to ProviderUnavailable with the status", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      const error = yield* searchFailure(emulator, { kind: "fault", fault: { type: "server_error", status: 503 } })
      assert.strictEqual(error._tag, "ProviderUnavailable")
      if (error._tag === "ProviderUnavailable") assert.strictEqual(error.status, 503)
    })
  )

  it.scopedLive("maps 400 to ProviderInvalidRequest with Exa's message", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      const error = yield* searchFailure(emulator, { kind: "fault", fault: { type: "context_length" } })
      assert.strictEqual(error._tag, "ProviderInvalidRequest")
      assert.include(error.message, "Request body is too large")
    })
  )

  it.scopedLive("maps malformed JSON and a dropped connection to ProviderUnavailable", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      const malformed = yield* searchFailure(emulator, { kind: "fault", fault: { type: "malformed_json" } })
      assert.strictEqual(malformed._tag, "ProviderUnavailable")
      const reset = yield* searchFailure(emulator, { kind: "fault", fault: { type: "reset" } })
      assert.strictEqual(reset._tag, "ProviderUnavailable")
    })
  )

  it.scopedLive("gives up with ProviderTimeout when Exa does not answer in time", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("exa.search", { kind: "fault", fault: { type: "hang" } })
      const error = yield* Effect.flip(exaAt(emulator, { timeout: "200 millis" }).search.search("q", { maxResults: 1 }))
      assert.strictEqual(error._tag, "ProviderTimeout")
    })
  )

  it.effect("fails with ProviderAuthenticationFailed before any request when the key is empty", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(
        Exa.make({ apiKey: Redacted.make(""), baseUrl: "http://127.0.0.1:9" }).search.search("q", { maxResults: 1 })
      )
      assert.strictEqual(error._tag, "ProviderAuthenticationFailed")
      assert.include(error.message, "no Exa API key")
    })
  )

  it.scopedLive("layerConfig reads EXA_API_KEY and EXA_BASE_URL", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("exa.search", Emulator.exaResults([{ url: "https://a.org/1", title: "One" }]))
      const provider = yield* Effect.provide(
        SearchProvider.SearchProvider,
        Exa.layerConfig().pipe(
          Layer.provide(
            Layer.setConfigProvider(
              ConfigProvider.fromMap(
                new Map([
                  ["EXA_API_KEY", "exa-from-env"],
                  ["EXA_BASE_URL", emulator.baseUrl("exa")]
                ])
              )
            )
          )
        )
      )
      const results = yield* provider.search("q", { maxResults: 1 })
      assert.strictEqual(results[0]?.url, "https://a.org/1")
      const [request] = yield* emulator.requests("exa.search")
      assert.strictEqual(request?.headers["x-api-key"], "exa-from-env")
    })
  )
})

describe("Exa over a client of the caller's", () => {
  it.effect("sends its requests through the HttpClient it is given, with the key as a header", () =>
    Effect.gen(function* () {
      const seen: Array<{ readonly url: string; readonly key: string | undefined }> = []
      const client = HttpClient.make((request, url) =>
        Effect.sync(() => {
          seen.push({ url: url.toString(), key: request.headers["x-api-key"] })
          const body = { requestId: "r1", results: [{ url: "https://a.org/1", title: "A", text: "About A." }] }
          return HttpClientResponse.fromWeb(request, new Response(JSON.stringify(body), { status: 200 }))
        })
      )
      const exa = Exa.make({ apiKey: Redacted.make("exa-key"), baseUrl: "https://exa.test", httpClient: client })
      const results = yield* exa.search.search("graphene", { maxResults: 1 })
      assert.deepStrictEqual(
        results.map((r) => r.url),
        ["https://a.org/1"]
      )
      assert.deepStrictEqual(seen, [{ url: "https://exa.test/search", key: "exa-key" }])
    })
  )
})
