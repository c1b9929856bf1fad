import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Duration, Effect, Layer, Redacted } from "effect"
import { SearchProvider } from "@deep-research/core"
import * as Perplexity from "../../src/search/Perplexity.js"
import { Emulator } from "@deep-research/emulator"

const perplexityAt = (emulator: Emulator.Handle, options: Partial<Perplexity.Options> = {}) =>
  Perplexity.make({ apiKey: Redacted.make("pplx-emulator"), baseUrl: emulator.baseUrl("perplexity"), ...options })

const searchFailure = (emulator: Emulator.Handle, reply: Emulator.Reply) =>
  Effect.gen(function* () {
    yield* emulator.respond("perplexity.chat", reply)
    return yield* Effect.flip(perplexityAt(emulator).search("q", { maxResults: 3 }))
  })

describe("Perplexity mapping", () => {
  it("asks Sonar with domain filters (exclusions marked with -) and a recency filter", () => {
    const request = Perplexity.sonarRequest(
      "coral bleaching",
      { maxResults: 5, timeRange: "month", includeDomains: ["nature.com"], excludeDomains: ["example.com"] },
      "sonar-pro",
      "medium"
    )
    assert.strictEqual(request.model, "sonar-pro")
    assert.deepStrictEqual(request.search_domain_filter, ["nature.com", "-example.com"])
    assert.strictEqual(request.search_recency_filter, "month")
    assert.deepStrictEqual(request.web_search_options, { search_context_size: "medium" })
    assert.deepStrictEqual(request.messages[1], { role: "user", content: "coral bleaching" })
  })

  it("falls back to citations, with the citing sentences of the answer as snippets", () => {
    const results = Perplexity.toSearchResults(
      {
        choices: [{ message: { content: "Reefs bleach in heatwaves [1]. Recovery is slow [2]. Both matter [1][2]." } }],
        citations: ["https://a.org/heat", "https://b.org/recovery"]
      },
      "perplexity"
    )
    assert.deepStrictEqual(
      results.map((r) => [r.url, r.title, r.snippet, r.score]),
      [
        ["https://a.org/heat", "a.org", "Reefs bleach in heatwaves. Both matter.", 1],
        ["https://b.org/recovery", "b.org", "Recovery is slow. Both matter.", 0.5]
      ]
    )
  })

  it("leaves out of a snippet the sentences that also cite a page the search's domain filters remove", () => {
    const response = {
      choices: [
        {
          message: {
            content: "Reefs bleach in heatwaves [1]. A denied blog says reefs are fine [1][2]. Recovery is slow [3]."
          }
        }
      ],
      citations: ["https://a.org/heat", "https://blog.denied.com/fine", "https://c.org/recovery"]
    }
    const snippets = (options: { includeDomains?: Array<string>; excludeDomains?: Array<string> }) =>
      Perplexity.toSearchResults(response, "perplexity", options).map((r) => [r.url, r.snippet])
    assert.deepStrictEqual(snippets({ excludeDomains: ["denied.com"] }), [
      ["https://a.org/heat", "Reefs bleach in heatwaves."],
      ["https://blog.denied.com/fine", ""],
      ["https://c.org/recovery", "Recovery is slow."]
    ])
    assert.deepStrictEqual(snippets({ includeDomains: ["a.org", "c.org"] }), [
      ["https://a.org/heat", "Reefs bleach in heatwaves."],
      ["https://blog.denied.com/fine", ""],
      ["https://c.org/recovery", "Recovery is slow."]
    ])
    assert.strictEqual(snippets({})[0]?.[1], "Reefs bleach in heatwaves. A denied blog says reefs are fine.")
  })

  it("returns no results when the answer cites nothing", () => {
    assert.deepStrictEqual(
      Perplexity.toSearchResults({ choices: [{ message: { content: "No sources." } }] }, "perplexity"),
      []
    )
  })
})

