import { assert, describe, it } from "@effect/vitest"
import {
  Chunk,
  Clock,
  ConfigProvider,
  Duration,
  Effect,
  Either,
  Exit,
  Fiber,
  Layer,
  Queue,
  Random,
  Ref,
  Schema,
  TestClock
} from "effect"
import * as Errors from "../src/Errors.js"
import * as LanguageModel from "../src/LanguageModel.js"
import * as ModelRouter from "../src/ModelRouter.js"
import * as ResearchEvents from "../src/ResearchEvents.js"
import * as Resilience from "../src/Resilience.js"
import type * as SearchProvider from "../src/SearchProvider.js"
import { ScriptedModel } from "../src/testing/index.js"

const settings = (encoded: unknown): Resilience.Settings => Schema.decodeUnknownSync(Resilience.Settings)(encoded)

const noJitter = settings({ model: { jitter: false }, search: { jitter: false } })

const down = (provider = "acme") => new Errors.ProviderUnavailable({ provider, status: 503 })

type Outcome = Errors.ProviderError | string

/**
 * A fake provider: answers with `outcomes` in order (the last repeats), records the time of every call, and can
 * take a while to answer.
 */
const makeProvider = (outcomes: ReadonlyArray<Outcome>, latency: Duration.DurationInput = 0) =>
  Effect.gen(function* () {
    const times = yield* Ref.make<ReadonlyArray<number>>([])
    const call = Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      const index = yield* Ref.modify(times, (all) => [all.length, [...all, now]] as const)
      if (Duration.greaterThan(Duration.decode(latency), Duration.zero)) yield* Effect.sleep(latency)
      const outcome = outcomes[Math.min(index, outcomes.length - 1)] ?? "ok"
      return typeof outcome === "string" ? outcome : yield* Effect.fail(outcome)
    })
    return { call, times: Ref.get(times) }
  })

/** Runs `effect` in a fiber while the test clock moves on by `advance`, then returns its exit. */
const runFor = <A, E>(effect: Effect.Effect<A, E>, advance: Duration.DurationInput = "30 minutes") =>
  Effect.gen(function* () {
    const fiber = yield* Effect.fork(effect)
    yield* TestClock.adjust(advance)
    return yield* Fiber.await(fiber)
  })

const gaps = (times: ReadonlyArray<number>): ReadonlyArray<number> => times.slice(1).map((t, i) => t - (times[i] ?? 0))

const failureOf = <A, E>(exit: Exit.Exit<A, E>): E | undefined =>
  Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined

