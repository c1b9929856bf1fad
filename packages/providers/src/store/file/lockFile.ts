/**
 * The lock file of a session: who holds it (pid, host, a token unique to the acquisition), created exclusively with
 * its whole content at once, taken over from a holder that is no longer alive, and removed only by its own holder.
 * A lock of another host cannot be judged from here and stands.
 */
import type * as FileSystem from "@effect/platform/FileSystem"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import * as os from "node:os"
import { isAlreadyExists, isNotFound, orDieWith } from "./fileErrors.js"
import { fromFileSystem, type NativeFiles } from "./nativeFiles.js"

/** The process that takes locks, and how it tells whether another process of its host still runs. */
export interface Host {
  readonly pid: number
  readonly hostname: string
  readonly isAlive: (pid: number) => boolean
}

/**
 * The locks this process holds, over all its stores. A lock naming this process's pid with none of these tokens was
 * left by an earlier process that had the same pid (after a reboot, or in a restarted container), and is stale.
 */
const locksHeldHere = new Set<string>()

/** This Node process: a pid is alive when signal 0 reaches it (EPERM means it exists under another user). */
export const nodeHost: Host = {
  pid: process.pid,
  hostname: os.hostname(),
  isAlive: (pid) => {
    try {
      process.kill(pid, 0)
      return true
    } catch (error) {
      return Predicate.hasProperty(error, "code") && error.code === "EPERM"
    }
  }
}

/** Records that this process holds the lock of this token (before the lock file exists). */
export const register = (token: string): Effect.Effect<void> => Effect.sync(() => void locksHeldHere.add(token))

/** Forgets a lock of this process. */
export const forget = (token: string): Effect.Effect<void> => Effect.sync(() => void locksHeldHere.delete(token))

/** What a lock file says about the run holding it. */
export const LockHolder = Schema.Struct({
  pid: Schema.Int.pipe(Schema.positive()),
  hostname: Schema.String,
  startedAt: Schema.String,
  /** Unique to one acquisition, so that a run only ever removes its own lock. */
  token: Schema.String
})
export type LockHolder = typeof LockHolder.Type
const LockHolderJson = Schema.parseJson(LockHolder)

/** Who holds a lock, as a run that finds it busy is told (from `host`). */
const describeHolder = (host: Host, holder: LockHolder, file: string): string =>
  holder.hostname === host.hostname
    ? `pid ${holder.pid} since ${holder.startedAt}; lock file ${file}`
    : `pid ${holder.pid} on host ${holder.hostname} since ${holder.startedAt}; this host cannot tell whether ` +
      `that run is alive: remove ${file} if it is not`

/**
 * The lock-file operations over a file system, for one host, made with `files`: the system's own calls when the
 * caller has them, the platform's otherwise.
 */
export const make = (fs: FileSystem.FileSystem, host: Host, files: NativeFiles = fromFileSystem(fs)) => {
  const { readText, link, remove, rename } = files

  const readHolder = (file: string) =>
    readText(file).pipe(
      Effect.flatMap((text) => Effect.option(Schema.decode(LockHolderJson)(text))),
      Effect.map(Option.some),
      Effect.catchIf(isNotFound, () => Effect.succeedNone),
      orDieWith(`cannot read ${file}`)
    )

  const writeHolder = (file: string, holder: LockHolder) =>
    Effect.asVoid(files.writeNew(file, Schema.encodeSync(LockHolderJson)(holder)))

  /**
   * Creates the lock file exclusively with its full contents at once: written aside, then linked, which fails if
   * the lock exists. Where the file system has no hard links, it is created in place (`wx`) instead.
   */
  const tryCreate = (file: string, holder: LockHolder) =>
    Effect.gen(function* () {
      const temporary = `${file}.tmp-${holder.token}`
      yield* orDieWith(`cannot write ${temporary}`)(writeHolder(temporary, holder))
      return yield* link(temporary, file).pipe(
        Effect.as(true),
        Effect.catchIf(isAlreadyExists, () => Effect.succeed(false)),
        Effect.catchAll(() =>
          writeHolder(file, holder).pipe(
            Effect.as(true),
            Effect.catchIf(isAlreadyExists, () => Effect.succeed(false))
          )
        ),
        orDieWith(`cannot create ${file}`),
        Effect.ensuring(Effect.ignore(remove(temporary)))
      )
    })

  /**
   * Takes a dead holder's lock away by renaming it, then checks that what was moved is the lock judged stale: if
   * another run replaced it in between, it is put back.
   */
  const takeOver = (file: string, stale: LockHolder, token: string, why: string) =>
    Effect.gen(function* () {
      const moved = `${file}.stale-${token}`
      const renamed = yield* rename(file, moved).pipe(
        Effect.as(true),
        Effect.catchIf(isNotFound, () => Effect.succeed(false)),
        orDieWith(`cannot move the stale ${file}`)
      )
      if (!renamed) return
      const movedHolder = Option.flatten(yield* readHolder(moved))
      if (Option.exists(movedHolder, (holder) => holder.token === stale.token)) {
        yield* Effect.logWarning(`FileSessionStore: took over the lock of ${file} from pid ${stale.pid}, ${why}`)
      } else if (Option.isSome(movedHolder)) {
        // Someone else's fresh lock was moved: it goes back unless yet another run has locked meanwhile.
        yield* Effect.ignore(Effect.orElse(link(moved, file), () => writeHolder(file, movedHolder.value)))
      }
      yield* Effect.ignore(remove(moved))
    })

  const release = (file: string, token: string) =>
    Effect.gen(function* () {
      const holder = yield* readHolder(file)
      if (Option.exists(Option.flatten(holder), (h) => h.token === token)) {
        yield* orDieWith(`cannot remove ${file}`)(remove(file))
      }
    }).pipe(Effect.catchAllCause((cause) => Effect.logWarning("FileSessionStore: could not release a lock", cause)))

  /**
   * Takes the lock file for `holder`, or fails with `busy` naming who holds it. A few rounds: a lock can vanish or be
   * taken over between an attempt and a look at it.
   */
  const acquire = <E>(file: string, holder: LockHolder, busy: (description: string) => E): Effect.Effect<void, E> =>
    Effect.gen(function* () {
      for (let attempt = 0; attempt < 5; attempt++) {
        if (yield* tryCreate(file, holder)) return
        const current = yield* readHolder(file)
        if (Option.isNone(current)) continue
        if (Option.isNone(current.value)) {
          return yield* Effect.fail(busy(`an unreadable lock file ${file}; remove it if no run is using this session`))
        }
        const other = current.value.value
        if (other.hostname !== host.hostname) return yield* Effect.fail(busy(describeHolder(host, other, file)))
        if (other.pid === host.pid) {
          if (locksHeldHere.has(other.token)) return yield* Effect.fail(busy(describeHolder(host, other, file)))
          yield* takeOver(file, other, holder.token, "an earlier process that had this process's pid")
        } else {
          if (host.isAlive(other.pid)) return yield* Effect.fail(busy(describeHolder(host, other, file)))
          yield* takeOver(file, other, holder.token, "which is no longer running")
        }
      }
      return yield* Effect.fail(busy(`several runs competing for ${file}`))
    })

  return { readHolder, acquire, release }
}
