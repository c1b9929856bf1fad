/**
 * The file store's per-session writers alone: one write of a session at a time, a begun write finished, a waiter
 * interrupted or a write failed leaving the writer usable, and `busy` telling the event log when to queue.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Ref from "effect/Ref"
import * as SessionWriters from "../../../src/store/file/sessionWriters.js"

describe("SessionWriters", () => {
  it.effect("is busy while a write runs or waits, and idle again once every write is done", () =>
    Effect.gen(function* () {
      const writers = SessionWriters.make()
      assert.isFalse(writers.busy("a"))
      const gate = yield* Deferred.make<void>()
      const first = yield* Effect.fork(writers("a", Deferred.await(gate)))
      yield* Effect.yieldNow()
      assert.isTrue(writers.busy("a"))
      assert.isFalse(writers.busy("b"), "another session's writer is its own")
      const second = yield* Effect.fork(writers("a", Effect.succeed("second")))
      yield* Effect.yieldNow()
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(first)
      assert.strictEqual(yield* Fiber.join(second), "second")
      assert.isFalse(writers.busy("a"))
    })
  )

  it.effect("waiters take their turns one at a time, in the order they came", () =>
    Effect.gen(function* () {
      const writers = SessionWriters.make()
      const order = yield* Ref.make<ReadonlyArray<number>>([])
      const inside = yield* Ref.make({ now: 0, most: 0 })
      const write = (n: number) =>
        writers(
          "a",
          Effect.gen(function* () {
            yield* Ref.update(inside, (s) => ({ now: s.now + 1, most: Math.max(s.most, s.now + 1) }))
            yield* Effect.yieldNow()
            yield* Ref.update(order, (o) => [...o, n])
            yield* Ref.update(inside, (s) => ({ ...s, now: s.now - 1 }))
          })
        )
      yield* Effect.forEach([1, 2, 3, 4, 5], write, { concurrency: "unbounded", discard: true })
      assert.deepStrictEqual(yield* Ref.get(order), [1, 2, 3, 4, 5])
      assert.strictEqual((yield* Ref.get(inside)).most, 1)
    })
  )

  it.effect("a caller interrupted while it waits never runs its write, and the writer goes on to the next", () =>
    Effect.gen(function* () {
      const writers = SessionWriters.make()
      const ran = yield* Ref.make<ReadonlyArray<string>>([])
      const gate = yield* Deferred.make<void>()
      const holder = yield* Effect.fork(writers("a", Deferred.await(gate)))
      yield* Effect.yieldNow()
      const interrupted = yield* Effect.fork(
        writers(
          "a",
          Ref.update(ran, (r) => [...r, "interrupted"])
        )
      )
      const next = yield* Effect.fork(
        writers(
          "a",
          Ref.update(ran, (r) => [...r, "next"])
        )
      )
      yield* Effect.yieldNow()
      yield* Fiber.interrupt(interrupted)
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(holder)
      yield* Fiber.join(next)
      assert.deepStrictEqual(yield* Ref.get(ran), ["next"])
      assert.isFalse(writers.busy("a"))
    })
  )

  it.effect("a write that fails or dies gives its failure to its caller and lets the writer go", () =>
    Effect.gen(function* () {
      const writers = SessionWriters.make()
      const failed = yield* Effect.exit(writers("a", Effect.fail("disk full")))
      assert.deepStrictEqual(failed, Exit.fail("disk full"))
      const died = yield* Effect.exit(writers("a", Effect.die("bug")))
      assert.isTrue(Exit.isFailure(died))
      assert.isFalse(writers.busy("a"))
      assert.strictEqual(yield* writers("a", Effect.succeed(1)), 1)
    })
  )

  it.live("a write that has begun completes even when its caller is interrupted", () =>
    Effect.gen(function* () {
      const writers = SessionWriters.make()
      const done = yield* Ref.make(false)
      const fiber = yield* Effect.fork(writers("b", Effect.zipRight(Effect.sleep("10 millis"), Ref.set(done, true))))
      yield* Effect.yieldNow()
      yield* Fiber.interrupt(fiber)
      assert.isTrue(yield* Ref.get(done))
      assert.isFalse(writers.busy("b"))
    })
  )
})
