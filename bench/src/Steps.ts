/**
 * Effect's runtime steps, counted: every instruction a fiber carries out (a `flatMap`'s continuation, a `sync`, a
 * read of the context, an async wait...), through a `Supervisor` told of each one (the `OpSupervision` runtime flag),
 * with the fibers started and the span each step ran under. Unlike the CPU, the count does not move with the machine
 * or its hour: two runs of the same sessions count within a few steps of each other, where their CPU can differ by a
 * fifth. Counting slows every step down, so a run
 * that counts does not measure its CPU.
 */
import * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import type * as Option from "effect/Option"
import * as RuntimeFlags from "effect/RuntimeFlags"
import * as RuntimeFlagsPatch from "effect/RuntimeFlagsPatch"
import * as Supervisor from "effect/Supervisor"

class Counter extends Supervisor.AbstractSupervisor<void> {
  steps = 0
  fibers = 0
  readonly bySpan = new Map<string, number>()
  override value = Effect.void

  override onStart<A, E, R>(
    _context: unknown,
    _effect: Effect.Effect<A, E, R>,
    _parent: Option.Option<Fiber.RuntimeFiber<unknown, unknown>>,
    _fiber: Fiber.RuntimeFiber<A, E>
  ): void {
    this.fibers++
  }

  override onEffect<A, E>(fiber: Fiber.RuntimeFiber<A, E>, _effect: Effect.Effect<unknown, unknown, unknown>): void {
    this.steps++
    const span = fiber.currentSpan
    const name = span === undefined ? "(no span)" : span._tag === "Span" ? span.name : "(external span)"
    this.bySpan.set(name, (this.bySpan.get(name) ?? 0) + 1)
  }

  override onEnd<A, E>(_value: Exit.Exit<A, E>, _fiber: Fiber.RuntimeFiber<A, E>): void {}
}

/** The steps and fibers of an effect's run, a unit of its work (a session) apart. */
export interface Counted {
  readonly stepsPerUnit: number
  readonly fibersPerUnit: number
  /** Steps a unit under each innermost span, the largest first. */
  readonly stepsPerUnitBySpan: Record<string, number>
}

/** A count over any number of runs: `counting` runs an effect with its steps counted, `result` divides by the units. */
export interface Steps {
  readonly counting: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  readonly result: (units: number) => Counted
}

export const make = (): Steps => {
  const counter = new Counter()
  return {
    counting: (effect) =>
      effect.pipe(
        Effect.supervised(counter),
        Effect.withRuntimeFlagsPatch(RuntimeFlagsPatch.enable(RuntimeFlags.OpSupervision))
      ),
    result: (units) => {
      const round = (n: number) => Math.round((n / units) * 10) / 10
      return {
        stepsPerUnit: round(counter.steps),
        fibersPerUnit: round(counter.fibers),
        stepsPerUnitBySpan: Object.fromEntries(
          [...counter.bySpan].sort((a, b) => b[1] - a[1]).map(([name, n]) => [name, round(n)])
        )
      }
    }
  }
}
