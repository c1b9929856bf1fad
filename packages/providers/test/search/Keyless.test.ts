/**
 * The keyless set: its settings from the environment, its default set, and each provider's published limit as the
 * resilience policy applies it (the same recorder as RateLimitDefaults.test.ts, on the TestClock).
 */
import { Resilience, SearchProvider, Source } from "@deep-research/core"
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect, Fiber, Redacted, Ref, TestClock } from "effect"
import * as Identity from "../../src/search/keyless/identity.js"
import * as Keyless from "../../src/search/Keyless.js"
import * as KeylessProviders from "../../src/search/KeylessProviders.js"
import { Emulator } from "@deep-research/emulator"

/** The clock time (from the first) of each of `calls` calls, one after the other, under the CLI's policies for `settings`. */
const callTimes = (name: string, calls: number, settings: Keyless.Settings = Keyless.emptySettings) =>
  Effect.gen(function* () {
    const resilience = yield* Resilience.make(
      Resilience.withProviderDefaults(Resilience.defaultSettings, KeylessProviders.policies(settings))
    )
    const start = yield* Clock.currentTimeMillis
    const times = yield* Ref.make<ReadonlyArray<number>>([])
    const recorder: SearchProvider.Service = {
      name,
      search: (query) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          Effect.as(
            Ref.update(times, (all) => [...all, now - start]),
            [
              new Source.SearchResult({
                url: `https://example.org/${query}`,
                title: query,
                snippet: "",
                provider: name
              })
            ]
          )
        )
    }
    const wrapped = resilience.wrapSearchProvider(recorder)
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

describe("Keyless", () => {
  it("reads its settings from the environment; blank values are unset", () => {
    const settings = Keyless.settingsFrom({
      SEARXNG_URL: " http://127.0.0.1:8888 ",
      WIKIPEDIA_LANGUAGE: "fr",
      NCBI_API_KEY: "k",
      OPENALEX_EMAIL: ""
    })
    assert.strictEqual(settings.searxng.url, "http://127.0.0.1:8888")
    assert.strictEqual(settings.wikipedia.language, "fr")
    assert.strictEqual(settings.pubmed.apiKey !== undefined && Redacted.value(settings.pubmed.apiKey), "k")
    assert.isUndefined(settings.openalex.email)
    assert.isUndefined(Keyless.emptySettings.searxng.url)
  })

  it("the default set is SearXNG when an instance is named, then Wikipedia, and OpenAlex only with its key", () => {
    assert.deepStrictEqual(Keyless.defaultSet(Keyless.emptySettings), ["wikipedia"])
    assert.deepStrictEqual(Keyless.defaultSet(Keyless.settingsFrom({ SEARXNG_URL: "http://s" })), [
      "searxng",
      "wikipedia"
    ])
    assert.deepStrictEqual(
      Keyless.defaultSet(Keyless.settingsFrom({ SEARXNG_URL: "http://s", OPENALEX_API_KEY: "oa-key" })),
      ["searxng", "wikipedia", "openalex"]
    )
  })

  it.scoped("SearXNG without an instance is refused as a usage error", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(KeylessProviders.make("searxng", Keyless.emptySettings))
      assert.strictEqual(error._tag, "ResearchInvalidInput")
      assert.include(error.message, "SEARXNG_URL")
    })
  )

  it.effect("arXiv's policy: one search every three seconds", () =>
    Effect.gen(function* () {
      assert.deepStrictEqual(yield* callTimes("arxiv", 3), [0, 3_000, 6_000])
    })
  )

  it.effect("PubMed's policy: a search (two requests) a second without a key, four with one", () =>
    Effect.gen(function* () {
      assert.deepStrictEqual(yield* callTimes("pubmed", 3), [0, 1_000, 2_000])
      const keyed = Keyless.settingsFrom({ NCBI_API_KEY: "k" })
      assert.deepStrictEqual(yield* callTimes("pubmed", 3, keyed), [0, 250, 500])
    })
  )

  it.effect("Wikipedia's policy: a search a second after two; OpenAlex's: five a second after five", () =>
    Effect.gen(function* () {
      assert.deepStrictEqual(yield* callTimes("wikipedia", 4), [0, 0, 1_000, 2_000])
      assert.deepStrictEqual(yield* callTimes("openalex", 7), [0, 0, 0, 0, 0, 200, 400])
    })
  )

  it.effect("SearXNG, whose instance publishes no limit, gets the search default", () =>
    Effect.gen(function* () {
      assert.deepStrictEqual(yield* callTimes("searxng", 5), [0, 0, 0, 1_000, 2_000])
    })
  )

  it.scopedLive("KeylessProviders.layer merges the backends it is given into one search provider", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* Emulator.simulate(emulator)
      const settings = Keyless.settingsFrom({
        WIKIPEDIA_BASE_URL: emulator.baseUrl("wikipedia"),
        OPENALEX_BASE_URL: emulator.baseUrl("openalex")
      })
      const results = yield* Effect.flatMap(SearchProvider.SearchProvider, (search) =>
        search.search("tidal energy", { maxResults: 6 })
      ).pipe(Effect.provide(KeylessProviders.layer(["wikipedia", "openalex"], settings)))
      const providers = new Set(results.flatMap((result) => result.provider.split(",")))
      assert.sameMembers([...providers], ["wikipedia", "openalex"])
    })
  )

  it("with no contact set, the User-Agent names the project's page as its contact and says how to set one's own", () => {
    assert.strictEqual(
      Identity.userAgent(undefined),
      `deep-research/0.1 (${Identity.projectPage}; set DEEP_RESEARCH_CONTACT to your own)`
    )
    assert.match(Identity.projectPage, /^https:\/\//)
    assert.strictEqual(Identity.userAgent(" ops@example.org "), "deep-research/0.1 (ops@example.org)")
  })
})
