import { Errors, ResearchEvents, Resilience, SearchProvider, Source } from "@deep-research/core"
import { assert, describe, it } from "@effect/vitest"
import { Clock, Deferred, Duration, Fiber, Effect, Layer, Queue, Ref, TestClock } from "effect"
import * as SearchFanout from "../../src/search/SearchFanout.js"

const result = (provider: string, url: string, score?: number, extra: Partial<Source.SearchResult> = {}) =>
  new Source.SearchResult({
    url,
    title: `${provider} ${url}`,
    snippet: `snippet from ${provider}`,
    provider,
    ...(score !== undefined ? { score } : {}),
    ...extra
  })

/** A provider that answers from a script and counts its calls. */
const scripted = (
  name: string,
  answer: (call: number) => Effect.Effect<ReadonlyArray<Source.SearchResult>, Errors.ProviderError>
) =>
  Effect.gen(function* () {
    const calls = yield* Ref.make(0)
    const provider: SearchProvider.Service = {
      name,
      search: () =>
        Effect.flatMap(
          Ref.updateAndGet(calls, (n) => n + 1),
          answer
        )
    }
    return { provider, calls: Ref.get(calls) }
  })

const fine = (name: string, urls: ReadonlyArray<string>) =>
  scripted(name, () => Effect.succeed(urls.map((url, i) => result(name, url, 1 - i / 10))))

const failing = (name: string, error: Errors.ProviderError) => scripted(name, () => Effect.fail(error))

const options = { maxResults: 10 }

describe("SearchFanout.normalizeUrl", () => {
  it("treats scheme, www, default port, trailing slash, fragment and tracking parameters as the same page", () => {
    const forms = [
      "https://www.example.org/a/b/?utm_source=x&q=1",
      "http://example.org/a/b?q=1#section",
      "https://EXAMPLE.org:443/a/b?fbclid=zz&q=1"
    ]
    for (const form of forms) assert.strictEqual(SearchFanout.normalizeUrl(form), "example.org/a/b?q=1", form)
    assert.notStrictEqual(SearchFanout.normalizeUrl("https://example.org/a?q=2"), "example.org/a?q=1")
  })

  it("keeps the fragment of file URLs, which names a chunk of a document", () => {
    assert.notStrictEqual(
      SearchFanout.normalizeUrl("file:///docs/zebras.md#chunk-1"),
      SearchFanout.normalizeUrl("file:///docs/zebras.md#chunk-2")
    )
  })
})

describe("SearchFanout.merge", () => {
  it("keeps one result per page, the best-scored copy, naming every provider that found it", () => {
    const merged = SearchFanout.merge(
      [
        [
          result("tavily", "https://www.a.org/x/", 0.4, { rawContent: "raw from tavily" }),
          result("tavily", "https://b.org", 0.3)
        ],
        [result("exa", "http://a.org/x", 0.9, { publishedDate: "2025-01-01" }), result("exa", "https://c.org", 0.8)]
      ],
      10
    )
    assert.deepStrictEqual(
      merged.map((r) => [r.url, r.provider, r.score, r.rawContent, r.publishedDate]),
      [
        ["http://a.org/x", "exa,tavily", 0.9, "raw from tavily", "2025-01-01"],
        ["https://b.org", "tavily", 0.3, undefined, undefined],
        ["https://c.org", "exa", 0.8, undefined, undefined]
      ]
    )
  })

  it("keeps a scholarly result's work when the best-scored copy of its page has none", () => {
    const work = new Source.Work({ authors: ["Ada Moreau"], year: 2024, venue: "arXiv (cs.CL)", preprint: true })
    const [merged] = SearchFanout.merge(
      [
        [result("searxng", "https://arxiv.org/abs/2401.01234", 0.9)],
        [result("arxiv", "https://arxiv.org/abs/2401.01234", 0.5, { work })]
      ],
      10
    )
    assert.strictEqual(merged?.provider, "searxng,arxiv")
    assert.deepStrictEqual(merged?.work, work)
  })

  it("ranks pages several providers agree on first and returns at most maxResults", () => {
    const merged = SearchFanout.merge(
      [
        ["https://one.org", "https://two.org", "https://shared.org"].map((u) => result("a", u)),
        ["https://three.org", "https://shared.org"].map((u) => result("b", u))
      ],
      3
    )
    assert.deepStrictEqual(
      merged.map((r) => r.url),
      ["https://shared.org", "https://one.org", "https://three.org"]
    )
  })
})