describe("Perplexity against the emulator", () => {
  it.scopedLive("takes the results from search_results, through the OpenAI-compatible API", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond(
        "perplexity.chat",
        Emulator.perplexityAnswer("Corals bleach when water warms [1]. Reefs recover slowly [2].", {
          searchResults: [
            { url: "https://a.org/heat", title: "Heat and reefs", snippet: "Marine heatwaves...", date: "2025-02-01" },
            { url: "https://b.org/recovery", title: "Recovery" },
            { url: "https://c.org/other", title: "Other" }
          ]
        })
      )
      const results = yield* perplexityAt(emulator).search("coral bleaching", { maxResults: 2, timeRange: "year" })
      assert.deepStrictEqual(
        results.map((r) => [r.url, r.title, r.snippet, r.publishedDate, r.provider]),
        [
          ["https://a.org/heat", "Heat and reefs", "Marine heatwaves...", "2025-02-01", "perplexity"],
          ["https://b.org/recovery", "Recovery", "Reefs recover slowly.", undefined, "perplexity"]
        ]
      )
      const [request] = yield* emulator.requests("perplexity.chat")
      assert.strictEqual(request?.headers["authorization"], "Bearer pplx-emulator")
      assert.deepInclude(request?.body, { model: "sonar", search_recency_filter: "year" })
    })
  )

  it.scopedLive("takes the results from citations when the answer has no search_results", () =>
    Effect.gen(function* () {
      // the shape of models that return only the cited URLs: no search_results field at all
      const emulator = yield* Emulator.start()
      yield* emulator.respond(
        "perplexity.chat",
        Emulator.json({
          id: "pplx-citations-only",
          object: "chat.completion",
          created: 1_760_000_000,
          model: "sonar",
          choices: [
            {
              index: 0,
              message: { role: "assistant", content: "Corals bleach when water warms [1]. Reefs recover slowly [2]." },
              finish_reason: "stop"
            }
          ],
          citations: ["https://a.org/heat", "https://b.org/recovery"],
          usage: { prompt_tokens: 12, completion_tokens: 14, total_tokens: 26 }
        })
      )
      const results = yield* perplexityAt(emulator).search("coral bleaching", { maxResults: 5 })
      assert.deepStrictEqual(
        results.map((r) => [r.url, r.title, r.snippet, r.provider]),
        [
          ["https://a.org/heat", "a.org", "Corals bleach when water warms.", "perplexity"],
          ["https://b.org/recovery", "b.org", "Reefs recover slowly.", "perplexity"]
        ]
      )
    })
  )

  it.scopedLive("maps 401 to ProviderAuthenticationFailed", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      const error = yield* searchFailure(emulator, { kind: "fault", fault: { type: "auth" } })
      assert.strictEqual(error._tag, "ProviderAuthenticationFailed")
    })
  )

  it.scopedLive("maps 429 to ProviderRateLimited with the retry-after delay, without retrying inside the SDK", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      const error = yield* searchFailure(emulator, {
        kind: "fault",
        fault: { type: "rate_limit", retryAfterSeconds: 3 }
      })
      assert.strictEqual(error._tag, "ProviderRateLimited")
      if (error._tag === "ProviderRateLimited") assert.deepStrictEqual(error.retryAfter, Duration.seconds(3))
      assert.strictEqual((yield* emulator.requests("perplexity.chat")).length, 1)
    })
  )

  it.scopedLive("maps an exhausted quota to ProviderQuotaExhausted", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      const error = yield* searchFailure(emulator, { kind: "fault", fault: { type: "quota" } })
      assert.strictEqual(error._tag, "ProviderQuotaExhausted")
    })
  )

  it.scopedLive("maps 5xx to ProviderUnavailable", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      const error = yield* searchFailure(emulator, { kind: "fault", fault: { type: "server_error", status: 502 } })
      assert.strictEqual(error._tag, "ProviderUnavailable")
    })
  )

  it.effect("fails with ProviderAuthenticationFailed before any request when the key is empty", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(
        Perplexity.make({ apiKey: Redacted.make(""), baseUrl: "http://127.0.0.1:9" }).search("q", { maxResults: 1 })
      )
      assert.strictEqual(error._tag, "ProviderAuthenticationFailed")
    })
  )

  it.scopedLive("layerConfig reads PERPLEXITY_API_KEY and PERPLEXITY_BASE_URL", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond(
        "perplexity.chat",
        Emulator.perplexityAnswer("Answer [1].", { searchResults: [{ url: "https://a.org/1", title: "One" }] })
      )
      const provider = yield* Effect.provide(
        SearchProvider.SearchProvider,
        Perplexity.layerConfig().pipe(
          Layer.provide(
            Layer.setConfigProvider(
              ConfigProvider.fromMap(
                new Map([
                  ["PERPLEXITY_API_KEY", "pplx-from-env"],
                  ["PERPLEXITY_BASE_URL", emulator.baseUrl("perplexity")]
                ])
              )
            )
          )
        )
      )
      const results = yield* provider.search("q", { maxResults: 1 })
      assert.strictEqual(results[0]?.url, "https://a.org/1")
      const [request] = yield* emulator.requests("perplexity.chat")
      assert.strictEqual(request?.headers["authorization"], "Bearer pplx-from-env")
    })
  )
})