describe("Resilience retries", () => {
  it.effect("retries a failing provider 3 times, waiting 1, 2 and 4 seconds, then fails with its error", () =>
    Effect.gen(function* () {
      const resilience = yield* Resilience.make(noJitter)
      const provider = yield* makeProvider([down()])
      const exit = yield* runFor(resilience.protect("acme", provider.call))
      assert.strictEqual(failureOf(exit)?._tag, "ProviderUnavailable")
      const times = yield* provider.times
      assert.strictEqual(times.length, 4)
      assert.deepStrictEqual(gaps(times), [1_000, 2_000, 4_000])
    })
  )

  it.effect("returns the first success without further attempts", () =>
    Effect.gen(function* () {
      const resilience = yield* Resilience.make(noJitter)
      const provider = yield* makeProvider([
        down(),
        new Errors.ProviderTimeout({ provider: "acme", after: Duration.seconds(1) }),
        "ok"
      ])
      const exit = yield* runFor(resilience.protect("acme", provider.call))
      assert.deepStrictEqual(exit, Exit.succeed("ok"))
      assert.strictEqual((yield* provider.times).length, 3)
    })
  )

  it.effect("jitters each delay within 0.8 to 1.2 of the exponential one", () =>
    Effect.gen(function* () {
      const resilience = yield* Resilience.make()
      const low = yield* makeProvider([down()])
      yield* runFor(resilience.protect("low", low.call).pipe(Effect.withRandom(Random.fixed([0]))))
      assert.deepStrictEqual(gaps(yield* low.times), [800, 1_600, 3_200])
      const high = yield* makeProvider([down()])
      yield* runFor(resilience.protect("high", high.call).pipe(Effect.withRandom(Random.fixed([1]))))
      assert.deepStrictEqual(gaps(yield* high.times), [1_200, 2_400, 4_800])
      for (const seed of [1, 2, 3, 4, 5]) {
        const seeded = yield* makeProvider([down()])
        yield* runFor(resilience.protect(`seeded-${seed}`, seeded.call).pipe(Effect.withRandom(Random.make(seed))))
        gaps(yield* seeded.times).forEach((gap, i) => {
          const nominal = 1_000 * 2 ** i
          assert.isAtLeast(gap, 0.8 * nominal)
          assert.isAtMost(gap, 1.2 * nominal)
        })
      }
    })
  )

  it.effect("caps every delay at 60 seconds", () =>
    Effect.gen(function* () {
      const resilience = yield* Resilience.make(
        settings({ model: { jitter: false, maxRetries: 8, failureThreshold: 20 } })
      )
      const provider = yield* makeProvider([down()])
      yield* runFor(resilience.protect("acme", provider.call))
      assert.deepStrictEqual(gaps(yield* provider.times), [1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000])
    })
  )

  it.effect("waits the retryAfter a rate limit asks for instead of the computed delay", () =>
    Effect.gen(function* () {
      const resilience = yield* Resilience.make()
      const limited = new Errors.ProviderRateLimited({ provider: "acme", retryAfter: Duration.seconds(7) })
      const provider = yield* makeProvider([limited, limited, "ok"])
      const exit = yield* runFor(resilience.protect("acme", provider.call))
      assert.deepStrictEqual(exit, Exit.succeed("ok"))
      assert.deepStrictEqual(gaps(yield* provider.times), [7_000, 7_000])
    })
  )

  it.effect("caps a retryAfter at 60 seconds", () =>
    Effect.gen(function* () {
      const resilience = yield* Resilience.make()
      const limited = new Errors.ProviderRateLimited({ provider: "acme", retryAfter: Duration.minutes(5) })
      const provider = yield* makeProvider([limited, "ok"])
      yield* runFor(resilience.protect("acme", provider.call))
      assert.deepStrictEqual(gaps(yield* provider.times), [60_000])
    })
  )

  it.effect("does not retry refused credentials, bad requests, exhausted quota or an overflowing prompt", () =>
    Effect.gen(function* () {
      const resilience = yield* Resilience.make()
      const errors: ReadonlyArray<Errors.ProviderError> = [
        new Errors.ProviderAuthenticationFailed({ provider: "acme" }),
        new Errors.ProviderInvalidRequest({ provider: "acme", detail: "unknown field" }),
        new Errors.ProviderQuotaExhausted({ provider: "acme" }),
        new Errors.ContextWindowExceeded({ model: "m" })
      ]
      for (const error of errors) {
        const provider = yield* makeProvider([error, "ok"])
        const exit = yield* runFor(resilience.protect(`p-${error._tag}`, provider.call))
        assert.strictEqual(failureOf(exit), error)
        assert.strictEqual((yield* provider.times).length, 1, error._tag)
      }
    })
  )

  it.effect("fails an attempt that runs past the time limit with ProviderTimeout, and retries it", () =>
    Effect.gen(function* () {
      const resilience = yield* Resilience.make(settings({ model: { jitter: false, attemptTimeout: 10_000 } }))
      const provider = yield* makeProvider(["late"], "1 hour")
      const exit = yield* runFor(resilience.protect("slow", provider.call))
      const error = failureOf(exit)
      assert.isTrue(error instanceof Errors.ProviderTimeout)
      if (error instanceof Errors.ProviderTimeout) {
        assert.strictEqual(error.provider, "slow")
        assert.strictEqual(Duration.toMillis(error.after), 10_000)
      }
      assert.deepStrictEqual(gaps(yield* provider.times), [11_000, 12_000, 14_000])
    })
  )

  it.effect("takes a per-call time limit over the policy's", () =>
    Effect.gen(function* () {
      const resilience = yield* Resilience.make(settings({ model: { maxRetries: 0 } }))
      const provider = yield* makeProvider(["late"], "1 hour")
      const exit = yield* runFor(resilience.protect("slow", provider.call, { attemptTimeout: "2 seconds" }))
      const error = failureOf(exit)
      assert.isTrue(error instanceof Errors.ProviderTimeout && Duration.toMillis(error.after) === 2_000)
    })
  )

  it.scoped("publishes a Retrying event before each retry with its delay", () =>
    Effect.gen(function* () {
      const events = yield* ResearchEvents.ResearchEvents
      const subscription = yield* events.subscribe
      const resilience = yield* Resilience.make(noJitter)
      const provider = yield* makeProvider([down(), down(), "ok"])
      yield* runFor(resilience.protect("acme", provider.call).pipe(ResearchEvents.withSessionId("s1")))
      const published = Chunk.toReadonlyArray(yield* Queue.takeAll(subscription))
      assert.deepStrictEqual(
        published.map((e) => (e._tag === "Retrying" ? [e.sessionId, e.provider, e.attempt, e.delayMillis] : e._tag)),
        [
          ["s1", "acme", 1, 1_000],
          ["s1", "acme", 2, 2_000]
        ]
      )
    }).pipe(Effect.provide(ResearchEvents.layer))
  )
})

