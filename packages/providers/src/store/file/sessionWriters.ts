/**
 * One writer a session inside a process: writes to one session run one at a time, and a write that has begun is
 * finished even when its caller is interrupted. A session's writer is let go by its last user, so a long-lived
 * process keeps none for sessions it no longer writes. (The lock file keeps other processes out.)
 *
 * Not an `Effect.Semaphore` a session: a writer is made on a session's first write and let go by its last user, which
 * a registry of semaphores would have to do beside them. Waiting is as a semaphore's: interruptible, and each waiter
 * tries again when the writer is let go.
 */
import * as Effect from "effect/Effect"

/** Runs an effect while holding the session's writer. */
export type Serially = <A, E, R>(id: string, effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>

/** The writers of a store's sessions. */
export interface SessionWriters extends Serially {
  /** Whether a write of the session runs, or waits for its turn, now. */
  readonly busy: (id: string) => boolean
}

interface Writer {
  held: boolean
  /** Wakes a caller waiting for its turn. */
  readonly waiting: Set<() => void>
}

export const make = (): SessionWriters => {
  const writers = new Map<string, Writer>()

  const forgetIfUnused = (id: string, writer: Writer) => {
    if (!writer.held && writer.waiting.size === 0 && writers.get(id) === writer) writers.delete(id)
  }

  /** Interruptible: a caller interrupted while it waits leaves nothing behind. */
  const turnOf = (id: string, writer: Writer) =>
    Effect.async<void>((resume) => {
      const wake = () => {
        writer.waiting.delete(wake)
        resume(Effect.void)
      }
      writer.waiting.add(wake)
      return Effect.sync(() => {
        writer.waiting.delete(wake)
        forgetIfUnused(id, writer)
      })
    })

  const letGo = (id: string, writer: Writer) => {
    writer.held = false
    if (writer.waiting.size === 0) {
      forgetIfUnused(id, writer)
      return
    }
    // Every waiter tries again, in the order they came: the first takes the writer, the others wait again.
    for (const wake of [...writer.waiting]) wake()
  }

  const serially: Serially = (id, effect) =>
    Effect.uninterruptibleMask((restore) => {
      const take: Effect.Effect<Writer> = Effect.suspend(() => {
        let writer = writers.get(id)
        if (writer === undefined) {
          writer = { held: false, waiting: new Set() }
          writers.set(id, writer)
        }
        if (!writer.held) {
          writer.held = true
          return Effect.succeed(writer)
        }
        return Effect.zipRight(restore(turnOf(id, writer)), take)
      })
      // A caller must never take for lost a checkpoint that is already on disk (it would then save an older state
      // over it): the write is uninterruptible once it holds the writer.
      return Effect.flatMap(take, (writer) =>
        Effect.flatMap(Effect.exit(effect), (exit) => {
          letGo(id, writer)
          return exit
        })
      )
    })

  const busy = (id: string) => {
    const writer = writers.get(id)
    return writer !== undefined && (writer.held || writer.waiting.size > 0)
  }

  return Object.assign(serially, { busy })
}
