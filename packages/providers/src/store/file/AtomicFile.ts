/**
 * Files written the way the file store writes its own: to a temporary file of the owner's only (mode 0600), synced,
 * renamed over the file, and the folder synced, so that a crash leaves the old file or the new one, never a part.
 */
import type { PlatformError } from "@effect/platform/Error"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import * as Effect from "effect/Effect"
import * as AtomicFiles from "./atomicFiles.js"

/** Replaces `file` with `text` atomically. */
export const writeString = (
  file: string,
  text: string
): Effect.Effect<void, PlatformError, FileSystem.FileSystem | Path.Path> =>
  Effect.flatMap(Effect.all([FileSystem.FileSystem, Path.Path]), ([fs, path]) =>
    AtomicFiles.make(fs, path, process.pid).writeOrFail(file, text)
  )