describe("Resilience circuit breaker", () => {
  it.effect("opens after the 5th failed attempt and rejects the next call without calling the provider", () =>
    Effect.gen(function* () {
      const resilience = yield* Resilience.make(noJitter)
      const provider = yield* makeProvider([down()])
      // The first call fails 4 times (1 + 3 retries); the second call's first attempt is the 5th failure.
      yield* runFor(resilience.protect("acme", provider.call), "10 seconds")
      assert.strictEqual(yield* resilience.circuitState("acme"), "closed")
      const second = yield* runFor(resilience.protect("acme", provider.call), "10 seconds")
      assert.strictEqual(failureOf(second)?._tag, "ProviderCircuitOpen")
      assert.strictEqual(yield* resilience.circuitState("acme"), "open")
      assert.strictEqual((yield* provider.times).length, 5)
      const third = yield* Effect.exit(resilience.protect("acme", provider.call))
      assert.strictEqual(failureOf(third)?._tag, "ProviderCircuitOpen")
      assert.strictEqual((yield* provider.times).length, 5)
    })
  )

  it.effect("half-opens after 30 seconds and closes when the trial succeeds", () =>
    Effect.gen(function* () {
      const resilience = yield* Resilience.make(settings({ model: { maxRetries: 0 } }))
      const provider = yield* makeProvider([down(), down(), down(), down(), down(), "ok"])
      for (let i = 0; i < 5; i++) yield* Effect.exit(resilience.protect("acme", provider.call))
      assert.strictEqual(yield* resilience.circuitState("acme"), "open")
      yield* TestClock.adjust("30 seconds")
      assert.strictEqual(yield* resilience.circuitState("acme"), "half_open")
      assert.strictEqual(yield* resilience.protect("acme", provider.call), "ok")
      assert.strictEqual(yield* resilience.circuitState("acme"), "closed")
    })
  )

  it.effect("re-opens when the trial fails", () =>
    Effect.gen(function* () {
      const resilience = yield* Resilience.make(settings({ model: { maxRetries: 0 } }))
      const provider = yield* makeProvider([down()])
      for (let i = 0; i < 5; i++) yield* Effect.exit(resilience.protect("acme", provider.call))
      yield* TestClock.adjust("30 seconds")
      yield* Effect.exit(resilience.protect("acme", provider.call))
      assert.strictEqual(yield* resilience.circuitState("acme"), "open")
      assert.strictEqual((yield* provider.times).length, 6)
    })
  )

  it.effect("never opens on rate limits", () =>
    Effect.gen(function* () {
      // The breaker alone: the adaptive rate (which slows a provider on 429s) is tested on its own below.
      const resilience = yield* Resilience.make(settings({ model: { maxRetries: 0, adaptiveRate: false } }))
      const provider = yield* makeProvider([new Errors.ProviderRateLimited({ provider: "acme" })])
      for (let i = 0; i < 12; i++) yield* Effect.exit(resilience.protect("acme", provider.call))
      assert.strictEqual(yield* resilience.circuitState("acme"), "closed")
      assert.strictEqual((yield* provider.times).length, 12)
    })
  )

  it.effect("opens on refused credentials, each call tried once", () =>
    Effect.gen(function* () {
      const resilience = yield* Resilience.make()
      const provider = yield* makeProvider([new Errors.ProviderAuthenticationFailed({ provider: "acme" })])
      for (let i = 0; i < 5; i++) {
        const exit = yield* Effect.exit(resilience.protect("acme", provider.call))
        assert.strictEqual(failureOf(exit)?._tag, "ProviderAuthenticationFailed")
      }
      assert.strictEqual((yield* provider.times).length, 5)
      assert.strictEqual(yield* resilience.circuitState("acme"), "open")
      const rejected = yield* Effect.exit(resilience.protect("acme", provider.call))
      assert.strictEqual(failureOf(rejected)?._tag, "ProviderCircuitOpen")
      assert.strictEqual((yield* provider.times).length, 5)
    })
  )

  it.effect("keeps one breaker per provider, shared by every session", () =>
    Effect.gen(function* () {
      const resilience = yield* Resilience.make(settings({ model: { maxRetries: 0 } }))
      const failing = yield* makeProvider([down()])
      const healthy = yield* makeProvider(["ok"])
      yield* Effect.forEach(["a", "b", "c", "d", "e"], (session) =>
        Effect.exit(resilience.protect("acme", failing.call).pipe(ResearchEvents.withSessionId(session)))
      )
      const otherSession = yield* Effect.exit(
        resilience.protect("acme", healthy.call).pipe(ResearchEvents.withSessionId("f"))
      )
      assert.strictEqual(failureOf(otherSession)?._tag, "ProviderCircuitOpen")
      assert.strictEqual(yield* resilience.protect("other", healthy.call), "ok")
    })
  )
})

