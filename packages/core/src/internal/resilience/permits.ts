/**
 * A fixed number of permits handed out first come, first served: a limit shared by many fibers (runs at once, calls
 * at once to one provider, one write at a time).
 *
 * Not Effect's `Semaphore`: when a permit comes back, it wakes every waiter, each tries to take it, and the ones
 * that lose wait again one frame deeper in their own stack. With hundreds waiting (a server queueing sessions) that
 * is hundreds of fiber resumptions a release and continuations that grow with every release a waiter sees, memory
 * that grows with the sessions queued (BENCHMARKS.md, "Home-made parts"). Here a returned permit goes to the waiter
 * that came first, and to no one else, and a newcomer never overtakes a waiter.
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"

/** A waiter's state: waiting in the queue, given a permit, or gone (interrupted while it waited). */
const waitingState = 0
const grantedState = 1
const goneState = 2

interface Waiter {
  state: number
  /** Set once the waiting fiber has suspended; a permit given before then is taken when it does. */
  resume: ((effect: Effect.Effect<void>) => void) | undefined
}

export interface Permits {
  /** Runs `effect` holding a permit, waiting in line for one when none is free; the permit is given back however it ends. */
  readonly withPermit: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** Permits neither held nor promised to a waiter. */
  readonly free: () => number
  /** Fibers in line for a permit. */
  readonly waiting: () => number
}

/** `permits` permits (a positive integer), all free. */
export const unsafeMake = (permits: number): Permits => {
  let free = permits
  let waiting = 0
  // A queue as an array and the index of its head; waiters that left stay as `goneState` until they reach the head.
  let line: Array<Waiter | undefined> = []
  let head = 0
  // Waiters that left and are still in the line: dropped from it at once when they outnumber those still waiting.
  let gone = 0

  const release = (): void => {
    while (head < line.length) {
      const waiter = line[head]
      line[head++] = undefined
      if (waiter !== undefined && waiter.state === goneState) gone--
      if (waiter !== undefined && waiter.state === waitingState) {
        waiter.state = grantedState
        waiting--
        compact()
        waiter.resume?.(Effect.void)
        return
      }
    }
    line = []
    head = 0
    gone = 0
    free++
  }

  const compact = () => {
    if (head > 1024 && head * 2 > line.length) {
      line = line.slice(head)
      head = 0
    }
  }

  const releaseEffect = Effect.sync(release)

  const withPermit = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.uninterruptibleMask((restore) =>
      Effect.suspend(() => {
        if (free > 0 && waiting === 0) {
          free--
          return Effect.ensuring(restore(effect), releaseEffect)
        }
        const waiter: Waiter = { state: waitingState, resume: undefined }
        line.push(waiter)
        waiting++
        const turn = Effect.async<void>((resume) => {
          if (waiter.state === grantedState) resume(Effect.void)
          else waiter.resume = resume
        })
        // Whatever ends the wait early (an interruption while in line, or just after the permit was given), what
        // the waiter holds is settled here, outside the interruptible part: its place is left, or its permit passed on.
        return Effect.flatMap(Effect.exit(restore(turn)), (exit) => {
          if (Exit.isSuccess(exit)) return Effect.ensuring(restore(effect), releaseEffect)
          if (waiter.state === grantedState) release()
          else if (waiter.state === waitingState) {
            waiter.state = goneState
            waiting--
            if (++gone > 64 && gone > waiting) {
              line = line.filter((other, at) => at >= head && other !== undefined && other.state === waitingState)
              head = 0
              gone = 0
            }
          }
          return Effect.failCause(exit.cause)
        })
      })
    )

  return { withPermit, free: () => free, waiting: () => waiting }
}

/** `permits` permits, all free. */
export const make = (permits: number): Effect.Effect<Permits> => Effect.sync(() => unsafeMake(permits))
