/**
 * Files a run keeps open while it holds its session (`hold` to `release`): each opened at its first use and closed
 * when the run lets the session go, instead of being opened and closed for every write. The file store keeps a held
 * session's event log open this way (one write an append) and its folder (one sync a checkpoint). A session's file is
 * used and let go under the session's writer, never at once.
 */
import type { PlatformError } from "@effect/platform/Error"
import type * as FileSystem from "@effect/platform/FileSystem"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"

export interface HeldHandles {
  /** Keeps the session's file open from its next use on, until `release`. */
  readonly hold: (id: string) => Effect.Effect<void>
  /** Closes the session's file if `hold` kept it open. */
  readonly release: (id: string) => Effect.Effect<void>
  /** The session's file while the session is held, opened now if it is not yet; `None` when it is not held. */
  readonly get: (id: string) => Option.Option<Effect.Effect<FileSystem.File, PlatformError>>
  /** The session's file if it is held and already open. */
  readonly opened: (id: string) => FileSystem.File | undefined
  /** Syncs the session's file: the held one (opened now if it is not yet), or one opened for the sync and closed. */
  readonly sync: (id: string) => Effect.Effect<void, PlatformError>
}

/** A held session's file: opened at its first use. */
interface Held {
  open?: { readonly file: FileSystem.File; readonly scope: Scope.CloseableScope }
}

/**
 * Held files of the sessions, each opened by `open` (which closes it when its scope closes), and synced by `syncFile`
 * (the file's own sync unless the caller has a cheaper one for its descriptors).
 */
export const make = (
  open: (id: string) => Effect.Effect<FileSystem.File, PlatformError, Scope.Scope>,
  syncFile: (file: FileSystem.File) => Effect.Effect<void, PlatformError> = (file) => file.sync
): HeldHandles => {
  const held = new Map<string, Held>()

  const openNow = (id: string, entry: Held) =>
    Effect.gen(function* () {
      const scope = yield* Scope.make()
      const file = yield* open(id).pipe(
        Scope.extend(scope),
        Effect.tapError(() => Scope.close(scope, Exit.void))
      )
      entry.open = { file, scope }
      return file
    })

  const get = (id: string) => {
    const entry = held.get(id)
    if (entry === undefined) return Option.none()
    return Option.some(entry.open !== undefined ? Effect.succeed(entry.open.file) : openNow(id, entry))
  }

  const hold = (id: string) =>
    Effect.sync(() => {
      if (!held.has(id)) held.set(id, {})
    })

  const release = (id: string) =>
    Effect.suspend(() => {
      const open = held.get(id)?.open
      held.delete(id)
      return open === undefined ? Effect.void : Scope.close(open.scope, Exit.void)
    })

  const sync = (id: string) =>
    Option.match(get(id), {
      onNone: () => Effect.scoped(Effect.flatMap(open(id), syncFile)),
      onSome: (file) => Effect.flatMap(file, syncFile)
    })

  return { hold, release, get, opened: (id) => held.get(id)?.open?.file, sync }
}