describe("Resilience rate and concurrency limits", () => {
  const searchProvider = (times: Ref.Ref<ReadonlyArray<number>>): SearchProvider.Service => ({
    name: "tavily",
    search: () =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => Ref.update(times, (all) => [...all, now])).pipe(Effect.as([]))
  })

  it.effect("spaces search calls at 1 a second after a burst of 3", () =>
    Effect.gen(function* () {
      const resilience = yield* Resilience.make()
      const times = yield* Ref.make<ReadonlyArray<number>>([])
      const search = resilience.wrapSearchProvider(searchProvider(times))
      yield* runFor(
        Effect.forEach([1, 2, 3, 4, 5, 6], () => search.search("q", { maxResults: 5 }), { concurrency: "unbounded" }),
        "1 minute"
      )
      assert.deepStrictEqual(yield* Ref.get(times), [0, 0, 0, 1_000, 2_000, 3_000])
    })
  )

  it.effect("refills the burst after a quiet spell", () =>
    Effect.gen(function* () {
      const resilience = yield* Resilience.make()
      const times = yield* Ref.make<ReadonlyArray<number>>([])
      const search = resilience.wrapSearchProvider(searchProvider(times))
      const burst = Effect.forEach([1, 2, 3, 4], () => search.search("q", { maxResults: 5 }), {
        concurrency: "unbounded"
      })
      yield* runFor(burst, "10 seconds")
      yield* runFor(burst, "1 minute")
      assert.deepStrictEqual(yield* Ref.get(times), [0, 0, 0, 1_000, 10_000, 10_000, 10_000, 11_000])
    })
  )

  it.effect("leaves models unlimited by default and limits them when configured", () =>
    Effect.gen(function* () {
      const unlimited = yield* Resilience.make()
      const free = yield* makeProvider(["ok"])
      yield* runFor(Effect.forEach([1, 2, 3, 4, 5], () => unlimited.protect("openai", free.call), { concurrency: 5 }))
      assert.deepStrictEqual(yield* free.times, [0, 0, 0, 0, 0])
      const limited = yield* Resilience.make(settings({ providers: { openai: { requestsPerSecond: 2, burst: 1 } } }))
      const paced = yield* makeProvider(["ok"])
      const start = yield* Clock.currentTimeMillis
      yield* runFor(Effect.forEach([1, 2, 3, 4], () => limited.protect("openai", paced.call), { concurrency: 4 }))
      assert.deepStrictEqual(
        (yield* paced.times).map((t) => t - start),
        [0, 500, 1_000, 1_500]
      )
    })
  )

  it.effect("never runs more calls at once than the provider's concurrency limit", () =>
    Effect.gen(function* () {
      const resilience = yield* Resilience.make(settings({ providers: { ollama: { maxConcurrency: 3 } } }))
      const inFlight = yield* Ref.make(0)
      const peak = yield* Ref.make(0)
      const call = Effect.acquireUseRelease(
        Effect.flatMap(
          Ref.updateAndGet(inFlight, (n) => n + 1),
          (now) => Ref.update(peak, (p) => Math.max(p, now))
        ),
        () => Effect.sleep("1 second"),
        () => Ref.update(inFlight, (n) => n - 1)
      )
      const fiber = yield* Effect.fork(
        Effect.forEach(Array.from({ length: 20 }), () => resilience.protect("ollama", call), {
          concurrency: "unbounded"
        })
      )
      yield* TestClock.adjust("6 seconds")
      assert.isNull(fiber.unsafePoll(), "20 calls at 3 at a time need 7 seconds")
      yield* TestClock.adjust("1 second")
      yield* Fiber.join(fiber)
      assert.strictEqual(yield* Ref.get(peak), 3)
      assert.strictEqual(yield* Ref.get(inFlight), 0)
    })
  )
})

