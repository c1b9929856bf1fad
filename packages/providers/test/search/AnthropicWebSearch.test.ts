import { assert, describe, it } from "@effect/vitest"
import { SearchProvider, UsageLedger } from "@deep-research/core"
import { ConfigProvider, Effect, Redacted } from "effect"
import * as AnthropicWebSearch from "../../src/search/AnthropicWebSearch.js"
import { Emulator } from "@deep-research/emulator"

const settings = { model: "claude-haiku-4-5", maxUses: 3, maxTokens: 1024 }

const result = (url: string, title: string, pageAge: string | null = null) => ({
  type: "web_search_result" as const,
  url,
  title,
  page_age: pageAge,
  encrypted_content: "Eo8B"
})

const cited = (text: string, url: string, citedText: string) => ({
  type: "text" as const,
  text,
  citations: [{ type: "web_search_result_location" as const, url, title: null, cited_text: citedText }]
})

describe("AnthropicWebSearch request", () => {
  it("offers the web_search_20250305 server tool with the use limit", () => {
    const body = AnthropicWebSearch.toSearchRequest("coral bleaching 2024", { maxResults: 5 }, settings)
    assert.deepStrictEqual(body.tools, [{ type: "web_search_20250305", name: "web_search", max_uses: 3 }])
    assert.strictEqual(body.model, "claude-haiku-4-5")
    assert.strictEqual(body.max_tokens, 1024)
    assert.include(JSON.stringify(body.messages), "coral bleaching 2024")
  })

  it("sends included domains as allowed_domains, and excluded ones as blocked_domains when none are included", () => {
    const allowed = AnthropicWebSearch.toSearchRequest(
      "q",
      { maxResults: 5, includeDomains: ["nature.com"], excludeDomains: ["example.com"] },
      settings
    )
    assert.deepInclude(allowed.tools?.[0], { allowed_domains: ["nature.com"] })
    assert.notProperty(allowed.tools?.[0], "blocked_domains")
    const blocked = AnthropicWebSearch.toSearchRequest(
      "q",
      { maxResults: 5, excludeDomains: ["example.com"] },
      settings
    )
    assert.deepInclude(blocked.tools?.[0], { blocked_domains: ["example.com"] })
  })

  it("states the time range and topic in the prompt, the only place the tool can take them", () => {
    const body = AnthropicWebSearch.toSearchRequest("q", { maxResults: 5, timeRange: "week", topic: "news" }, settings)
    const prompt = JSON.stringify(body.messages)
    assert.include(prompt, "the past week")
    assert.include(prompt, "news")
  })
})

describe("AnthropicWebSearch results", () => {
  it.effect("drops excluded domains that an allowed-domain search still returned", () =>
    Effect.gen(function* () {
      const results = yield* AnthropicWebSearch.toSearchResults(
        {
          content: [
            {
              type: "web_search_tool_result",
              content: [result("https://www.nature.com/a", "A"), result("https://blog.example.com/b", "B")]
            }
          ]
        },
        { maxResults: 5, includeDomains: ["nature.com"], excludeDomains: ["example.com"] },
        "anthropic"
      )
      assert.deepStrictEqual(
        results.map((r) => r.url),
        ["https://www.nature.com/a"]
      )
    })
  )

  it.effect("joins several cited passages of one URL and decodes their HTML entities", () =>
    Effect.gen(function* () {
      const results = yield* AnthropicWebSearch.toSearchResults(
        {
          content: [
            { type: "web_search_tool_result", content: [result("https://a.org/x", "X &amp; Y", "2 days ago")] },
            cited("One.", "https://a.org/x", "Tokyo&#x27;s population is 37 million. "),
            cited("Two.", "https://a.org/x", "It is the largest metro area.")
          ]
        },
        { maxResults: 5 },
        "anthropic"
      )
      assert.strictEqual(results[0]?.snippet, "Tokyo's population is 37 million. … It is the largest metro area.")
      assert.strictEqual(results[0]?.title, "X & Y")
      assert.strictEqual(results[0]?.publishedDate, "2 days ago")
    })
  )

  it.effect("fails with ProviderRateLimited when the search tool was throttled and nothing came back", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(
        AnthropicWebSearch.toSearchResults(
          {
            content: [
              {
                type: "web_search_tool_result",
                content: { type: "web_search_tool_result_error", error_code: "too_many_requests" }
              }
            ]
          },
          { maxResults: 5 },
          "anthropic"
        )
      )
      assert.strictEqual(error._tag, "ProviderRateLimited")
    })
  )

  it.effect("keeps the results of earlier searches when a later one hit max_uses", () =>
    Effect.gen(function* () {
      const results = yield* AnthropicWebSearch.toSearchResults(
        {
          content: [
            { type: "web_search_tool_result", content: [result("https://a.org/1", "One")] },
            {
              type: "web_search_tool_result",
              content: { type: "web_search_tool_result_error", error_code: "max_uses_exceeded" }
            }
          ]
        },
        { maxResults: 5 },
        "anthropic"
      )
      assert.strictEqual(results.length, 1)
    })
  )

  it.effect("an answer without any search is an empty result list, not a failure", () =>
    Effect.gen(function* () {
      const results = yield* AnthropicWebSearch.toSearchResults(
        { content: [{ type: "text", text: "I could not search." }] },
        { maxResults: 5 },
        "anthropic"
      )
      assert.strictEqual(results.length, 0)
    })
  )

  it("decodes numeric and named HTML entities and leaves unknown ones", () => {
    assert.strictEqual(AnthropicWebSearch.decodeEntities("a &lt;b&gt; &#39;c&#x27; &bogus;"), "a <b> 'c' &bogus;")
  })
})

