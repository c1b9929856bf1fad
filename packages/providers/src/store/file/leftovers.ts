/**
 * What a killed process leaves in the file store, and what the store does with it. A process killed while it made a
 * session's folder, or while it replaced a file, leaves a folder with no `session.json` (only its `lock`, a temporary
 * file, `simulated.json`) or a temporary file beside a session's files. Such a folder is removed when the store lists
 * its sessions, once no live process can be making it (one that says nothing of its maker, after a minute); one that
 * holds anything else is listed as corrupt, naming what it holds, never removed. Temporary files of stopped processes
 * are removed when a run next locks the session.
 */
import { Session } from "@deep-research/core"
import type * as FileSystem from "@effect/platform/FileSystem"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { isNotFound, orDieWith } from "./fileErrors.js"
import type * as LockFile from "./lockFile.js"
import * as SessionSummaries from "./sessionSummaries.js"
import type * as SessionWriters from "./sessionWriters.js"

/**
 * A folder that says nothing of who made it (empty, or only `simulated.json`) younger than this may be one another
 * process has just made, about to write its session into it.
 */
export const unclaimedFolderGraceMillis = 60_000

/** The files a process writes aside (`<name>.tmp-<pid>-…`, `<name>.stale-<pid>-…`), with the pid that wrote them. */
const asideFile = /\.(?:tmp|stale)-(\d+)-/

/** The names a folder may hold that a process makes around a session, none of them the session itself. */
const isLeftover = (name: string): boolean => name === "lock" || name === "simulated.json" || asideFile.test(name)

/** The pid that wrote a file aside, when the name says it. */
const writerOf = (name: string): number | undefined => {
  const match = asideFile.exec(name)
  return match?.[1] === undefined ? undefined : Number(match[1])
}

/** What the leftovers need of their store. */
export interface Store {
  readonly fs: FileSystem.FileSystem
  readonly host: LockFile.Host
  readonly folderOf: (id: string) => string
  readonly fileOf: (id: string, name: string) => string
  /** Who holds a session's lock: `None` when there is no lock, `Some(None)` when it cannot be read. */
  readonly readLock: (id: string) => Effect.Effect<Option.Option<Option.Option<LockFile.LockHolder>>>
  readonly statOption: (file: string) => Effect.Effect<Option.Option<FileSystem.File.Info>>
  readonly serially: SessionWriters.SessionWriters
  /** Forgets what the store knew of a session's files, once its folder is gone. */
  readonly forget: (id: string) => Effect.Effect<void>
}

export interface Leftovers {
  /**
   * A session folder with no `session.json`: `None` when it is being made or held by a live process, or was left over
   * and is now removed; a corrupt line naming what it holds when it holds anything a session's run would keep.
   */
  readonly withoutSession: (id: string) => Effect.Effect<Option.Option<Session.SessionSummary>>
  /** Removes the temporary files stopped processes left in a session's folder (its run holds the lock). */
  readonly sweep: (id: string) => Effect.Effect<void>
}

/** When a folder was last changed (0 when it is gone). */
const modifiedAt = (store: Store, folder: string) =>
  Effect.map(store.statOption(folder), (info) =>
    Option.match(
      Option.flatMap(info, (i) => i.mtime),
      { onNone: () => 0, onSome: (date) => date.getTime() }
    )
  )

/** A folder that holds files of its own but no `session.json`, as it is listed: corrupt, saying what it holds. */
const withoutSessionFile = (id: string, folder: string, kept: ReadonlyArray<string>, modified: number) =>
  SessionSummaries.corrupt(id, `${folder} has no session.json; it holds ${[...kept].sort().join(", ")}`, modified)

export const make = (store: Store): Leftovers => {
  const { fs, host } = store

  const isLive = (pid: number) => pid === host.pid || host.isAlive(pid)

  const namesIn = (folder: string) =>
    fs.readDirectory(folder).pipe(
      Effect.map(Option.some),
      Effect.catchIf(isNotFound, () => Effect.succeedNone),
      orDieWith(`cannot list ${folder}`)
    )

  /**
   * Who left the folder as it is: a live process that may be making or holding it (its lock, a file it is writing
   * aside), a stopped one (its lock or a file it wrote aside, and nothing of a live one), or no telling (no lock, no
   * file written aside: a folder just made, or one with only `simulated.json`).
   */
  const leftBy = (id: string, names: ReadonlyArray<string>) =>
    Effect.gen(function* () {
      const writers = names.flatMap((name) => {
        const pid = writerOf(name)
        return pid === undefined ? [] : [pid]
      })
      if (writers.some(isLive)) return "live" as const
      if (!names.includes("lock")) return writers.length > 0 ? ("stopped" as const) : ("unknown" as const)
      const holder = yield* store.readLock(id)
      if (Option.isNone(holder)) return writers.length > 0 ? ("stopped" as const) : ("unknown" as const)
      // A lock that cannot be read, or of another host, cannot be judged here: it stands.
      return Option.match(holder.value, {
        onNone: () => "live" as const,
        onSome: (lock) =>
          lock.hostname !== host.hostname || isLive(lock.pid) ? ("live" as const) : ("stopped" as const)
      })
    })

  const withoutSession = (id: string) =>
    store.serially(
      id,
      Effect.gen(function* () {
        const folder = store.folderOf(id)
        const listed = yield* namesIn(folder)
        if (Option.isNone(listed)) return Option.none<Session.SessionSummary>()
        const names = listed.value
        const writer = yield* leftBy(id, names)
        if (writer === "live") return Option.none()
        const modified = yield* modifiedAt(store, folder)
        const kept = names.filter((name) => !isLeftover(name))
        if (kept.length > 0) return Option.some(withoutSessionFile(id, folder, kept, modified))
        // Nothing says who made it: another process may have just made it, about to write its session into it.
        if (writer === "unknown" && (yield* Clock.currentTimeMillis) - modified < unclaimedFolderGraceMillis) {
          return Option.none()
        }
        yield* orDieWith(`cannot remove ${folder}`)(fs.remove(folder, { recursive: true }))
        yield* store.forget(id)
        yield* Effect.logWarning(
          `FileSessionStore: removed ${folder}, which a stopped process left without a session` +
            (names.length === 0 ? " (empty)" : ` (it held ${[...names].sort().join(", ")})`)
        )
        return Option.none()
      })
    )

  const sweep = (id: string) =>
    Effect.gen(function* () {
      const folder = store.folderOf(id)
      const names = Option.getOrElse(yield* namesIn(folder), (): ReadonlyArray<string> => [])
      const stale = names.filter((name) => {
        const pid = writerOf(name)
        return pid !== undefined && !isLive(pid)
      })
      if (stale.length === 0) return
      yield* Effect.forEach(
        stale,
        (name) => fs.remove(store.fileOf(id, name)).pipe(Effect.catchIf(isNotFound, () => Effect.void)),
        { discard: true }
      ).pipe(orDieWith(`cannot remove the temporary files of ${folder}`))
      yield* Effect.logWarning(
        `FileSessionStore: removed ${stale.length} temporary file(s) that stopped processes left in ${folder}`
      )
    }).pipe(
      // Files left aside are in nobody's way: a folder that cannot be swept is said, and the run goes on.
      Effect.catchAllCause((cause) => Effect.logWarning("FileSessionStore: a session folder could not be swept", cause))
    )

  return { withoutSession, sweep }
}
