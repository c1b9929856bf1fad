import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, FiberRef, Layer, Scheduler } from "effect"
import { performance } from "node:perf_hooks"
import * as SlicedScheduler from "../src/internal/SlicedScheduler.js"

/** Keeps the CPU busy for `millis`, as a step of a session's work would. */
const busy = (millis: number) =>
  Effect.sync(() => {
    const end = performance.now() + millis
    while (performance.now() < end) {
      // spin
    }
  })

/**
 * Starts `fibers` fibers of `steps` busy steps each (about 0.02 ms a step), sets a timer for the next turn of the
 * event loop, and reports how many steps had run when the timer fired, of how many in all.
 */
const stepsBeforeTimer = (fibers: number, steps: number) =>
  Effect.gen(function* () {
    let done = 0
    let seenByTimer: number | undefined
    const work = Effect.forEach(
      Array.from({ length: fibers }, (_, i) => i),
      () =>
        Effect.repeatN(
          Effect.zipRight(
            busy(0.02),
            Effect.sync(() => done++)
          ),
          steps - 1
        ),
      { concurrency: "unbounded", discard: true }
    )
    yield* Effect.sync(() => setTimeout(() => (seenByTimer = done), 0))
    yield* work
    // The timer fires at the latest once the work is over.
    yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 5)))
    return { seenByTimer: seenByTimer ?? -1, total: fibers * steps }
  })

/**
 * Parks `fibers` fibers on one gate, opens it with a timer set for the next turn of the event loop, and reports how
 * many had done their work (`millis` of CPU each) when the timer fired, of how many in all.
 */
const wokenBeforeTimer = (fibers: number, millis: number) =>
  Effect.gen(function* () {
    const gate = yield* Deferred.make<void>()
    let done = 0
    let seenByTimer: number | undefined
    const waiting = yield* Effect.forEach(
      Array.from({ length: fibers }, (_, i) => i),
      () =>
        Effect.fork(
          Deferred.await(gate).pipe(Effect.zipRight(busy(millis)), Effect.zipRight(Effect.sync(() => done++)))
        )
    )
    // Every fiber waits at the gate before it opens.
    yield* Effect.sleep("10 millis")
    yield* Effect.sync(() => setTimeout(() => (seenByTimer = done), 0))
    yield* Deferred.succeed(gate, undefined)
    yield* Fiber.joinAll(waiting)
    yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 5)))
    return { seenByTimer: seenByTimer ?? -1, total: fibers }
  })

describe("SlicedScheduler", () => {
  it.live("runs every fiber's work to its end, with the same results", () =>
    Effect.gen(function* () {
      const sums = yield* Effect.forEach(
        Array.from({ length: 200 }, (_, i) => i),
        (i) =>
          Effect.gen(function* () {
            let sum = 0
            for (let step = 0; step < 300; step++) {
              sum += i
              yield* Effect.yieldNow()
            }
            yield* Effect.sleep("1 millis")
            return sum
          }),
        { concurrency: "unbounded" }
      ).pipe(SlicedScheduler.withSlices({ sliceMillis: 1 }))
      assert.deepStrictEqual(
        sums,
        Array.from({ length: 200 }, (_, i) => i * 300)
      )
    })
  )

  it.live("a timer set while fibers are busy fires before their work is done", () =>
    Effect.gen(function* () {
      // About 200 ms of work in 20 fibers; slices of 5 ms let the timer in after the first.
      const { seenByTimer, total } = yield* stepsBeforeTimer(20, 500).pipe(SlicedScheduler.withSlices())
      assert.isAtLeast(seenByTimer, 0)
      assert.isBelow(seenByTimer, total / 2, `the timer saw ${seenByTimer} of ${total} steps done`)
    })
  )

  it.live("fibers woken together are sliced too: a timer set before fires before they have all run", () =>
    Effect.gen(function* () {
      // 400 fibers woken at once, about 40 ms of work: slices of 5 ms let the timer in after the first.
      const { seenByTimer, total } = yield* wokenBeforeTimer(400, 0.1).pipe(SlicedScheduler.withSlices())
      assert.isAtLeast(seenByTimer, 0)
      assert.isBelow(seenByTimer, total / 2, `the timer saw ${seenByTimer} of ${total} fibers done`)
    })
  )

  it.live("work in the background gives way: the other work put off runs first, and the background still moves", () =>
    Effect.gen(function* () {
      let background = 0
      let foreground = 0
      let backgroundWhenForegroundEnded = -1
      const steps = (fibers: number, count: number, step: () => void) =>
        Effect.forEach(
          Array.from({ length: fibers }, (_, i) => i),
          () => Effect.repeatN(Effect.zipRight(busy(0.02), Effect.sync(step)), count - 1),
          { concurrency: "unbounded", discard: true }
        )
      // About 200 ms of work each, started together, background first.
      const inBackground = yield* Effect.fork(SlicedScheduler.background(steps(20, 500, () => background++)))
      yield* steps(20, 500, () => foreground++).pipe(
        Effect.zipRight(Effect.sync(() => (backgroundWhenForegroundEnded = background)))
      )
      yield* Fiber.join(inBackground)
      assert.strictEqual(foreground, 10_000)
      assert.strictEqual(background, 10_000)
      assert.isBelow(backgroundWhenForegroundEnded, 5_000, `background had done ${backgroundWhenForegroundEnded}`)
      // At least one background queue a turn of the event loop: it was not held still while the rest ran.
      assert.isAbove(backgroundWhenForegroundEnded, 0)
    }).pipe(SlicedScheduler.withSlices())
  )

  it.live("Effect's default scheduler, for comparison, lets the timer wait for the whole burst", () =>
    Effect.gen(function* () {
      const { seenByTimer, total } = yield* stepsBeforeTimer(20, 500).pipe(
        Effect.withScheduler(Scheduler.defaultScheduler)
      )
      assert.strictEqual(seenByTimer, total)
    })
  )

  it.live("the layer puts the sliced scheduler in place for what it is provided to", () =>
    Effect.gen(function* () {
      const inside = yield* FiberRef.get(FiberRef.currentScheduler).pipe(Effect.provide(SlicedScheduler.layer()))
      const outside = yield* FiberRef.get(FiberRef.currentScheduler)
      assert.notStrictEqual(inside, outside)
      assert.isTrue(inside !== Scheduler.defaultScheduler)
      const result = yield* Effect.provide(
        Effect.forEach([1, 2, 3], (n) => Effect.succeed(n * 2), { concurrency: "unbounded" }),
        Layer.merge(SlicedScheduler.layer({ sliceMillis: 2 }), Layer.empty)
      )
      assert.deepStrictEqual(result, [2, 4, 6])
    })
  )

  it("a slice that is not a positive number of milliseconds is refused", () => {
    for (const sliceMillis of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      assert.throws(() => SlicedScheduler.make({ sliceMillis }), RangeError)
    }
  })
})