describe("SearchFanout", () => {
  it.live("queries every provider at the same time", () =>
    Effect.gen(function* () {
      const started = yield* Deferred.make<void>()
      // "slow" finishes only once "fast" has started: a sequential fan-out would never get there
      const slow = yield* scripted("slow", () =>
        Effect.as(Deferred.await(started), [result("slow", "https://slow.org")])
      )
      const fast = yield* scripted("fast", () =>
        Effect.as(Deferred.succeed(started, undefined), [result("fast", "https://fast.org")])
      )
      const fanout = yield* SearchFanout.make({ providers: [slow.provider, fast.provider] })
      const results = yield* fanout
        .search("q", options)
        .pipe(Effect.timeoutFail({ duration: "5 seconds", onTimeout: () => "the providers ran one after the other" }))
      assert.deepStrictEqual(results.map((r) => r.url).sort(), ["https://fast.org", "https://slow.org"])
    })
  )

  it.effect("carries on with the others when one provider fails, and reports the skip", () =>
    Effect.gen(function* () {
      const events = yield* ResearchEvents.ResearchEvents
      const subscription = yield* events.subscribe
      const good = yield* fine("tavily", ["https://a.org"])
      const bad = yield* failing("exa", new Errors.ProviderUnavailable({ provider: "exa", status: 503 }))
      const fanout = yield* SearchFanout.make({ providers: [good.provider, bad.provider] })
      const results = yield* fanout.search("q", options)
      assert.deepStrictEqual(
        results.map((r) => r.url),
        ["https://a.org"]
      )
      const event = yield* Queue.take(subscription)
      assert.strictEqual(event._tag, "ProviderSkipped")
      if (event._tag === "ProviderSkipped") {
        assert.strictEqual(event.provider, "exa")
        assert.include(event.reason, "exa is unavailable (status 503)")
        assert.include(event.reason, "skipped for 1m")
      }
    }).pipe(Effect.scoped, Effect.provide(ResearchEvents.layer))
  )

  it.effect("skips a failed provider during its cooldown and tries it again afterwards", () =>
    Effect.gen(function* () {
      const good = yield* fine("tavily", ["https://a.org"])
      const flaky = yield* scripted("exa", (call) =>
        call === 1
          ? Effect.fail(new Errors.ProviderTimeout({ provider: "exa", after: Duration.seconds(30) }))
          : Effect.succeed([result("exa", "https://b.org")])
      )
      const fanout = yield* SearchFanout.make({ providers: [good.provider, flaky.provider], cooldown: "60 seconds" })
      yield* fanout.search("q", options)
      yield* TestClock.adjust("59 seconds")
      const during = yield* fanout.search("q", options)
      assert.strictEqual(yield* flaky.calls, 1)
      assert.deepStrictEqual(
        during.map((r) => r.url),
        ["https://a.org"]
      )
      yield* TestClock.adjust("2 seconds")
      const after = yield* fanout.search("q", options)
      assert.strictEqual(yield* flaky.calls, 2)
      assert.deepStrictEqual(after.map((r) => r.url).sort(), ["https://a.org", "https://b.org"])
      const health = yield* fanout.health
      assert.deepStrictEqual(
        health.map((h) => [h.name, h.consecutiveFailures, h.pausedUntil]),
        [
          ["tavily", 0, 0],
          ["exa", 0, 0]
        ]
      )
    })
  )

  it.effect("skips a provider whose breaker is open until the breaker's retry time", () =>
    Effect.gen(function* () {
      const good = yield* fine("tavily", ["https://a.org"])
      const open = yield* scripted("exa", (call) =>
        call === 1
          ? Effect.flatMap(Clock.currentTimeMillis, (now) =>
              Effect.fail(new Errors.ProviderCircuitOpen({ provider: "exa", retryAt: now + 30_000 }))
            )
          : Effect.succeed([result("exa", "https://b.org")])
      )
      const fanout = yield* SearchFanout.make({ providers: [good.provider, open.provider], cooldown: "5 minutes" })
      yield* fanout.search("q", options)
      yield* TestClock.adjust("29 seconds")
      yield* fanout.search("q", options)
      assert.strictEqual(yield* open.calls, 1)
      yield* TestClock.adjust("2 seconds")
      yield* fanout.search("q", options)
      assert.strictEqual(yield* open.calls, 2)
    })
  )

  it.effect("goes on without a provider that does not answer in time, and pauses it", () =>
    Effect.gen(function* () {
      const good = yield* fine("tavily", ["https://a.org"])
      const stuck = yield* scripted("exa", () => Effect.never)
      const fanout = yield* SearchFanout.make({
        providers: [good.provider, stuck.provider],
        providerTimeout: "20 seconds"
      })
      const fiber = yield* Effect.fork(fanout.search("q", options))
      yield* TestClock.adjust("21 seconds")
      const results = yield* Fiber.join(fiber)
      assert.deepStrictEqual(
        results.map((r) => r.url),
        ["https://a.org"]
      )
      const [, exa] = yield* fanout.health
      assert.include(exa?.lastError ?? "", "exa did not answer within 20s")
      assert.isAbove(exa?.pausedUntil ?? 0, 21_000)
    })
  )

  it.effect("pauses a rate-limited provider for as long as it asked", () =>
    Effect.gen(function* () {
      const good = yield* fine("tavily", ["https://a.org"])
      const limited = yield* failing(
        "exa",
        new Errors.ProviderRateLimited({ provider: "exa", retryAfter: Duration.seconds(5) })
      )
      const fanout = yield* SearchFanout.make({ providers: [good.provider, limited.provider] })
      yield* fanout.search("q", options)
      yield* TestClock.adjust("4 seconds")
      yield* fanout.search("q", options)
      assert.strictEqual(yield* limited.calls, 1)
      yield* TestClock.adjust("2 seconds")
      yield* fanout.search("q", options)
      assert.strictEqual(yield* limited.calls, 2)
    })
  )

  it.effect("does not pause a provider for a request it rejected as invalid", () =>
    Effect.gen(function* () {
      const good = yield* fine("tavily", ["https://a.org"])
      const picky = yield* failing(
        "exa",
        new Errors.ProviderInvalidRequest({ provider: "exa", detail: "query too long" })
      )
      const fanout = yield* SearchFanout.make({ providers: [good.provider, picky.provider] })
      yield* fanout.search("q", options)
      yield* fanout.search("q", options)
      assert.strictEqual(yield* picky.calls, 2)
    })
  )

  it.effect("pauses only after the configured number of consecutive failures", () =>
    Effect.gen(function* () {
      const good = yield* fine("tavily", ["https://a.org"])
      const bad = yield* failing("exa", new Errors.ProviderUnavailable({ provider: "exa" }))
      const fanout = yield* SearchFanout.make({ providers: [good.provider, bad.provider], failuresBeforeCooldown: 2 })
      yield* fanout.search("q", options)
      yield* fanout.search("q", options)
      yield* fanout.search("q", options)
      assert.strictEqual(yield* bad.calls, 2)
    })
  )

  it.effect("fails with every provider's reason when all of them fail", () =>
    Effect.gen(function* () {
      const a = yield* failing("tavily", new Errors.ProviderQuotaExhausted({ provider: "tavily" }))
      const b = yield* failing("exa", new Errors.ProviderAuthenticationFailed({ provider: "exa" }))
      const fanout = yield* SearchFanout.make({ providers: [a.provider, b.provider] })
      const error = yield* Effect.flip(fanout.search("q", options))
      assert.strictEqual(error._tag, "ProviderUnavailable")
      assert.include(error.message, "every search provider failed")
      assert.include(error.message, "tavily: tavily quota or credit is exhausted")
      assert.include(error.message, "exa: exa refused the credentials")
    })
  )

  it.effect("passes a lone provider's error through unchanged", () =>
    Effect.gen(function* () {
      const only = yield* failing("exa", new Errors.ProviderRateLimited({ provider: "exa" }))
      const fanout = yield* SearchFanout.make({ providers: [only.provider] })
      const error = yield* Effect.flip(fanout.search("q", options))
      assert.strictEqual(error._tag, "ProviderRateLimited")
    })
  )

  it.effect("fails at once with ProviderCircuitOpen while every provider is paused, naming when one comes back", () =>
    Effect.gen(function* () {
      const a = yield* failing("tavily", new Errors.ProviderUnavailable({ provider: "tavily" }))
      const b = yield* failing("exa", new Errors.ProviderTimeout({ provider: "exa", after: Duration.seconds(1) }))
      const fanout = yield* SearchFanout.make({ providers: [a.provider, b.provider], cooldown: "60 seconds" })
      yield* Effect.flip(fanout.search("q", options))
      yield* TestClock.adjust("10 seconds")
      const error = yield* Effect.flip(fanout.search("q", options))
      assert.strictEqual(error._tag, "ProviderCircuitOpen")
      if (error._tag === "ProviderCircuitOpen") assert.strictEqual(error.retryAt, 60_000)
      assert.strictEqual(yield* a.calls, 1)
      assert.strictEqual(yield* b.calls, 1)
    })
  )

  it.effect("an empty answer is a success, not a failure", () =>
    Effect.gen(function* () {
      const empty = yield* fine("tavily", [])
      const fanout = yield* SearchFanout.make({ providers: [empty.provider] })
      assert.deepStrictEqual(yield* fanout.search("q", options), [])
      assert.deepStrictEqual(
        (yield* fanout.health).map((h) => h.pausedUntil),
        [0]
      )
    })
  )

  it.effect("layerOf combines providers given as layers", () =>
    Effect.gen(function* () {
      const a = yield* fine("tavily", ["https://a.org"])
      const b = yield* fine("exa", ["https://b.org"])
      const provider = yield* Effect.provide(
        SearchProvider.SearchProvider,
        SearchFanout.layerOf([
          Layer.succeed(SearchProvider.SearchProvider, a.provider),
          Layer.succeed(SearchProvider.SearchProvider, b.provider)
        ])
      )
      assert.strictEqual(provider.name, "tavily+exa")
      const results = yield* provider.search("q", options)
      assert.deepStrictEqual(results.map((r) => r.url).sort(), ["https://a.org", "https://b.org"])
    })
  )
})

