/**
 * One writer a session inside a process: writes to one session run one at a time, and a write that has begun is
 * finished even when its caller is interrupted. A session's writer is let go by its last user, so a long-lived
 * process keeps none for sessions it no longer writes. (The lock file keeps other processes out.)
 */
import * as Effect from "effect/Effect"

export type Serially = <A, E, R>(id: string, effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>

export const make = (): Serially => {
  const writers = new Map<string, { readonly semaphore: Effect.Semaphore; users: number }>()
  return (id, effect) =>
    Effect.suspend(() => {
      let writer = writers.get(id)
      if (writer === undefined) {
        writer = { semaphore: Effect.unsafeMakeSemaphore(1), users: 0 }
        writers.set(id, writer)
      }
      const current = writer
      current.users++
      // A caller must never take for lost a checkpoint that is already on disk (it would then save an older state
      // over it): the write is uninterruptible once it has its permit.
      return current.semaphore
        .withPermits(1)(Effect.uninterruptible(effect))
        .pipe(
          Effect.ensuring(
            Effect.sync(() => {
              current.users--
              if (current.users === 0 && writers.get(id) === current) writers.delete(id)
            })
          )
        )
    })
}
