/**
 * The local corpus's index cache on disk: each file's chunks, keyed by its modification time, size and content hash,
 * with the chunk settings they were built with. A cache that cannot be read, or was built with other settings, counts
 * as empty; one that cannot be written is logged and the corpus works without it.
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as fs from "node:fs/promises"
import * as AtomicFile from "../files/AtomicFile.js"

/** Where the cache is kept (`undefined` for none), and the settings its chunks must have been built with. */
export interface CacheSettings {
  readonly cacheFile: string | undefined
  readonly chunkSize: number
  readonly chunkOverlap: number
  readonly pdf: boolean
}

const CachedChunk = Schema.Struct({ heading: Schema.String, text: Schema.String })

const CachedFile = Schema.Struct({
  mtimeMs: Schema.Number,
  size: Schema.Number,
  hash: Schema.String,
  title: Schema.String,
  chunks: Schema.Array(CachedChunk)
})
/** One file as cached: what identifies its version (time, size, content hash), its title and its chunks. */
export type CachedFile = typeof CachedFile.Type

const cacheVersion = 1

const CacheFile = Schema.Struct({
  version: Schema.Literal(cacheVersion),
  chunkSize: Schema.Number,
  chunkOverlap: Schema.Number,
  pdf: Schema.Boolean,
  files: Schema.Record({ key: Schema.String, value: CachedFile })
})
type CacheFile = typeof CacheFile.Type

const decodeCache = Schema.decodeUnknownOption(Schema.parseJson(CacheFile))
const encodeCache = Schema.encodeSync(Schema.parseJson(CacheFile))

/** The cached files by path relative to the root; none when there is no cache or it does not fit the settings. */
export const loadCache = (settings: CacheSettings): Effect.Effect<CacheFile["files"]> =>
  Effect.gen(function* () {
    if (settings.cacheFile === undefined) return {}
    const cacheFile = settings.cacheFile
    const text = yield* Effect.option(Effect.tryPromise(() => fs.readFile(cacheFile, "utf8")))
    if (text._tag === "None") return {}
    const cache = decodeCache(text.value)
    // a cache built with other chunk settings (or unreadable) is ignored and rebuilt
    if (
      cache._tag === "None" ||
      cache.value.chunkSize !== settings.chunkSize ||
      cache.value.chunkOverlap !== settings.chunkOverlap ||
      cache.value.pdf !== settings.pdf
    ) {
      return {}
    }
    return cache.value.files
  })

/** Writes the cache atomically; a failure is logged, not raised. */
export const saveCache = (settings: CacheSettings, files: ReadonlyMap<string, CachedFile>): Effect.Effect<void> => {
  const cacheFile = settings.cacheFile
  if (cacheFile === undefined) return Effect.void
  const json = encodeCache({
    version: cacheVersion,
    chunkSize: settings.chunkSize,
    chunkOverlap: settings.chunkOverlap,
    pdf: settings.pdf,
    files: Object.fromEntries(files)
  })
  return AtomicFile.writeString(cacheFile, json).pipe(
    Effect.provide(Layer.merge(NodeFileSystem.layer, NodePath.layer)),
    // The index still works without its cache (a read-only store, say); the next start just reads everything.
    Effect.catchAllCause((cause) =>
      Effect.logWarning(`Could not write the corpus index cache ${cacheFile}`, Cause.squash(cause))
    )
  )
}