describe("Resilience settings", () => {
  it("resolves a policy from the kind's defaults, the kind's settings and the provider's", () => {
    const resolved = settings({
      search: { burst: 5 },
      providers: { exa: { requestsPerSecond: 5 }, local: { requestsPerSecond: null } }
    })
    const exa = Resilience.policyFor(resolved, "exa", "search")
    assert.strictEqual(exa.requestsPerSecond, 5)
    assert.strictEqual(exa.burst, 5)
    assert.strictEqual(exa.maxRetries, 3)
    assert.strictEqual(Resilience.policyFor(resolved, "tavily", "search").requestsPerSecond, 1)
    assert.isUndefined(Resilience.policyFor(resolved, "local", "search").requestsPerSecond)
    assert.isUndefined(Resilience.policyFor(resolved, "openai", "model").requestsPerSecond)
    assert.strictEqual(Duration.toMillis(Resilience.policyFor(resolved, "openai", "model").maxRetryDelay), 60_000)
  })

  it("puts a provider's own defaults under the settings, the settings winning setting by setting", () => {
    const merged = Resilience.withProviderDefaults(
      settings({ providers: { exa: { burst: 2 } }, search: { maxRetries: 1 } }),
      {
        exa: new Resilience.PolicyOverrides({ requestsPerSecond: 5, burst: 5 }),
        perplexity: new Resilience.PolicyOverrides({ requestsPerSecond: 0.5 })
      }
    )
    const exa = Resilience.policyFor(merged, "exa", "search")
    assert.strictEqual(exa.requestsPerSecond, 5)
    assert.strictEqual(exa.burst, 2)
    assert.strictEqual(exa.maxRetries, 1)
    assert.strictEqual(Resilience.policyFor(merged, "perplexity", "search").requestsPerSecond, 0.5)
    assert.strictEqual(Resilience.policyFor(merged, "tavily", "search").requestsPerSecond, 1)
  })

  it.effect("refuses settings that make no sense", () =>
    Effect.gen(function* () {
      const result = yield* Effect.either(Resilience.decodeSettings({ model: { maxRetries: -1 } }))
      assert.isTrue(Either.isLeft(result))
    })
  )

  it.effect("reads settings from config as JSON", () =>
    Effect.gen(function* () {
      const resilience = yield* Resilience.Resilience
      assert.strictEqual(Resilience.policyFor(resilience.settings, "tavily", "search").requestsPerSecond, 4)
    }).pipe(
      Effect.provide(
        Resilience.layerConfig().pipe(
          Layer.provide(
            Layer.setConfigProvider(
              ConfigProvider.fromMap(new Map([["RESILIENCE", JSON.stringify({ search: { requestsPerSecond: 4 } })]]))
            )
          )
        )
      )
    )
  )

  it.effect("fails the config layer with a ConfigError on invalid settings", () =>
    Effect.gen(function* () {
      const result = yield* Effect.either(
        Effect.provide(
          Resilience.Resilience,
          Resilience.layerConfig().pipe(
            Layer.provide(
              Layer.setConfigProvider(
                ConfigProvider.fromMap(new Map([["RESILIENCE", JSON.stringify({ search: { burst: 0 } })]]))
              )
            )
          )
        )
      )
      assert.isTrue(Either.isLeft(result) && result.left._op === "InvalidData")
    })
  )
})

