/**
 * The file store's locking and deleting: a run's hold on a session (its lock file, its event log and folder held open
 * while it runs, what stopped processes left in the folder swept) and a session's deletion, which takes the lock first.
 */
import { Errors } from "@deep-research/core"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { orDieWith } from "./fileErrors.js"
import {
  ensureDirectory,
  fileOf,
  forgetFiles,
  lockFileName,
  mustExist,
  sessionDirectory,
  settled,
  type Store,
  validate
} from "./fileStore.js"
import * as LockFile from "./lockFile.js"

/**
 * What a run letting the session go does: its whole event log left on the disk and closed, and what the store knew of
 * the session's files forgotten (another process may write them next).
 */
const letGo = (store: Store, id: string) =>
  store.serially(
    id,
    Effect.zipRight(
      Effect.ensuring(Effect.ensuring(store.eventLog.sync(id), store.eventLog.release(id)), store.folders.release(id)),
      forgetFiles(store, id)
    )
  )

export const lock = (store: Store) =>
  Effect.fn("FileSessionStore.lock")(function* (id: string) {
    const valid = yield* validate(id)
    yield* settled(store, valid)
    yield* ensureDirectory(store, valid)
    const file = fileOf(store, valid, lockFileName)
    const holder: LockFile.LockHolder = {
      pid: store.host.pid,
      hostname: store.host.hostname,
      startedAt: new Date(yield* Clock.currentTimeMillis).toISOString(),
      token: yield* store.atomic.uniqueSuffix
    }
    const busy = (description: string) => new Errors.SessionBusy({ sessionId: valid, holder: description })
    const acquire = store.lockFiles.acquire(file, holder, busy)
    // Registered before the lock exists, so that no fiber of this process ever sees it as an earlier process's.
    const forget = LockFile.forget(holder.token)
    yield* LockFile.register(holder.token)
    yield* Effect.acquireRelease(
      Effect.onError(acquire, () => forget),
      () => Effect.ensuring(Effect.zipRight(letGo(store, valid), store.lockFiles.release(file, holder.token)), forget)
    )
    // What stopped processes left aside in the folder goes, now that no other run can be writing it.
    yield* store.leftovers.sweep(valid)
    // While the run holds the session, its event log stays open for appending, and its folder for syncing.
    yield* store.eventLog.hold(valid)
    yield* store.folders.hold(valid)
  })

export const remove = (store: Store) => {
  const lockSession = lock(store)
  return Effect.fn("FileSessionStore.delete")(function* (id: string) {
    const valid = yield* validate(id)
    const folder = sessionDirectory(store, valid)
    yield* settled(store, valid)
    yield* mustExist(store, valid)
    // Taking the lock first keeps a live run's folder from vanishing under it.
    yield* Effect.scoped(
      Effect.zipRight(
        lockSession(valid),
        store.serially(
          valid,
          // The deletion is recorded for the intake journals first: a replay of one must not make the session again.
          Effect.zipRight(
            store.intake?.forget(valid) ?? Effect.void,
            Effect.zipRight(
              orDieWith(`cannot delete ${folder}`)(store.fs.remove(folder, { recursive: true })),
              forgetFiles(store, valid)
            )
          )
        )
      )
    )
  })
}
