import { assert, describe, it } from "@effect/vitest"
import { Chunk, Duration, Effect, Either, Fiber, Queue, Ref, Schema, TestClock } from "effect"
import * as CircuitBreaker from "../src/CircuitBreaker.js"
import * as Errors from "../src/Errors.js"
import * as ResearchEvents from "../src/ResearchEvents.js"

const down = new Errors.ProviderUnavailable({ provider: "acme", status: 503 })

/** A provider call that fails with `error` (or succeeds when it is undefined), counting how often it runs. */
const makeCall = Effect.map(Ref.make(0), (count) => ({
  count: Ref.get(count),
  call: (error?: Errors.ProviderError) =>
    Effect.zipRight(
      Ref.update(count, (n) => n + 1),
      error === undefined ? Effect.succeed("ok") : Effect.fail(error)
    )
}))

const failTimes = <A, E>(breaker: CircuitBreaker.CircuitBreaker, times: number, effect: Effect.Effect<A, E>) =>
  Effect.repeatN(Effect.either(breaker.protect(effect)), times - 1)

describe("CircuitBreaker", () => {
  it.effect("stays closed through 4 consecutive failures and opens on the 5th", () =>
    Effect.gen(function* () {
      const breaker = yield* CircuitBreaker.make({ provider: "acme" })
      const { call } = yield* makeCall
      yield* failTimes(breaker, 4, call(down))
      assert.strictEqual(yield* breaker.state, "closed")
      yield* Effect.either(breaker.protect(call(down)))
      assert.strictEqual(yield* breaker.state, "open")
    })
  )

  it.effect("rejects calls with ProviderCircuitOpen while open, without making them", () =>
    Effect.gen(function* () {
      const breaker = yield* CircuitBreaker.make({ provider: "acme" })
      const { call, count } = yield* makeCall
      yield* failTimes(breaker, 5, call(down))
      const result = yield* Effect.either(breaker.protect(call()))
      assert.isTrue(Either.isLeft(result) && result.left instanceof Errors.ProviderCircuitOpen)
      if (Either.isLeft(result) && result.left instanceof Errors.ProviderCircuitOpen) {
        assert.strictEqual(result.left.provider, "acme")
        assert.strictEqual(result.left.retryAt, 30_000)
      }
      assert.strictEqual(yield* count, 5)
    })
  )

  it.effect("a refused call's ProviderCircuitOpen carries the failure that opened the breaker, and says it", () =>
    Effect.gen(function* () {
      const breaker = yield* CircuitBreaker.make({ provider: "acme" })
      const { call } = yield* makeCall
      const refused = new Errors.ProviderAuthenticationFailed({ provider: "acme", detail: "invalid key" })
      yield* failTimes(breaker, 5, call(refused))
      const result = yield* Effect.flip(breaker.protect(call()))
      assert.instanceOf(result, Errors.ProviderCircuitOpen)
      if (result instanceof Errors.ProviderCircuitOpen) {
        assert.deepStrictEqual(result.cause, refused)
        assert.include(result.message, "refused the credentials")
        const decoded = Schema.decodeUnknownSync(Errors.ResearchError)(Schema.encodeSync(Errors.ResearchError)(result))
        assert.deepStrictEqual(decoded, result)
      }
    })
  )

  it.effect("a success resets the count of consecutive failures", () =>
    Effect.gen(function* () {
      const breaker = yield* CircuitBreaker.make({ provider: "acme" })
      const { call } = yield* makeCall
      yield* failTimes(breaker, 4, call(down))
      yield* breaker.protect(call())
      yield* failTimes(breaker, 4, call(down))
      assert.strictEqual(yield* breaker.state, "closed")
    })
  )

  it.effect("half-opens after 30 seconds and closes when the trial call succeeds", () =>
    Effect.gen(function* () {
      const breaker = yield* CircuitBreaker.make({ provider: "acme" })
      const { call, count } = yield* makeCall
      yield* failTimes(breaker, 5, call(down))
      yield* TestClock.adjust("29 seconds")
      assert.strictEqual(yield* breaker.state, "open")
      assert.isTrue(Either.isLeft(yield* Effect.either(breaker.protect(call()))))
      yield* TestClock.adjust("1 second")
      assert.strictEqual(yield* breaker.state, "half_open")
      assert.strictEqual(yield* breaker.protect(call()), "ok")
      assert.strictEqual(yield* breaker.state, "closed")
      assert.strictEqual(yield* count, 6)
    })
  )

  it.effect("re-opens for another 30 seconds when the trial call fails", () =>
    Effect.gen(function* () {
      const breaker = yield* CircuitBreaker.make({ provider: "acme" })
      const { call, count } = yield* makeCall
      yield* failTimes(breaker, 5, call(down))
      yield* TestClock.adjust("30 seconds")
      yield* Effect.either(breaker.protect(call(down)))
      assert.strictEqual(yield* breaker.state, "open")
      const rejected = yield* Effect.either(breaker.protect(call()))
      assert.isTrue(Either.isLeft(rejected) && rejected.left instanceof Errors.ProviderCircuitOpen)
      if (Either.isLeft(rejected) && rejected.left instanceof Errors.ProviderCircuitOpen) {
        assert.strictEqual(rejected.left.retryAt, 60_000)
      }
      assert.strictEqual(yield* count, 6)
      yield* TestClock.adjust("30 seconds")
      assert.strictEqual(yield* breaker.protect(call()), "ok")
    })
  )

  it.effect("lets one trial through at a time while half-open", () =>
    Effect.gen(function* () {
      const breaker = yield* CircuitBreaker.make({ provider: "acme" })
      const { call, count } = yield* makeCall
      yield* failTimes(breaker, 5, call(down))
      yield* TestClock.adjust("30 seconds")
      const trial = yield* Effect.fork(breaker.protect(Effect.zipRight(Effect.sleep("5 seconds"), call())))
      yield* TestClock.adjust("1 second")
      const concurrent = yield* Effect.either(breaker.protect(call()))
      assert.isTrue(Either.isLeft(concurrent) && concurrent.left instanceof Errors.ProviderCircuitOpen)
      yield* TestClock.adjust("5 seconds")
      assert.strictEqual(yield* Fiber.join(trial), "ok")
      assert.strictEqual(yield* breaker.state, "closed")
      assert.strictEqual(yield* count, 6)
    })
  )

  it.effect("lets another trial through when the trial call is interrupted", () =>
    Effect.gen(function* () {
      const breaker = yield* CircuitBreaker.make({ provider: "acme" })
      const { call } = yield* makeCall
      yield* failTimes(breaker, 5, call(down))
      yield* TestClock.adjust("30 seconds")
      const trial = yield* Effect.fork(breaker.protect(Effect.zipRight(Effect.sleep("1 minute"), call())))
      yield* TestClock.adjust("1 second")
      yield* Fiber.interrupt(trial)
      assert.strictEqual(yield* breaker.state, "half_open")
      assert.strictEqual(yield* breaker.protect(call()), "ok")
      assert.strictEqual(yield* breaker.state, "closed")
    })
  )

  it.effect("does not count rate limits, however many", () =>
    Effect.gen(function* () {
      const breaker = yield* CircuitBreaker.make({ provider: "acme" })
      const { call, count } = yield* makeCall
      yield* failTimes(breaker, 20, call(new Errors.ProviderRateLimited({ provider: "acme" })))
      assert.strictEqual(yield* breaker.state, "closed")
      assert.strictEqual(yield* breaker.protect(call()), "ok")
      assert.strictEqual(yield* count, 21)
    })
  )

  it.effect("does not count the caller's own mistakes (bad request, overflowing prompt, no quota)", () =>
    Effect.gen(function* () {
      const breaker = yield* CircuitBreaker.make({ provider: "acme" })
      const { call } = yield* makeCall
      yield* failTimes(breaker, 5, call(new Errors.ProviderInvalidRequest({ provider: "acme", detail: "bad" })))
      yield* failTimes(breaker, 5, call(new Errors.ContextWindowExceeded({ model: "m" })))
      yield* failTimes(breaker, 5, call(new Errors.ProviderQuotaExhausted({ provider: "acme" })))
      assert.strictEqual(yield* breaker.state, "closed")
    })
  )

  it.effect("counts refused credentials and timeouts", () =>
    Effect.gen(function* () {
      const breaker = yield* CircuitBreaker.make({ provider: "acme" })
      const { call } = yield* makeCall
      yield* failTimes(breaker, 3, call(new Errors.ProviderAuthenticationFailed({ provider: "acme" })))
      yield* failTimes(breaker, 2, call(new Errors.ProviderTimeout({ provider: "acme", after: Duration.seconds(1) })))
      assert.strictEqual(yield* breaker.state, "open")
    })
  )

  it.effect("follows its own threshold, reset timeout and classification", () =>
    Effect.gen(function* () {
      const breaker = yield* CircuitBreaker.make({
        provider: "acme",
        failureThreshold: 2,
        resetTimeout: "5 seconds",
        isFailure: () => true
      })
      const { call } = yield* makeCall
      yield* failTimes(breaker, 2, call(new Errors.ProviderRateLimited({ provider: "acme" })))
      assert.strictEqual(yield* breaker.state, "open")
      yield* TestClock.adjust("5 seconds")
      assert.strictEqual(yield* breaker.state, "half_open")
    })
  )

  it.scoped("publishes each change of state", () =>
    Effect.gen(function* () {
      const events = yield* ResearchEvents.ResearchEvents
      const subscription = yield* events.subscribe
      const breaker = yield* CircuitBreaker.make({ provider: "acme" })
      const { call } = yield* makeCall
      yield* failTimes(breaker, 5, call(down))
      yield* TestClock.adjust("30 seconds")
      yield* breaker.protect(call())
      const published = Chunk.toReadonlyArray(yield* Queue.takeAll(subscription))
      assert.deepStrictEqual(
        published.map((e) => (e._tag === "CircuitChanged" ? `${e.provider}:${e.state}` : e._tag)),
        ["acme:open", "acme:half_open", "acme:closed"]
      )
    }).pipe(Effect.provide(ResearchEvents.layer))
  )
})