describe("Resilience wrappers", () => {
  it.effect("a wrapped model retries its calls and wrapping twice adds nothing", () =>
    Effect.gen(function* () {
      const resilience = yield* Resilience.make(noJitter)
      const log = yield* ScriptedModel.makeLog
      const model = yield* ScriptedModel.make({ provider: "acme", script: [down(), "fine"] }, log)
      const wrapped = resilience.wrapLanguageModel(resilience.wrapLanguageModel(model))
      const exit = yield* runFor(wrapped.generate({ messages: [LanguageModel.user("hi")] }))
      assert.isTrue(Exit.isSuccess(exit) && exit.value.text === "fine")
      assert.strictEqual((yield* log.calls).length, 2)
      assert.strictEqual(resilience.wrapLanguageModel(wrapped), wrapped)
    })
  )

  it.effect("ModelRouter.layer protects every role's model when a Resilience is in context", () =>
    Effect.gen(function* () {
      const log = yield* ScriptedModel.makeLog
      const model = yield* ScriptedModel.make({ provider: "acme", script: [down(), "fine"] }, log)
      const router = yield* Effect.provide(
        ModelRouter.ModelRouter,
        ModelRouter.layer({ default: model }).pipe(Layer.provide(Resilience.layer(noJitter)))
      )
      const exit = yield* runFor(router.generate("report", { messages: [LanguageModel.user("hi")] }))
      assert.isTrue(Exit.isSuccess(exit) && exit.value.text === "fine")
    })
  )

  it.effect("ModelRouter.layer leaves the models as they are without a Resilience", () =>
    Effect.gen(function* () {
      const log = yield* ScriptedModel.makeLog
      const model = yield* ScriptedModel.make({ provider: "acme", script: [down(), "fine"] }, log)
      const router = yield* Effect.provide(ModelRouter.ModelRouter, ModelRouter.layer({ default: model }))
      const exit = yield* Effect.exit(router.generate("report", { messages: [LanguageModel.user("hi")] }))
      assert.strictEqual(failureOf(exit)?._tag, "ProviderUnavailable")
    })
  )

  it.effect("a wrapped extractor gets the extract policy under its own name", () =>
    Effect.gen(function* () {
      const resilience = yield* Resilience.make(settings({ extract: { maxRetries: 1, jitter: false } }))
      const calls = yield* Ref.make(0)
      const extractor = resilience.wrapContentExtractor({
        name: "http",
        extract: () =>
          Effect.zipRight(
            Ref.update(calls, (n) => n + 1),
            Effect.fail(down("http"))
          )
      })
      yield* runFor(extractor.extract(["https://example.org"]))
      assert.strictEqual(yield* Ref.get(calls), 2)
      assert.strictEqual(yield* resilience.circuitState("http", "extract"), "closed")
    })
  )
})
