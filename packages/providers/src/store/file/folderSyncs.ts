/**
 * Group commit of the store's folder syncs: the callers that ask for a sync of the same folder while one of it waits
 * to start share that one. A caller that asks while a sync of the folder runs waits for the next one, never joining
 * the running one, which may have begun before the caller's change (a new session's folder made in the sessions
 * folder, a file renamed into a session's folder). Sessions accepted at the same moment are so made durable by one
 * sync of the sessions folder between them, instead of one each; each caller still returns only once a sync begun
 * after its change has ended.
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"

/** A folder's syncs: the one running, and the one its newer callers wait for. */
interface Folder {
  running: boolean
  next: Deferred.Deferred<void> | undefined
}

/** Syncs folders with `sync`, a sync shared by the callers of a folder that ask at once. */
export const make = (sync: (folder: string) => Effect.Effect<void>): ((folder: string) => Effect.Effect<void>) => {
  const folders = new Map<string, Folder>()

  /** Runs the folder's waiting sync, then the one asked for meanwhile, if any; forgets the folder once idle. */
  const runNext = (path: string, folder: Folder): Effect.Effect<void> =>
    Effect.suspend(() => {
      const waiting = folder.next
      if (waiting === undefined) {
        folder.running = false
        folders.delete(path)
        return Effect.void
      }
      folder.next = undefined
      folder.running = true
      return sync(path).pipe(
        Effect.exit,
        Effect.flatMap((exit) => Deferred.done(waiting, exit)),
        Effect.zipRight(runNext(path, folder))
      )
    })

  return (path) =>
    Effect.gen(function* () {
      let folder = folders.get(path)
      if (folder === undefined) {
        folder = { running: false, next: undefined }
        folders.set(path, folder)
      }
      const waiting = folder.next ?? (yield* Deferred.make<void>())
      folder.next = waiting
      // The first caller of an idle folder starts its syncs, in a fiber of its own (a caller that gives up waiting
      // leaves the others theirs), after a yield that lets the callers of the same moment join.
      if (!folder.running) {
        folder.running = true
        yield* Effect.forkDaemon(Effect.zipRight(Effect.yieldNow(), runNext(path, folder)))
      }
      yield* Deferred.await(waiting)
    })
}