describe("AnthropicWebSearch against the emulator", () => {
  it.scopedLive("sends the server tool through the SDK and reads the answer", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond(
        "anthropic.messages",
        Emulator.json({
          id: "msg_1",
          type: "message",
          role: "assistant",
          model: "claude-haiku-4-5",
          content: [
            { type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: { query: "q" } },
            {
              type: "web_search_tool_result",
              tool_use_id: "srvtoolu_1",
              content: [result("https://a.org/1", "One", "1 day ago")]
            },
            cited("Answer.", "https://a.org/1", "The cited passage.")
          ],
          stop_reason: "end_turn",
          usage: { input_tokens: 100, output_tokens: 20, server_tool_use: { web_search_requests: 1 } }
        })
      )
      const provider = yield* AnthropicWebSearch.make({
        apiKey: Redacted.make("sk-ant-emulator"),
        baseUrl: emulator.baseUrl("anthropic"),
        maxUses: 2
      })
      const results = yield* provider.search("q", { maxResults: 5 })
      assert.deepStrictEqual(
        results.map((r) => [r.url, r.title, r.snippet, r.publishedDate]),
        [["https://a.org/1", "One", "The cited passage.", "1 day ago"]]
      )
      const [request] = yield* emulator.requests("anthropic.messages")
      assert.include(JSON.stringify(request?.body), '"type":"web_search_20250305"')
      assert.include(JSON.stringify(request?.body), '"max_uses":2')
    })
  )

  it.scopedLive("records the call's tokens and search fee under the researcher role in the run's ledger", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond(
        "anthropic.messages",
        Emulator.json({
          model: "claude-haiku-4-5",
          content: [{ type: "web_search_tool_result", content: [result("https://a.org/1", "One")] }],
          stop_reason: "end_turn",
          usage: { input_tokens: 100, output_tokens: 20, server_tool_use: { web_search_requests: 2 } }
        })
      )
      const provider = yield* AnthropicWebSearch.make({
        apiKey: Redacted.make("sk-ant-emulator"),
        baseUrl: emulator.baseUrl("anthropic")
      })
      const ledger = yield* UsageLedger.make()
      yield* provider.search("q", { maxResults: 5 }).pipe(Effect.provideService(UsageLedger.UsageLedger, ledger))
      const [account] = yield* ledger.snapshot
      assert.strictEqual(account?.role, "researcher")
      assert.strictEqual(account?.calls, 1)
      assert.deepStrictEqual([account?.inputTokens, account?.outputTokens], [100, 20])
      // claude-haiku-4-5: 1 USD / M input, 5 USD / M output; plus two searches at 0.01 USD.
      assert.closeTo(account?.costUsd ?? 0, (100 * 1 + 20 * 5) / 1e6 + 0.02, 1e-9)
    })
  )

  it.scopedLive("vendor errors map as for the language model (529 overloaded)", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("anthropic.messages", Emulator.fault({ type: "server_error", status: 529 }))
      const provider = yield* AnthropicWebSearch.make({
        apiKey: Redacted.make("sk-ant-emulator"),
        baseUrl: emulator.baseUrl("anthropic")
      })
      const error = yield* Effect.flip(provider.search("q", { maxResults: 5 }))
      assert.strictEqual(error._tag, "ProviderUnavailable")
      if (error._tag === "ProviderUnavailable") assert.strictEqual(error.status, 529)
    })
  )

  it.scopedLive("layerConfig reads ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond(
        "anthropic.messages",
        Emulator.json({
          model: "claude-haiku-4-5",
          content: [{ type: "web_search_tool_result", content: [result("https://a.org/1", "One")] }],
          stop_reason: "end_turn",
          usage: { input_tokens: 1, output_tokens: 1 }
        })
      )
      const results = yield* Effect.flatMap(SearchProvider.SearchProvider, (provider) =>
        provider.search("q", { maxResults: 3 })
      ).pipe(
        Effect.provide(AnthropicWebSearch.layerConfig()),
        Effect.withConfigProvider(
          ConfigProvider.fromMap(
            new Map([
              ["ANTHROPIC_API_KEY", "sk-ant-config"],
              ["ANTHROPIC_BASE_URL", emulator.baseUrl("anthropic")]
            ])
          )
        )
      )
      assert.deepStrictEqual(
        results.map((r) => r.url),
        ["https://a.org/1"]
      )
    })
  )
})
