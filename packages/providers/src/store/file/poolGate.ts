/**
 * The file store's way into Node's thread pool: at most as many of its calls there at once as the pool has threads,
 * the others waiting here, and a call made while a session is being created (`creating`: the write a server's
 * acknowledgement waits for) taken before the others. Without it, a server running many sessions queues their
 * checkpoints' syncs in the pool's own first-come queue, and a session accepted meanwhile waits behind all of them
 * before its 202 (BENCHMARKS.md, "`serve` under a burst").
 */
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"

/** Whether the store's calls made under it are part of creating a session (first in line for the pool). */
export const creating: FiberRef.FiberRef<boolean> = FiberRef.unsafeMake(false)

/** Runs `effect` with its pool calls first in line: a session is being created. */
export const asCreating = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.locally(effect, creating, true)

/** A call into the pool: started with `done`, which it calls once, when the pool has answered. */
export type PoolCall = (done: () => void) => void

export interface PoolGate {
  /** Starts `call` now or once a thread is free; gives a way to withdraw it while it still waits. */
  readonly enter: (first: boolean, call: PoolCall) => () => void
}

/** A gate of `threads` places (the pool's size: `UV_THREADPOOL_SIZE`, 4 unless set). */
export const make = (threads: number): PoolGate => {
  let inPool = 0
  const firstInLine: Array<() => void> = []
  const others: Array<() => void> = []

  const next = () => {
    while (inPool < threads) {
      const start = firstInLine.shift() ?? others.shift()
      if (start === undefined) return
      start()
    }
  }

  const enter = (first: boolean, call: PoolCall) => {
    const start = () => {
      inPool++
      let answered = false
      call(() => {
        if (answered) return
        answered = true
        inPool--
        next()
      })
    }
    const line = first ? firstInLine : others
    line.push(start)
    next()
    return () => {
      const at = line.indexOf(start)
      if (at >= 0) line.splice(at, 1)
    }
  }

  return { enter }
}

const poolSize = (): number => {
  const set = Number(process.env["UV_THREADPOOL_SIZE"])
  return Number.isInteger(set) && set > 0 ? set : 4
}

/** The gate of this process's pool, shared by every file store in it. */
export const node: PoolGate = make(poolSize())
