import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Schema } from "effect"
import * as Errors from "../src/Errors.js"

describe("Errors", () => {
  it.effect("every error of the union survives a JSON round trip with its tag and fields", () =>
    Effect.gen(function* () {
      const samples: ReadonlyArray<Errors.ResearchError> = [
        new Errors.ContextWindowExceeded({ model: "gpt-4.1", limit: 1000, requested: 1200 }),
        new Errors.ProviderRateLimited({ provider: "openai", retryAfter: Duration.seconds(7) }),
        new Errors.ProviderQuotaExhausted({ provider: "openai" }),
        new Errors.ProviderUnavailable({ provider: "anthropic", status: 529 }),
        new Errors.ProviderTimeout({ provider: "tavily", after: Duration.seconds(30) }),
        new Errors.ProviderAuthenticationFailed({ provider: "openai" }),
        new Errors.ProviderInvalidRequest({ provider: "openai", detail: "bad role" }),
        new Errors.ProviderCircuitOpen({ provider: "openai", retryAt: 1_000 }),
        new Errors.ModelMalformedOutput({ reason: "not JSON", raw: "hello" }),
        new Errors.ResearchBudgetExhausted({ budget: "usd", limit: 1, spent: 1.2 }),
        new Errors.UrlBlocked({ url: "http://127.0.0.1", reason: "loopback" }),
        new Errors.ResearchSessionNotFound({ sessionId: "abc" }),
        new Errors.ResearchSessionCorrupt({ sessionId: "abc", path: "/x/session.json", reason: "truncated" }),
        new Errors.ResearchSessionBusy({ sessionId: "abc", holder: "pid 4" }),
        new Errors.ResearchInvalidInput({ reason: "empty question" })
      ]
      for (const error of samples) {
        const json = JSON.stringify(yield* Schema.encode(Errors.ResearchError)(error))
        const decoded = yield* Schema.decodeUnknown(Errors.ResearchError)(JSON.parse(json))
        assert.strictEqual(decoded._tag, error._tag)
        assert.strictEqual(decoded.message, error.message)
        assert.isTrue(decoded instanceof Error)
        assert.isTrue(Errors.isResearchError(decoded))
      }
    })
  )

  it("messages are readable sentences, not field dumps", () => {
    assert.strictEqual(
      new Errors.ContextWindowExceeded({ model: "claude-3-5-haiku", limit: 200000, requested: 200016 }).message,
      "The input does not fit the context window of claude-3-5-haiku: 200016 tokens requested, 200000 allowed"
    )
    assert.strictEqual(
      new Errors.ProviderRateLimited({ provider: "openai", retryAfter: Duration.seconds(20) }).message,
      "openai rate limit reached; retry after 20s"
    )
    assert.strictEqual(
      new Errors.ProviderInvalidRequest({ provider: "openai", detail: "bad role" }).message,
      "openai rejected the request: bad role"
    )
  })

  it("a ProviderInvalidRequest is stored with the provider's words under message, as sessions always had it", () => {
    const stored = { _tag: "ProviderInvalidRequest" as const, provider: "tavily", message: "422 bad field" }
    const decoded = Schema.decodeUnknownSync(Errors.ResearchError)(stored)
    assert.strictEqual(decoded._tag, "ProviderInvalidRequest")
    assert.strictEqual(decoded.message, "tavily rejected the request: 422 bad field")
    assert.deepStrictEqual(Schema.encodeSync(Errors.ResearchError)(decoded), stored)
  })

  it("classifies what is retried and what trips the breaker as the design says", () => {
    const retried = ["ProviderRateLimited", "ProviderUnavailable", "ProviderTimeout"]
    const trips = ["ProviderUnavailable", "ProviderTimeout", "ProviderAuthenticationFailed"]
    for (const tag of [
      "ContextWindowExceeded",
      "ProviderRateLimited",
      "ProviderQuotaExhausted",
      "ProviderUnavailable",
      "ProviderTimeout",
      "ProviderAuthenticationFailed",
      "ProviderInvalidRequest",
      "ProviderCircuitOpen"
    ]) {
      assert.strictEqual(Errors.isRetryable({ _tag: tag }), retried.includes(tag), tag)
      assert.strictEqual(Errors.tripsBreaker({ _tag: tag }), trips.includes(tag), tag)
    }
  })
})
