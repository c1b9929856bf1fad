/**
 * A file replaced whole or not at all: written to a temporary file beside it (readable by its owner only), synced,
 * then renamed over it, so that a crash leaves the old file or the new one, never a part. For the files the
 * providers keep outside the session store (a corpus's index, a benchmark's results), which can be made again.
 */
import type { PlatformError } from "@effect/platform/Error"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import * as Effect from "effect/Effect"
import { randomUUID } from "node:crypto"

/** Replaces `file` with `text` atomically, making its folder if need be. */
export const writeString = (
  file: string,
  text: string
): Effect.Effect<void, PlatformError, FileSystem.FileSystem | Path.Path> =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    // The folder is its owner's only: what it holds comes from the user's own documents.
    yield* fs.makeDirectory(path.dirname(file), { recursive: true, mode: 0o700 })
    const temporary = `${file}.tmp-${process.pid}-${randomUUID().slice(0, 8)}`
    yield* Effect.scoped(
      Effect.gen(function* () {
        const handle = yield* fs.open(temporary, { flag: "w", mode: 0o600 })
        const bytes = new TextEncoder().encode(text)
        if (bytes.length > 0) yield* handle.writeAll(bytes)
        yield* handle.sync
      })
    ).pipe(
      Effect.zipRight(fs.rename(temporary, file)),
      Effect.tapError(() => Effect.ignore(fs.remove(temporary)))
    )
  })
