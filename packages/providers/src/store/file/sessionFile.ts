/**
 * A session's `session.json` as the file store reads it, and what it does with one it cannot read: the file's text
 * decoded (any stored version, migrated), a missing file told apart from a corrupt one, and a corrupt one moved
 * aside under a name that says when, never overwritten.
 */
import { Errors, Session } from "@deep-research/core"
import type * as FileSystem from "@effect/platform/FileSystem"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import { isNotFound, orDieWith } from "./fileErrors.js"
import { decodeStored, versionOf } from "../sessionMigrations.js"

/** A session as read from its file, with the version it was stored in. */
export interface Read {
  readonly session: Session.Session
  readonly version: number
}

/** Decodes a session file's text; a failure says why the file is corrupt, in words a user can act on. */
export const decodeText = (id: string, file: string, text: string): Effect.Effect<Read, Errors.SessionCorrupt> =>
  Effect.gen(function* () {
    const corrupt = (reason: string) => new Errors.SessionCorrupt({ sessionId: id, path: file, reason })
    const json = yield* Effect.try({
      try: (): unknown => JSON.parse(text),
      catch: (error) =>
        corrupt(
          text.trim().length === 0
            ? "the file is empty"
            : `not valid JSON, probably truncated (${error instanceof Error ? error.message : String(error)})`
        )
    })
    const session = yield* Effect.mapError(decodeStored(json), (error) => corrupt(error.reason))
    if (session.id !== id) return yield* corrupt(`the file holds session ${session.id}`)
    return { session, version: versionOf(json) ?? Session.currentVersion }
  })

/**
 * Reads and decodes a session's file: `SessionNotFound` when there is none, `SessionCorrupt` when what it holds is
 * unusable. A file the system will not let this process read (permissions) is not corrupt: that ends the call with the
 * system's reason, as the store's other system failures do, and the file is left as it is.
 */
export const read = (
  fs: FileSystem.FileSystem,
  id: string,
  file: string
): Effect.Effect<Read, Errors.SessionNotFound | Errors.SessionCorrupt> =>
  fs.readFileString(file).pipe(
    Effect.catchIf(isNotFound, () => new Errors.SessionNotFound({ sessionId: id })),
    Effect.catchTag("BadArgument", (error) =>
      Effect.fail(new Errors.SessionCorrupt({ sessionId: id, path: file, reason: error.message }))
    ),
    Effect.catchTag("SystemError", (error) =>
      error.reason === "PermissionDenied"
        ? orDieWith(`cannot read ${file}`)(Effect.fail(error))
        : Effect.fail(new Errors.SessionCorrupt({ sessionId: id, path: file, reason: error.message }))
    ),
    Effect.flatMap((text) => decodeText(id, file, text))
  )

const timestampForFileName = (millis: number): string => new Date(millis).toISOString().replace(/[:.]/g, "-")

/**
 * Moves a corrupt file aside (`<file>.corrupt-<when>-<suffix>`) so that nothing overwrites it, and says so in the
 * log. Returns where it went.
 */
export const moveAside = (
  fs: FileSystem.FileSystem,
  corrupt: Errors.SessionCorrupt,
  uniqueSuffix: Effect.Effect<string>
): Effect.Effect<string> =>
  Effect.gen(function* () {
    const file = corrupt.path
    const aside = `${file}.corrupt-${timestampForFileName(yield* Clock.currentTimeMillis)}-${yield* uniqueSuffix}`
    yield* orDieWith(`cannot move the corrupt ${file} aside`)(fs.rename(file, aside))
    yield* Effect.logWarning(
      `FileSessionStore: ${file} was corrupt (${corrupt.reason}); it was moved to ${aside} and not overwritten`
    )
    return aside
  })

// =============================================================================
// The files a store knows
// =============================================================================

/** How the store last saw a session file: enough to notice that something else replaced it. */
interface Stamp {
  readonly identity: string
  readonly version: number
}

const identityOf = (info: FileSystem.File.Info): string =>
  `${Option.getOrElse(info.ino, () => -1)}:${info.size}:${Option.match(info.mtime, {
    onNone: () => -1,
    onSome: (date) => date.getTime()
  })}`

/** What `known` needs of its store. */
export interface Files {
  readonly fs: FileSystem.FileSystem
  readonly statOption: (file: string) => Effect.Effect<Option.Option<FileSystem.File.Info>>
  readonly uniqueSuffix: Effect.Effect<string>
}

/**
 * The session files a store has read or written, as it last saw them. A file it did not write or read itself (another
 * process, a hand edit) is checked before it is replaced: a corrupt one is moved aside rather than overwritten, and
 * one of an older version is kept as `session.json.v<n>` once.
 */
export const known = ({ fs, statOption, uniqueSuffix }: Files) => {
  const stamps = new Map<string, Stamp>()

  /** Reads a session's file and remembers it as seen. */
  const load = (id: string, file: string) =>
    Effect.gen(function* () {
      const info = yield* statOption(file)
      if (Option.isNone(info)) return yield* new Errors.SessionNotFound({ sessionId: id })
      const result = yield* read(fs, id, file)
      stamps.set(id, { identity: identityOf(info.value), version: result.version })
      return result.session
    })

  /** Before `file` is replaced: checks a file the store does not know, moving a corrupt one aside. */
  const protect = (id: string, file: string) =>
    Effect.gen(function* () {
      const info = yield* statOption(file)
      if (Option.isNone(info)) return
      const seen = stamps.get(id)
      let version: number
      if (seen !== undefined && seen.identity === identityOf(info.value)) {
        version = seen.version
      } else {
        const existing = yield* Effect.either(read(fs, id, file))
        if (Either.isLeft(existing)) {
          if (existing.left._tag === "SessionCorrupt") yield* moveAside(fs, existing.left, uniqueSuffix)
          return
        }
        version = existing.right.version
      }
      if (version < Session.currentVersion) {
        const backup = `${file}.v${version}`
        if (Option.isNone(yield* statOption(backup))) {
          yield* orDieWith(`cannot keep ${file} as ${backup}`)(fs.copyFile(file, backup))
        }
      }
    })

  /** After the store wrote the session's file: remembers it as written (`info`, from the write), in the current version. */
  const written = (id: string, info: FileSystem.File.Info) =>
    Effect.sync(() => void stamps.set(id, { identity: identityOf(info), version: Session.currentVersion }))

  /** Forgets a session's file: another process may write it next. */
  const forget = (id: string) => void stamps.delete(id)

  return { load, protect, written, forget }
}
