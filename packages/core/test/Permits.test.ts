import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, FiberId, RuntimeFlags, RuntimeFlagsPatch, Supervisor } from "effect"
import * as Permits from "../src/internal/resilience/permits.js"

/** Counts, per fiber, how often it was resumed after it suspended (needs op supervision on). */
class ResumeCounter extends Supervisor.AbstractSupervisor<void> {
  readonly resumes = new Map<number, number>()
  get value() {
    return Effect.void
  }
  override onResume<A, E>(fiber: Fiber.RuntimeFiber<A, E>) {
    const id = fiber.id().id
    this.resumes.set(id, (this.resumes.get(id) ?? 0) + 1)
  }
}

/** Adds `value` to `list`. */
const record = <A>(list: Array<A>, value: A) =>
  Effect.sync(() => {
    list.push(value)
  })

const withOpSupervision = Effect.withRuntimeFlagsPatch(RuntimeFlagsPatch.enable(RuntimeFlags.OpSupervision))

describe("Permits", () => {
  it.effect("waiters take the permits in the order they came, and a newcomer does not overtake them", () =>
    Effect.gen(function* () {
      const permits = Permits.unsafeMake(1)
      const order: Array<number> = []
      const gate = yield* Deferred.make<void>()
      const holder = yield* Effect.fork(permits.withPermit(Deferred.await(gate)))
      yield* Effect.yieldNow()
      const waiters: Array<Fiber.RuntimeFiber<void>> = []
      for (const index of [1, 2, 3, 4]) {
        waiters.push(yield* Effect.fork(permits.withPermit(record(order, index))))
        yield* Effect.yieldNow()
      }
      assert.strictEqual(permits.waiting(), 4)
      yield* Deferred.succeed(gate, undefined)
      // Comes while the permit passes from the holder to the first waiter: it must queue behind the four.
      const late = yield* Effect.fork(permits.withPermit(record(order, 5)))
      yield* Fiber.joinAll([holder, ...waiters, late])
      assert.deepStrictEqual(order, [1, 2, 3, 4, 5])
      assert.strictEqual(permits.free(), 1)
      assert.strictEqual(permits.waiting(), 0)
    })
  )

  it.effect("a returned permit wakes one waiter, not all of them", () =>
    Effect.gen(function* () {
      const permits = Permits.unsafeMake(1)
      const counter = new ResumeCounter()
      const waiterIds = new Set<number>()
      const fibers = yield* Effect.gen(function* () {
        const started: Array<Fiber.RuntimeFiber<void>> = []
        for (let index = 0; index < 50; index++) {
          const fiber = yield* Effect.fork(permits.withPermit(Effect.yieldNow()))
          waiterIds.add(fiber.id().id)
          started.push(fiber)
        }
        return started
      }).pipe(Effect.supervised(counter), withOpSupervision)
      yield* Fiber.joinAll(fibers)
      const resumes = [...counter.resumes].filter(([id]) => waiterIds.has(id)).map(([, count]) => count)
      const total = resumes.reduce((sum, count) => sum + count, 0)
      // Each waiter is resumed when it starts, once when its permit comes and once after its own yield: about three
      // times each. A semaphore that wakes every waiter on each release resumes them about 50 * 50 / 2 times in all.
      assert.isAtMost(total, 50 * 4, `resumptions: ${total}`)
      assert.strictEqual(permits.free(), 1)
    })
  )

  it.effect("a waiter interrupted in line leaves it, and the permit goes to the next one", () =>
    Effect.gen(function* () {
      const permits = Permits.unsafeMake(1)
      const gate = yield* Deferred.make<void>()
      const ran: Array<string> = []
      const holder = yield* Effect.fork(permits.withPermit(Deferred.await(gate)))
      yield* Effect.yieldNow()
      const leaving = yield* Effect.fork(permits.withPermit(record(ran, "leaving")))
      const staying = yield* Effect.fork(permits.withPermit(record(ran, "staying")))
      yield* Effect.yieldNow()
      assert.strictEqual(permits.waiting(), 2)
      yield* Fiber.interrupt(leaving)
      assert.strictEqual(permits.waiting(), 1)
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(staying)
      yield* Fiber.join(holder)
      assert.deepStrictEqual(ran, ["staying"])
      assert.strictEqual(permits.free(), 1)
    })
  )

  it.effect("a waiter interrupted just as its permit came passes the permit on", () =>
    Effect.gen(function* () {
      const permits = Permits.unsafeMake(1)
      const ran: Array<string> = []
      const gate = yield* Deferred.make<void>()
      const next = yield* Deferred.make<Fiber.RuntimeFiber<void>>()
      // The holder interrupts the first waiter and then gives the permit back in the same step: the interruption
      // reaches the waiter before the permit does.
      const holder = yield* Effect.fork(
        permits.withPermit(
          Effect.zipRight(
            Deferred.await(gate),
            Effect.flatMap(Deferred.await(next), (fiber) =>
              Effect.sync(() => fiber.unsafeInterruptAsFork(FiberId.none))
            )
          )
        )
      )
      yield* Effect.yieldNow()
      const interrupted = yield* Effect.fork(permits.withPermit(record(ran, "interrupted")))
      const after = yield* Effect.fork(permits.withPermit(record(ran, "after")))
      yield* Effect.yieldNow()
      yield* Deferred.succeed(next, interrupted)
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(holder)
      const exit = yield* Fiber.await(interrupted)
      assert.isTrue(Exit.isInterrupted(exit))
      yield* Fiber.join(after)
      assert.deepStrictEqual(ran, ["after"])
      assert.strictEqual(permits.free(), 1)
      assert.strictEqual(permits.waiting(), 0)
    })
  )

  it.effect("a permit comes back when the effect fails, dies or is interrupted", () =>
    Effect.gen(function* () {
      const permits = Permits.unsafeMake(2)
      assert.isTrue(Exit.isFailure(yield* Effect.exit(permits.withPermit(Effect.fail("failed")))))
      assert.isTrue(Exit.isFailure(yield* Effect.exit(permits.withPermit(Effect.die("died")))))
      const holding = yield* Effect.fork(permits.withPermit(Effect.never))
      yield* Effect.yieldNow()
      assert.strictEqual(permits.free(), 1)
      yield* Fiber.interrupt(holding)
      assert.strictEqual(permits.free(), 2)
    })
  )

  it.effect("many waiters that leave do not hold up the ones that stay", () =>
    Effect.gen(function* () {
      const permits = Permits.unsafeMake(1)
      const gate = yield* Deferred.make<void>()
      const holder = yield* Effect.fork(permits.withPermit(Deferred.await(gate)))
      yield* Effect.yieldNow()
      const ran: Array<number> = []
      const fibers: Array<Fiber.RuntimeFiber<number>> = []
      for (let index = 0; index < 500; index++)
        fibers.push(yield* Effect.fork(permits.withPermit(Effect.succeed(index))))
      yield* Effect.yieldNow()
      const staying = yield* Effect.fork(permits.withPermit(record(ran, 500)))
      yield* Effect.yieldNow()
      yield* Fiber.interruptAll(fibers)
      assert.strictEqual(permits.waiting(), 1)
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(holder)
      yield* Fiber.join(staying)
      assert.deepStrictEqual(ran, [500])
      assert.strictEqual(permits.free(), 1)
    })
  )
})
