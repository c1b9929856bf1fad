/**
 * The rate limit each search API ships with, as the resilience policy applies it when the provider is wired the way
 * the CLI wires it: the providers' `policy` under `Resilience.withProviderDefaults`, each provider wrapped by
 * `wrapSearchProvider`. The policy is keyed by the provider's name, so each test keeps the real provider's name and
 * only replaces its search by one that records when it was called (on the TestClock).
 */
import { Resilience, SearchProvider, Source } from "@deep-research/core"
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect, Fiber, Redacted, Ref, TestClock } from "effect"
import * as Exa from "../../src/search/Exa.js"
import * as Perplexity from "../../src/search/Perplexity.js"
import * as SemanticScholar from "../../src/search/SemanticScholar.js"
import * as Tavily from "../../src/search/Tavily.js"

const resilience = Resilience.make(
  Resilience.withProviderDefaults(Resilience.defaultSettings, {
    tavily: Tavily.policy,
    exa: Exa.policy,
    perplexity: Perplexity.policy,
    "semantic-scholar": SemanticScholar.policy
  })
)

// Never called: the provider's search is replaced; the address only has to be one no request could leave for.
const nowhere = "http://127.0.0.1:9"

/**
 * Calls the provider (wrapped by the policy, its search replaced by a recorder) `calls` times one after the other,
 * moving the clock a minute on, and returns the clock time of each call that reached the provider.
 */
const callTimes = (real: SearchProvider.Service, calls: number) =>
  Effect.gen(function* () {
    const times = yield* Ref.make<ReadonlyArray<number>>([])
    const recorder: SearchProvider.Service = {
      name: real.name,
      search: (query) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          Effect.as(
            Ref.update(times, (all) => [...all, now]),
            [
              new Source.SearchResult({
                url: `https://example.org/${query}`,
                title: query,
                snippet: "",
                provider: real.name
              })
            ]
          )
        )
    }
    const wrapped = (yield* resilience).wrapSearchProvider(recorder)
    const fiber = yield* Effect.fork(
      Effect.forEach(
        Array.from({ length: calls }, (_, i) => `q${i}`),
        (query) => wrapped.search(query, { maxResults: 1 })
      )
    )
    yield* TestClock.adjust("1 minute")
    yield* Fiber.join(fiber)
    return yield* Ref.get(times)
  })

describe("Rate limit defaults applied by Resilience", () => {
  it.effect("Semantic Scholar: one request a second, no burst (the second call waits 1 s)", () =>
    Effect.gen(function* () {
      const provider = SemanticScholar.make({ baseUrl: nowhere })
      assert.strictEqual(provider.name, "semantic-scholar")
      assert.deepStrictEqual(yield* callTimes(provider, 4), [0, 1_000, 2_000, 3_000])
    })
  )

  it.effect("Perplexity: 50 requests a minute after a burst of 3 (the fourth call waits 1.2 s)", () =>
    Effect.gen(function* () {
      const provider = Perplexity.make({ apiKey: Redacted.make("pplx-test"), baseUrl: nowhere })
      assert.strictEqual(provider.name, "perplexity")
      assert.deepStrictEqual(yield* callTimes(provider, 5), [0, 0, 0, 1_200, 2_400])
    })
  )

  it.effect("Exa: 5 requests a second after a burst of 5 (the sixth call waits 200 ms)", () =>
    Effect.gen(function* () {
      const provider = Exa.make({ apiKey: Redacted.make("exa-test"), baseUrl: nowhere }).search
      assert.strictEqual(provider.name, "exa")
      assert.deepStrictEqual(yield* callTimes(provider, 7), [0, 0, 0, 0, 0, 200, 400])
    })
  )

  it.effect("Tavily: a development key's 100 a minute after a burst of 10, growing a quarter after 10 successes", () =>
    Effect.gen(function* () {
      const provider = (yield* Tavily.make({ apiKey: Redacted.make("tvly-test"), baseUrl: nowhere })).search
      assert.strictEqual(provider.name, "tavily")
      // 10 at once; then 100/60 a second grown by a quarter (the 10 successes): 480 ms apart.
      assert.deepStrictEqual(yield* callTimes(provider, 12), [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 480, 960])
    })
  )

  it.effect("a search API without its own default gets the search default: 1 a second after a burst of 3", () =>
    Effect.gen(function* () {
      const other: SearchProvider.Service = { name: "other-search", search: () => Effect.succeed([]) }
      assert.deepStrictEqual(yield* callTimes(other, 5), [0, 0, 0, 1_000, 2_000])
    })
  )
})
