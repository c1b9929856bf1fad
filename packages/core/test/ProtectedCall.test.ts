import { assert, describe, it } from "@effect/vitest"
import { Deferred, Duration, Effect, Exit, Fiber, FiberRef, TestClock } from "effect"
import * as ProtectedCall from "../src/internal/resilience/protectedCall.js"

class TooLate {
  readonly _tag = "TooLate"
}

const limit = Duration.seconds(10)

describe("An attempt's time limit", () => {
  it.effect("fails with the time limit's error and interrupts the attempt when it runs past the limit", () =>
    Effect.gen(function* () {
      const stopped = yield* Deferred.make<void>()
      const attempt = Effect.onInterrupt(Effect.never, () => Deferred.succeed(stopped, undefined))
      const fiber = yield* Effect.fork(ProtectedCall.timeLimited(attempt, limit, () => new TooLate()))
      yield* TestClock.adjust("9 seconds")
      assert.isNull(fiber.unsafePoll())
      yield* TestClock.adjust("1 second")
      const exit = yield* Fiber.await(fiber)
      assert.deepStrictEqual(exit, Exit.fail(new TooLate()))
      assert.isTrue(yield* Deferred.isDone(stopped))
    })
  )

  it.scoped("returns what the attempt returns in time, with the fiber refs it set, and its failures as they are", () =>
    Effect.gen(function* () {
      const ref = yield* FiberRef.make("before")
      const value = yield* ProtectedCall.timeLimited(
        Effect.as(Effect.zipRight(Effect.sleep("1 second"), FiberRef.set(ref, "after")), 42),
        limit,
        () => new TooLate()
      ).pipe(
        Effect.fork,
        Effect.tap(() => TestClock.adjust("1 second")),
        Effect.flatMap(Fiber.join)
      )
      assert.strictEqual(value, 42)
      assert.strictEqual(yield* FiberRef.get(ref), "after")
      const failed = yield* Effect.exit(ProtectedCall.timeLimited(Effect.fail("refused"), limit, () => new TooLate()))
      assert.deepStrictEqual(failed, Exit.fail("refused"))
    })
  )

  it.effect("interrupts the attempt when the caller is interrupted", () =>
    Effect.gen(function* () {
      const started = yield* Deferred.make<void>()
      const stopped = yield* Deferred.make<void>()
      const attempt = Effect.zipRight(
        Deferred.succeed(started, undefined),
        Effect.onInterrupt(Effect.never, () => Deferred.succeed(stopped, undefined))
      )
      const fiber = yield* Effect.fork(ProtectedCall.timeLimited(attempt, limit, () => new TooLate()))
      yield* Deferred.await(started)
      const exit = yield* Fiber.interrupt(fiber)
      assert.isTrue(Exit.isInterrupted(exit))
      assert.isTrue(yield* Deferred.isDone(stopped))
    })
  )

  // The live clock's path: the platform's timer, not a sleeping fiber.
  it.live("fails with the time limit's error on the live clock", () =>
    Effect.gen(function* () {
      const exit = yield* Effect.exit(ProtectedCall.timeLimited(Effect.never, Duration.millis(5), () => new TooLate()))
      assert.deepStrictEqual(exit, Exit.fail(new TooLate()))
      const value = yield* ProtectedCall.timeLimited(Effect.succeed("in time"), limit, () => new TooLate())
      assert.strictEqual(value, "in time")
    })
  )
})
