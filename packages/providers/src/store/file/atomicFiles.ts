/**
 * The file store's file operations: folders made one level at a time, durably, and readable by their owner only, files
 * replaced atomically (a synced temporary file renamed over them, then the folder synced), and a missing file as
 * `None` rather than an error. Folder syncs asked for at once are group committed (`folderSyncs.ts`).
 */
import type { PlatformError } from "@effect/platform/Error"
import type * as FileSystem from "@effect/platform/FileSystem"
import type * as Path from "@effect/platform/Path"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Random from "effect/Random"
import { isAlreadyExists, orDieWith } from "./fileErrors.js"
import * as FolderSyncs from "./folderSyncs.js"
import { fromFileSystem, type NativeFiles } from "./nativeFiles.js"

export interface AtomicFiles {
  /**
   * Makes a folder and its missing parents one level at a time, each readable by its owner only (sessions hold the
   * user's research), each made durable by a sync of its parent. Not Node's recursive mkdir, which never returns under
   * some paths (`/proc/...`).
   */
  readonly makeDirectories: (folder: string) => Effect.Effect<void, PlatformError>
  /** A file's information, or `None` when there is no such file. */
  readonly statOption: (file: string) => Effect.Effect<Option.Option<FileSystem.File.Info>>
  /**
   * Writes a temporary file next to `file` (mode 0600), syncs it, renames it over `file`, and syncs the folder, by
   * opening it or with `syncFolder` (a folder the caller keeps open). Gives the written file's information, as a
   * stat of `file` would right after.
   */
  readonly writeAtomically: (
    file: string,
    text: string,
    syncFolder?: Effect.Effect<void>
  ) => Effect.Effect<FileSystem.File.Info>
  /** `writeAtomically` for callers that report a failed write themselves. */
  readonly writeOrFail: (
    file: string,
    text: string,
    syncFolder?: Effect.Effect<void>
  ) => Effect.Effect<FileSystem.File.Info, PlatformError>
  /** A suffix no other temporary file of this process, or of another on the host, has. */
  readonly uniqueSuffix: Effect.Effect<string>
  /** Syncs a folder, one sync shared by the callers that ask at once (nothing where a folder cannot be opened). */
  readonly syncFolder: (folder: string) => Effect.Effect<void>
}

/**
 * The operations over `fs`, made with `files`: the system's own calls for the same paths when the caller has them
 * (Node's, for the store's hot paths), the platform's otherwise.
 */
export const make = (
  fs: FileSystem.FileSystem,
  path: Path.Path,
  pid: number,
  files: NativeFiles = fromFileSystem(fs)
): AtomicFiles => {
  let counter = 0

  const uniqueSuffix = Effect.map(Random.nextIntBetween(0, 0x7fffffff), (random) => {
    counter++
    return `${pid}-${counter}-${random.toString(36)}`
  })

  const syncFolder = FolderSyncs.make(files.syncFolder)

  const makeDirectories = (folder: string): Effect.Effect<void, PlatformError> =>
    Effect.flatMap(Effect.option(files.stat(folder)), (stat) => {
      if (Option.isSome(stat) && Option.isSome(stat.value)) return Effect.void
      const parent = path.dirname(folder)
      return Effect.zipRight(
        parent === folder ? Effect.void : makeDirectories(parent),
        files.makeDirectory(folder, 0o700).pipe(
          // A new folder survives a crash only once its parent is synced.
          Effect.zipRight(syncFolder(parent)),
          Effect.catchIf(isAlreadyExists, () => Effect.void)
        )
      )
    })

  const statOption = (file: string) => orDieWith(`cannot stat ${file}`)(files.stat(file))

  const writeOrFail = (file: string, text: string, syncTheFolder = syncFolder(path.dirname(file))) =>
    Effect.gen(function* () {
      const temporary = `${file}.tmp-${yield* uniqueSuffix}`
      const info = yield* Effect.zipLeft(files.writeNew(temporary, text), files.rename(temporary, file)).pipe(
        Effect.tapError(() => Effect.ignore(files.remove(temporary)))
      )
      // The rename is durable only once the folder itself is synced.
      yield* syncTheFolder
      return info
    })

  const writeAtomically = (file: string, text: string, syncTheFolder?: Effect.Effect<void>) =>
    writeOrFail(file, text, syncTheFolder).pipe(orDieWith(`cannot write ${file}`))

  return { makeDirectories, statOption, writeAtomically, writeOrFail, uniqueSuffix, syncFolder }
}
