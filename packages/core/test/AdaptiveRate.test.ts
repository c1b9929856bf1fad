/**
 * The adaptive rate of a provider, on the TestClock: a 429 slows the provider down and pauses every caller for the
 * retry-after it gave, successes speed it up again up to its ceiling, and a provider with no limit gets one only when
 * it answers 429.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Duration, Effect, Fiber, Ref, Schema, TestClock } from "effect"
import * as Errors from "../src/Errors.js"
import * as AdaptiveLimiter from "../src/internal/resilience/adaptiveLimiter.js"
import * as Resilience from "../src/Resilience.js"

const settings = (encoded: unknown): Resilience.Settings => Schema.decodeUnknownSync(Resilience.Settings)(encoded)

/** Calls `count` times one after the other (each waiting its turn) and returns when each went out. */
const sendTimes = (limiter: AdaptiveLimiter.Limiter, count: number) =>
  Effect.gen(function* () {
    const times = yield* Ref.make<ReadonlyArray<number>>([])
    const fiber = yield* Effect.fork(
      Effect.repeatN(
        Effect.zipRight(
          limiter.acquire,
          Effect.flatMap(Clock.currentTimeMillis, (now) => Ref.update(times, (all) => [...all, now]))
        ),
        count - 1
      )
    )
    yield* TestClock.adjust("1 hour")
    yield* Fiber.join(fiber)
    const all = yield* Ref.get(times)
    return all.slice(1).map((t, i) => t - (all[i] ?? 0))
  })

describe("adaptive rate", () => {
  it.effect("a 429 halves the rate, and ten successes grow it by a quarter, never above the ceiling", () =>
    Effect.gen(function* () {
      const limiter = yield* AdaptiveLimiter.make({ ratePerSecond: 2, burst: 1, maxRatePerSecond: 2, adaptive: true })
      assert.deepStrictEqual(yield* sendTimes(limiter, 3), [500, 500])
      yield* limiter.rateLimited(undefined)
      assert.strictEqual(yield* limiter.rate, 1)
      assert.deepStrictEqual(yield* sendTimes(limiter, 3), [1_000, 1_000])
      for (let i = 0; i < 10; i++) yield* limiter.succeeded
      assert.strictEqual(yield* limiter.rate, 1.25)
      for (let i = 0; i < 50; i++) yield* limiter.succeeded
      assert.strictEqual(yield* limiter.rate, 2)
    })
  )

  it.effect("a retry-after pauses every caller until it has passed", () =>
    Effect.gen(function* () {
      const limiter = yield* AdaptiveLimiter.make({
        ratePerSecond: undefined,
        burst: 3,
        maxRatePerSecond: undefined,
        adaptive: true
      })
      yield* limiter.rateLimited(Duration.seconds(7))
      const fiber = yield* Effect.fork(Effect.zipRight(limiter.acquire, Clock.currentTimeMillis))
      yield* TestClock.adjust("10 seconds")
      assert.strictEqual(yield* Fiber.join(fiber), 7_000)
    })
  )

  it.effect("without a limit, a 429 after a busy spell limits the provider to half the rate it was sent at", () =>
    Effect.gen(function* () {
      const limiter = yield* AdaptiveLimiter.make({
        ratePerSecond: undefined,
        burst: 1,
        maxRatePerSecond: undefined,
        adaptive: true
      })
      for (let i = 0; i < 20; i++) yield* limiter.acquire
      yield* limiter.rateLimited(undefined)
      // 20 requests in the 10 s window: 2 a second were sent, so 1 a second is allowed.
      assert.strictEqual(yield* limiter.rate, 1)
      // Successes lift the limit again once it is far above what is sent.
      for (let i = 0; i < 100; i++) yield* limiter.succeeded
      assert.isUndefined(yield* limiter.rate)
    })
  )

  it.effect("the rate sent counts the last ten seconds only: older requests drop out", () =>
    Effect.gen(function* () {
      const make = AdaptiveLimiter.make({
        ratePerSecond: undefined,
        burst: 1,
        maxRatePerSecond: undefined,
        adaptive: true
      })
      const busy = yield* make
      for (let i = 0; i < 20; i++) yield* busy.acquire
      yield* TestClock.adjust("15 seconds")
      for (let i = 0; i < 6; i++) yield* busy.acquire
      yield* busy.rateLimited(undefined)
      // Only the six of the last ten seconds count: 0.6 a second sent, 0.3 allowed.
      assert.strictEqual(yield* busy.rate, 0.3)

      const quiet = yield* make
      for (let i = 0; i < 20; i++) yield* quiet.acquire
      yield* TestClock.adjust("15 seconds")
      for (let i = 0; i < 3; i++) yield* quiet.acquire
      yield* quiet.rateLimited(undefined)
      // Three requests in the window tell nothing about the provider's rate: no limit is set from them.
      assert.isUndefined(yield* quiet.rate)
    })
  )

  it.effect("through the policy: a provider answering 429 is slowed for the calls that follow", () =>
    Effect.gen(function* () {
      const resilience = yield* Resilience.make(
        settings({ search: { requestsPerSecond: 4, burst: 1, maxRetries: 0, jitter: false } })
      )
      const times = yield* Ref.make<ReadonlyArray<number>>([])
      const answers = yield* Ref.make(0)
      const call = Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        yield* Ref.update(times, (all) => [...all, now])
        const n = yield* Ref.getAndUpdate(answers, (k) => k + 1)
        return n === 1 ? yield* Effect.fail(new Errors.ProviderRateLimited({ provider: "acme" })) : "ok"
      })
      const fiber = yield* Effect.fork(
        Effect.forEach([1, 2, 3, 4], () => Effect.exit(resilience.protect("acme", call, { kind: "search" })))
      )
      yield* TestClock.adjust("1 minute")
      yield* Fiber.join(fiber)
      const all = yield* Ref.get(times)
      // 4 a second until the 429 (after the second call), then 2 a second.
      assert.deepStrictEqual(
        all.slice(1).map((t, i) => t - (all[i] ?? 0)),
        [250, 500, 500]
      )
    })
  )

  it.effect("a fixed rate when adaptiveRate is off", () =>
    Effect.gen(function* () {
      const limiter = yield* AdaptiveLimiter.make({ ratePerSecond: 2, burst: 1, maxRatePerSecond: 2, adaptive: false })
      yield* limiter.rateLimited(Duration.seconds(30))
      assert.strictEqual(yield* limiter.rate, 2)
      assert.deepStrictEqual(yield* sendTimes(limiter, 3), [500, 500])
    })
  )
})
