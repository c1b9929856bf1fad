import { assert, describe, it } from "@effect/vitest"
import { Cause, Deferred, Effect, Exit, Fiber, Option, Tracer } from "effect"
import * as Spans from "../src/Spans.js"

/** The span the effect runs in, which must be one of Effect's own (the native tracer's). */
const currentSpan = Effect.flatMap(Effect.currentSpan, (span) => Effect.succeed(span)).pipe(Effect.orDie)

const parentIdOf = (span: Tracer.Span): string | undefined =>
  Option.getOrUndefined(Option.map(span.parent, (parent) => parent.spanId))

describe("Spans.withSpan", () => {
  it.effect("runs the effect in a span of that name, kind and attributes, under the caller's span", () =>
    Effect.gen(function* () {
      const outer = yield* currentSpan
      const inner = yield* currentSpan.pipe(
        Spans.withSpan("inner work", { kind: "client", attributes: { "deep_research.test": 7 } })
      )
      assert.strictEqual(inner.name, "inner work")
      assert.strictEqual(inner.kind, "client")
      assert.strictEqual(inner.attributes.get("deep_research.test"), 7)
      assert.strictEqual(parentIdOf(inner), outer.spanId)
      assert.strictEqual(inner.traceId, outer.traceId)
      // The caller's span is the current one again afterwards.
      assert.strictEqual((yield* currentSpan).spanId, outer.spanId)
    }).pipe(Effect.withSpan("outer"))
  )

  it.effect("is the parent of the spans made inside it, Effect's own included", () =>
    Effect.gen(function* () {
      const [mine, nested] = yield* Effect.zip(currentSpan, currentSpan.pipe(Effect.withSpan("nested"))).pipe(
        Spans.withSpan("mine")
      )
      assert.strictEqual(parentIdOf(nested), mine.spanId)
    })
  )

  it.effect("ends the span with the effect's exit, on success and on failure, and gives the caller back its span", () =>
    Effect.gen(function* () {
      const outer = yield* currentSpan
      const succeeded = yield* currentSpan.pipe(Spans.withSpan("fine"))
      assert.strictEqual(succeeded.status._tag, "Ended")
      if (succeeded.status._tag === "Ended") assert.isTrue(Exit.isSuccess(succeeded.status.exit))

      let failed: Tracer.Span | undefined
      const error = yield* Effect.flip(
        Effect.flatMap(currentSpan, (span) => {
          failed = span
          return Effect.fail("broken" as const)
        }).pipe(Spans.withSpan("failing"))
      )
      assert.strictEqual(error, "broken")
      assert.strictEqual(failed?.status._tag, "Ended")
      if (failed?.status._tag === "Ended") {
        assert.deepStrictEqual(
          Cause.failureOption(Exit.isFailure(failed.status.exit) ? failed.status.exit.cause : Cause.empty),
          Option.some("broken")
        )
      }
      assert.strictEqual((yield* currentSpan).spanId, outer.spanId)
    }).pipe(Effect.withSpan("outer"))
  )

  it.effect("ends the span of an effect that is interrupted while it runs", () =>
    Effect.gen(function* () {
      const started = yield* Deferred.make<Tracer.Span>()
      const fiber = yield* Effect.fork(
        Effect.flatMap(currentSpan, (span) => Effect.zipRight(Deferred.succeed(started, span), Effect.never)).pipe(
          Spans.withSpan("waiting")
        )
      )
      const span = yield* Deferred.await(started)
      assert.strictEqual(span.status._tag, "Started")
      yield* Fiber.interrupt(fiber)
      assert.strictEqual(span.status._tag, "Ended")
      if (span.status._tag === "Ended") assert.isTrue(Exit.isInterrupted(span.status.exit))
    })
  )
})

describe("Spans.fn", () => {
  it.effect("makes a function whose every call runs its body afresh in a span of its own", () =>
    Effect.gen(function* () {
      let runs = 0
      const add = Spans.fn("Adder.add", { attributes: { "deep_research.test": "adder" } })(function* (
        a: number,
        b: number
      ) {
        runs++
        const span = yield* currentSpan
        return { sum: a + b, span }
      })
      const first = yield* add(1, 2)
      const second = yield* add(3, 4)
      assert.strictEqual(first.sum, 3)
      assert.strictEqual(second.sum, 7)
      assert.strictEqual(runs, 2)
      assert.strictEqual(first.span.name, "Adder.add")
      assert.strictEqual(first.span.attributes.get("deep_research.test"), "adder")
      assert.notStrictEqual(first.span.spanId, second.span.spanId)
      assert.strictEqual(first.span.status._tag, "Ended")
    })
  )

  it.effect("fails as its body fails", () =>
    Effect.gen(function* () {
      const refuse = Spans.fn("Refuser.refuse")(function* (reason: string) {
        return yield* Effect.fail(reason)
      })
      assert.strictEqual(yield* Effect.flip(refuse("no")), "no")
    })
  )
})