describe("SearchFanout under a resilience policy", () => {
  it.effect("protects each provider under its own name, and is not protected again as one provider", () =>
    Effect.gen(function* () {
      const resilience = yield* Resilience.Resilience
      const down = yield* failing("down", new Errors.ProviderAuthenticationFailed({ provider: "down" }))
      const up = yield* fine("up", ["https://a.example/1"])
      const fanout = yield* SearchFanout.make({ providers: [down.provider, up.provider] })
      assert.isTrue(Resilience.isProtected(fanout))
      // What the pipeline does with the search provider it is given: the fan-out is left as it is.
      assert.strictEqual(resilience.wrapSearchProvider(fanout), fanout)
      yield* fanout.search("q", options)
      assert.strictEqual(yield* resilience.circuitState("down", "search"), "closed")
      assert.strictEqual(yield* down.calls, 1)
    }).pipe(Effect.provide(Resilience.layerDefault))
  )

  it.effect("made without a policy, it is protected where the pipeline uses it, as one provider", () =>
    Effect.gen(function* () {
      const up = yield* fine("up", ["https://a.example/1"])
      const fanout = yield* SearchFanout.make({ providers: [up.provider] })
      assert.isFalse(Resilience.isProtected(fanout))
      const wrapped = yield* Resilience.wrapSearchProvider(fanout).pipe(Effect.provide(Resilience.layerDefault))
      assert.notStrictEqual(wrapped, fanout)
      assert.isTrue(Resilience.isProtected(wrapped))
    })
  )
})
