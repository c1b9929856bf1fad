import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Either, Fiber, Layer, Queue, TestClock } from "effect"
import * as Pipeline from "../src/Pipeline.js"
import * as ResearchEvents from "../src/ResearchEvents.js"
import * as SessionLimit from "../src/SessionLimit.js"
import { SessionStore } from "../src/SessionStore.js"
import * as H from "./pipelineHarness.js"

/** A run that marks its start (and signals it, when given a signal), then waits until it is let go. */
const gatedRun = (
  started: Array<number>,
  index: number,
  gate: Deferred.Deferred<void>,
  signal?: Deferred.Deferred<void>
) =>
  Effect.zipRight(
    Effect.sync(() => started.push(index)),
    Effect.zipRight(signal === undefined ? Effect.void : Deferred.succeed(signal, undefined), Deferred.await(gate))
  )

const at = <A>(items: ReadonlyArray<A>, index: number): A => {
  const item = items[index]
  if (item === undefined) throw new Error(`no item at ${index}`)
  return item
}

describe("SessionLimit", () => {
  it.effect("anything but a positive integer is ResearchInvalidInput", () =>
    Effect.gen(function* () {
      for (const bad of [0, -1, 1.5, Number.NaN]) {
        const error = yield* Effect.flip(SessionLimit.make(bad))
        assert.strictEqual(error._tag, "ResearchInvalidInput")
        assert.include(error.message, "maxConcurrentSessions")
      }
    })
  )

  it.effect("runs beyond the limit wait, and start in the order they came as slots free up", () =>
    Effect.gen(function* () {
      const limit = yield* SessionLimit.make(2)
      const started: Array<number> = []
      const gates = yield* Effect.forEach([0, 1, 2, 3, 4], () => Deferred.make<void>())
      const signals = yield* Effect.forEach([0, 1, 2, 3, 4], () => Deferred.make<void>())
      const fibers: Array<Fiber.RuntimeFiber<void>> = []
      for (const [index, gate] of gates.entries()) {
        fibers.push(yield* Effect.fork(limit.withSlot(gatedRun(started, index, gate, at(signals, index)))))
        yield* Effect.yieldNow()
      }
      assert.deepStrictEqual(started, [0, 1])
      assert.strictEqual(yield* limit.running, 2)
      assert.strictEqual(yield* limit.waiting, 3)
      assert.isTrue(yield* limit.wouldWait)
      yield* Deferred.succeed(at(gates, 1), undefined)
      yield* Fiber.join(at(fibers, 1))
      yield* Deferred.await(at(signals, 2))
      assert.deepStrictEqual(started, [0, 1, 2])
      assert.strictEqual(yield* limit.running, 2)
      assert.strictEqual(yield* limit.waiting, 2)
      for (const gate of gates) yield* Deferred.succeed(gate, undefined)
      yield* Fiber.joinAll(fibers)
      assert.deepStrictEqual(started, [0, 1, 2, 3, 4])
      assert.strictEqual(yield* limit.running, 0)
      assert.strictEqual(yield* limit.waiting, 0)
      assert.isFalse(yield* limit.wouldWait)
    })
  )

  it.effect("a failed or interrupted run gives its slot back, and a waiting run can be interrupted", () =>
    Effect.gen(function* () {
      const limit = yield* SessionLimit.make(1)
      const failed = yield* Effect.either(limit.withSlot(Effect.fail("boom")))
      assert.isTrue(failed._tag === "Left")
      const started: Array<number> = []
      const gate = yield* Deferred.make<void>()
      const holder = yield* Effect.fork(limit.withSlot(gatedRun(started, 0, gate)))
      yield* Effect.yieldNow()
      const waiter = yield* Effect.fork(limit.withSlot(gatedRun(started, 1, gate)))
      yield* Effect.yieldNow()
      assert.strictEqual(yield* limit.waiting, 1)
      yield* Fiber.interrupt(waiter)
      assert.strictEqual(yield* limit.waiting, 0)
      yield* Fiber.interrupt(holder)
      assert.strictEqual(yield* limit.running, 0)
      const after = yield* limit.withSlot(Effect.succeed("ran"))
      assert.strictEqual(after, "ran")
      assert.deepStrictEqual(started, [0])
    })
  )

  it.effect("Pipeline.research waits for a slot before it creates its session", () =>
    Effect.gen(function* () {
      const events = yield* ResearchEvents.ResearchEvents
      const queue = yield* events.subscribe
      const store = yield* SessionStore
      const first = yield* Effect.fork(Pipeline.research("What are the latest measurements?", { sessionId: "first" }))
      const second = yield* Effect.fork(Pipeline.research("What are the latest measurements?", { sessionId: "second" }))
      const [a, b] = yield* Fiber.joinAll([first, second])
      assert.strictEqual(a.status, "completed")
      assert.strictEqual(b.status, "completed")
      const order = (yield* Queue.takeAll(queue)).pipe((chunk) => [...chunk])
      const firstDone = order.findIndex((e) => e.sessionId === "first" && e._tag === "SessionCompleted")
      const secondStarted = order.findIndex((e) => e.sessionId === "second" && e._tag === "SessionStarted")
      assert.isAbove(firstDone, -1)
      assert.isAbove(secondStarted, firstDone, "the second run started only after the first had completed")
      assert.strictEqual((yield* store.load("second")).status, "completed")
    }).pipe(Effect.scoped, Effect.provide(Layer.merge(H.world({}), Layer.orDie(SessionLimit.layer(1)))))
  )

  it.effect("a run stopped while it waits for a slot stores its session cancelled, to be resumed later", () =>
    Effect.gen(function* () {
      const store = yield* SessionStore
      yield* TestClock.setTime(5_000)
      const gate = yield* Deferred.make<void>()
      // The first run holds the only slot until the gate opens.
      const holder = yield* Effect.fork(SessionLimit.withSlot(Deferred.await(gate)).pipe(Effect.zipRight(Effect.never)))
      yield* Effect.yieldNow()
      const waiting = yield* Effect.fork(
        Pipeline.research("What are the latest measurements?", { sessionId: "waited", createdAt: 1_000 })
      )
      yield* Effect.yieldNow()
      assert.isTrue(Either.isLeft(yield* Effect.either(store.load("waited"))), "nothing is stored while it waits")
      yield* Fiber.interrupt(waiting)
      const cancelled = yield* store.load("waited")
      assert.strictEqual(cancelled.status, "cancelled")
      assert.strictEqual(cancelled.query, "What are the latest measurements?")
      assert.strictEqual(cancelled.createdAt, 1_000)
      assert.deepStrictEqual(
        (yield* store.events("waited")).map((event) => event._tag),
        ["SessionCancelled"]
      )
      yield* Fiber.interrupt(holder)
      const resumed = yield* Pipeline.resume("waited")
      assert.strictEqual(resumed.status, "completed")
    }).pipe(Effect.scoped, Effect.provide(Layer.merge(H.world({}), Layer.orDie(SessionLimit.layer(1)))))
  )

  it.effect("an enqueued session is stored queued at once, begun by resume once a slot is free, as a new one is", () =>
    Effect.gen(function* () {
      const store = yield* SessionStore
      const events = yield* ResearchEvents.ResearchEvents
      const queue = yield* events.subscribe
      const gate = yield* Deferred.make<void>()
      const holder = yield* Effect.fork(SessionLimit.withSlot(Deferred.await(gate)))
      yield* Effect.yieldNow()
      const queued = yield* Pipeline.enqueue("What are the latest measurements?", {
        sessionId: "acknowledged",
        config: { maxSupervisionRounds: 2 }
      })
      assert.strictEqual(queued.status, "queued")
      const kept = yield* store.load("acknowledged")
      assert.strictEqual(kept.status, "queued")
      assert.strictEqual(kept.query, "What are the latest measurements?")
      assert.strictEqual(kept.config.maxSupervisionRounds, 2)
      assert.deepStrictEqual(
        (yield* store.list).map((summary) => [summary.id, summary.status]),
        [["acknowledged", "queued"]]
      )
      const run = yield* Effect.fork(Pipeline.resume("acknowledged", { clarification: "proceed" }))
      yield* Effect.yieldNow()
      assert.strictEqual((yield* store.load("acknowledged")).status, "queued", "still queued while it waits")
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(holder)
      const done = yield* Fiber.join(run)
      assert.strictEqual(done.status, "completed")
      const tags = [...(yield* Queue.takeAll(queue))].filter((e) => e.sessionId === "acknowledged").map((e) => e._tag)
      assert.strictEqual(tags[0], "SessionStarted")
      assert.strictEqual(tags.at(-1), "SessionCompleted")
      const again = yield* Effect.flip(Pipeline.enqueue("Another question", { sessionId: "acknowledged" }))
      assert.strictEqual(again._tag, "ResearchInvalidInput")
    }).pipe(Effect.scoped, Effect.provide(Layer.merge(H.world({}), Layer.orDie(SessionLimit.layer(1)))))
  )

  it.effect("storing a session queued stamps it as any status change does: updatedAt is when it was stored", () =>
    Effect.gen(function* () {
      const store = yield* SessionStore
      yield* TestClock.setTime(5_000)
      yield* Pipeline.enqueue("What are the latest measurements?", { sessionId: "stamped", createdAt: 1_000 })
      const queued = yield* store.load("stamped")
      assert.deepStrictEqual([queued.status, queued.createdAt, queued.updatedAt], ["queued", 1_000, 5_000])
      yield* TestClock.setTime(9_000)
      const run = yield* Effect.fork(Pipeline.resume("stamped", { clarification: "proceed" }))
      // Begun, the session is stored running, stamped again; its research then runs on.
      while ((yield* store.load("stamped")).status === "queued") yield* Effect.yieldNow()
      const begun = yield* store.load("stamped")
      assert.include(["running", "completed"], begun.status)
      assert.isAtLeast(begun.updatedAt, 9_000)
      yield* Fiber.interrupt(run)
    }).pipe(Effect.provide(H.world({})))
  )

  it.effect("an enqueued session stopped while it waits for a slot is kept cancelled, and resumes later", () =>
    Effect.gen(function* () {
      const store = yield* SessionStore
      const gate = yield* Deferred.make<void>()
      const holder = yield* Effect.fork(SessionLimit.withSlot(Deferred.await(gate)).pipe(Effect.zipRight(Effect.never)))
      yield* Effect.yieldNow()
      yield* Pipeline.enqueue("What are the latest measurements?", { sessionId: "waited" })
      const waiting = yield* Effect.fork(Pipeline.resume("waited"))
      yield* Effect.yieldNow()
      yield* Fiber.interrupt(waiting)
      assert.strictEqual((yield* store.load("waited")).status, "cancelled")
      assert.deepStrictEqual(
        (yield* store.events("waited")).map((event) => event._tag),
        ["SessionCancelled"]
      )
      yield* Fiber.interrupt(holder)
      assert.strictEqual((yield* Pipeline.resume("waited")).status, "completed")
    }).pipe(Effect.scoped, Effect.provide(Layer.merge(H.world({}), Layer.orDie(SessionLimit.layer(1)))))
  )

  it.effect("recordCancelled marks a session stored queued cancelled, one whose run never got to wait", () =>
    Effect.gen(function* () {
      const store = yield* SessionStore
      yield* Pipeline.enqueue("What are the latest measurements?", { sessionId: "never-waited" })
      yield* Pipeline.recordCancelled("What are the latest measurements?", { sessionId: "never-waited" })
      assert.strictEqual((yield* store.load("never-waited")).status, "cancelled")
      assert.deepStrictEqual(
        (yield* store.events("never-waited")).map((event) => event._tag),
        ["SessionCancelled"]
      )
    }).pipe(Effect.provide(H.world({})))
  )
})
