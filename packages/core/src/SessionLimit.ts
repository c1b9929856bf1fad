/**
 * How many research runs one process runs at once. A process hosting many sessions (a server, the MCP server, a
 * benchmark) puts a `SessionLimit` in context: `Pipeline.research` and `Pipeline.resume` then wait for a free slot
 * before they lock, create or load their session, first come first served, and give the slot back when the run ends
 * however it ends. Without one in context every run starts at once.
 *
 * One event loop runs only so many sessions at full speed: past that point every run slows down, the process's
 * timers and sockets wait their turn behind the others' CPU work, and memory grows with the runs in flight. Queuing
 * the runs beyond the limit keeps each admitted run as fast as alone and the process responsive (BENCHMARKS.md,
 * "Many sessions in one process", measures where that point lies).
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { ResearchInvalidInput } from "./Errors.js"
import * as Permits from "./internal/resilience/permits.js"

/** The limit's handle. */
export interface Service {
  /** At most this many runs at once. */
  readonly maxConcurrentSessions: number
  /** Runs `run` once a slot is free; the slot is given back when it ends, interrupted or not. */
  readonly withSlot: <A, E, R>(run: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** Runs holding a slot now. */
  readonly running: Effect.Effect<number>
  /** Runs waiting for a slot now. */
  readonly waiting: Effect.Effect<number>
  /** Whether a run started now would wait: every slot is taken, or others wait already. */
  readonly wouldWait: Effect.Effect<boolean>
}

/** A limit of `maxConcurrentSessions` runs at once; anything but a positive integer is `ResearchInvalidInput`. */
const slots = (maxConcurrentSessions: number): Effect.Effect<Service, ResearchInvalidInput> =>
  Effect.gen(function* () {
    if (!Number.isInteger(maxConcurrentSessions) || maxConcurrentSessions < 1) {
      return yield* new ResearchInvalidInput({
        reason: `maxConcurrentSessions must be a positive integer, not ${maxConcurrentSessions}`
      })
    }
    const permits = yield* Permits.make(maxConcurrentSessions)
    let running = 0
    const withSlot = <A, E, R>(run: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
      permits.withPermit(
        // Counted and uncounted in one uninterruptible step each, so an interruption cannot come between the two.
        Effect.uninterruptibleMask((restore) =>
          Effect.suspend(() => {
            running++
            return Effect.ensuring(
              restore(run),
              Effect.sync(() => running--)
            )
          })
        )
      )
    return {
      maxConcurrentSessions,
      withSlot,
      running: Effect.sync(() => running),
      waiting: Effect.sync(() => permits.waiting()),
      wouldWait: Effect.sync(() => permits.free() === 0 || permits.waiting() > 0)
    }
  })

/**
 * The limit in context, used by `Pipeline.research` and `Pipeline.resume` when present:
 * `SessionLimit.Default(maxConcurrentSessions)`.
 */
export class SessionLimit extends Effect.Service<SessionLimit>()("@deep-research/core/SessionLimit", {
  effect: slots
}) {}

/** A limit of `maxConcurrentSessions` runs at once; anything but a positive integer is `ResearchInvalidInput`. */
export const make = (maxConcurrentSessions: number): Effect.Effect<SessionLimit, ResearchInvalidInput> =>
  Effect.map(slots(maxConcurrentSessions), SessionLimit.make)

/** A limit of `maxConcurrentSessions` runs at once, as the `SessionLimit` in context. */
export const layer = (maxConcurrentSessions: number): Layer.Layer<SessionLimit, ResearchInvalidInput> =>
  SessionLimit.Default(maxConcurrentSessions)

/** Runs `run` in a slot of the `SessionLimit` in context, or at once when there is none. */
export const withSlot = <A, E, R>(run: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(Effect.serviceOption(SessionLimit), (limit) =>
    Option.isSome(limit) ? limit.value.withSlot(run) : run
  )
