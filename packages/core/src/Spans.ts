/**
 * Spans at a few runtime steps each, for code that runs at every request or checkpoint of every session. A span made
 * here is what `Effect.withSpan` makes (`Effect.makeSpan`: the same tracer, parent, attributes, links and kind; the
 * parent of what the effect does; ended with its exit), without the two `acquireUseRelease`s `Effect.withSpan` takes to
 * end it and to put it in the context: `Effect.withSpan` takes about 35 runtime steps a span and `Effect.fn` 38, where
 * `withSpan` and `fn` here take 19 and 22 (counted as `bench/src/Steps.ts` counts them). What they leave out is the
 * stack trace `Effect.withSpan` and `Effect.fn` capture by default for the `code.stacktrace` attribute (it would name
 * this module's lines), and `fn` does not pass a `this` on to its body.
 */
import * as Context from "effect/Context"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as FiberRef from "effect/FiberRef"
import type * as MetricLabel from "effect/MetricLabel"
import * as Tracer from "effect/Tracer"
import type { YieldWrap } from "effect/Utils"

const clockOf = (fiber: Fiber.RuntimeFiber<unknown, unknown>): Clock.Clock =>
  Context.get(fiber.currentDefaultServices, Clock.Clock)

const noTime = BigInt(0)

/**
 * Runs `effect` in a new span, timed by the fiber's clock. `onStart` sees the span and the fiber before `effect`
 * starts; `onEnd` gets the outcome, the seconds it took, the fiber's metric labels and what `onStart` returned, and
 * records what it says by plain calls (`span.attribute`, a metric's `unsafeUpdate`). All in one uninterruptible region
 * (the effect itself as interruptible as its caller wants it), with the span put in the context and taken out again by
 * two `FiberRef.set`s.
 */
export const timed = <A, E, R, S>(
  name: string,
  options: Tracer.SpanOptions,
  effect: Effect.Effect<A, E, R>,
  onStart: (span: Tracer.Span, fiber: Fiber.RuntimeFiber<unknown, unknown>) => S,
  onEnd: (
    span: Tracer.Span,
    exit: Exit.Exit<A, E>,
    seconds: number,
    labels: ReadonlyArray<MetricLabel.MetricLabel>,
    started: S
  ) => void
): Effect.Effect<A, E, R> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.flatMap(Effect.makeSpan(name, options), (span) =>
      Effect.withFiberRuntime((fiber) => {
        const context = fiber.currentContext
        const clock = clockOf(fiber)
        const started = onStart(span, fiber)
        const startedAt = clock.unsafeCurrentTimeMillis()
        const run = Effect.zipRight(
          FiberRef.set(FiberRef.currentContext, Context.add(context, Tracer.ParentSpan, span)),
          Effect.exit(restore(effect))
        )
        return Effect.flatMap(run, (exit) => {
          const seconds = (clock.unsafeCurrentTimeMillis() - startedAt) / 1_000
          onEnd(span, exit, seconds, fiber.getFiberRef(FiberRef.currentMetricLabels), started)
          if (span.status._tag !== "Ended") {
            const timing = fiber.getFiberRef(FiberRef.currentTracerTimingEnabled)
            span.end(timing ? clock.unsafeCurrentTimeNanos() : noTime, exit)
          }
          return Effect.zipRight(FiberRef.set(FiberRef.currentContext, context), exit)
        })
      })
    )
  )

const nothing = () => undefined

/** `effect` in a span named `name`, as `Effect.withSpan(name, options)` runs it (no stack trace is captured). */
export const withSpan =
  (name: string, options: Tracer.SpanOptions = {}) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    timed(name, options, effect, nothing, nothing)

/**
 * A function whose every call runs in a span named `name`, as `Effect.fn(name)` makes one: the body is a generator
 * of effects (`yield*` each), run afresh at each call.
 */
export const fn =
  (name: string, options: Tracer.SpanOptions = {}) =>
  <Eff extends YieldWrap<Effect.Effect<any, any, any>>, A, Args extends Array<any>>(
    body: (...args: Args) => Generator<Eff, A, never>
  ): ((
    ...args: Args
  ) => Effect.Effect<
    A,
    [Eff] extends [never] ? never : [Eff] extends [YieldWrap<Effect.Effect<infer _A, infer E, infer _R>>] ? E : never,
    [Eff] extends [never] ? never : [Eff] extends [YieldWrap<Effect.Effect<infer _A, infer _E, infer R>>] ? R : never
  >) => {
    const untraced = Effect.fnUntraced(body)
    const spanned = withSpan(name, options)
    return (...args) => spanned(untraced(...args))
  }
