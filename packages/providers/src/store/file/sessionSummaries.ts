/**
 * How the file store lists a session: as saved, or as one it cannot list as saved: one the system will not let it
 * read, one whose file is corrupt, one saved as running whose run is gone, and a folder with no session file
 * (`leftovers.ts`).
 */
import type { Errors } from "@deep-research/core"
import { Session } from "@deep-research/core"
import type * as FileSystem from "@effect/platform/FileSystem"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as LockFile from "./lockFile.js"

/** A session the system will not let the store read (permissions, a file where its folder should be). */
export const unreadable = (id: string, reason: string): Session.SessionSummary =>
  new Session.SessionSummary({
    id,
    status: "unreadable",
    query: "",
    createdAt: 0,
    updatedAt: 0,
    costUsd: 0,
    error: reason.split("\n")[0] ?? reason
  })

/** A session whose file is corrupt, dated by the file's last change. */
export const corrupt = (id: string, reason: string, modified: number): Session.SessionSummary =>
  new Session.SessionSummary({
    id,
    status: "corrupt",
    query: "",
    createdAt: modified,
    updatedAt: modified,
    costUsd: 0,
    error: reason
  })

/**
 * A session saved as running whose run holds no lock any more (killed, the machine restarted) is interrupted, not
 * running: `resume` continues it. An unreadable lock, or a lock of another host, cannot be judged here and stands.
 */
export const withLiveness = (
  summary: Session.SessionSummary,
  lock: Option.Option<Option.Option<LockFile.LockHolder>>,
  host: LockFile.Host
): Session.SessionSummary => {
  if (summary.status !== "running") return summary
  const held =
    Option.isSome(lock) &&
    (Option.isNone(lock.value) || lock.value.value.hostname !== host.hostname || host.isAlive(lock.value.value.pid))
  return held ? summary : new Session.SessionSummary({ ...summary, status: "interrupted" })
}

/** What listing needs of its store. */
export interface Listing {
  /** Reads a session's file. */
  readonly load: (id: string) => Effect.Effect<Session.Session, Errors.SessionNotFound | Errors.SessionCorrupt>
  /** Who holds a session's lock: `None` when there is no lock, `Some(None)` when it cannot be read. */
  readonly readLock: (id: string) => Effect.Effect<Option.Option<Option.Option<LockFile.LockHolder>>>
  readonly statOption: (file: string) => Effect.Effect<Option.Option<FileSystem.File.Info>>
  readonly host: LockFile.Host
  /** A session folder with no session file: what a killed process left (removed, or listed for what it holds). */
  readonly withoutSession: (id: string) => Effect.Effect<Option.Option<Session.SessionSummary>>
}

/** A session's line of the listing; `None` when it has no file (any more), or is being made. */
export const summaryOf =
  ({ host, load, readLock, statOption, withoutSession }: Listing) =>
  (id: string): Effect.Effect<Option.Option<Session.SessionSummary>> =>
    load(id).pipe(
      Effect.flatMap((session) => {
        const summary = Session.summarize(session)
        return summary.status !== "running"
          ? Effect.succeed(Option.some(summary))
          : Effect.map(readLock(id), (lock) => Option.some(withLiveness(summary, lock, host)))
      }),
      Effect.catchTags({
        SessionNotFound: () => withoutSession(id),
        SessionCorrupt: (error) =>
          Effect.gen(function* () {
            yield* Effect.logWarning(`FileSessionStore: ${error.message}`)
            const info = yield* statOption(error.path)
            const modified = Option.match(
              Option.flatMap(info, (i) => i.mtime),
              { onNone: () => 0, onSome: (date) => date.getTime() }
            )
            return Option.some(corrupt(id, error.reason, modified))
          })
      }),
      // One session that cannot be read is listed as such (a folder left by a killed process too); the others are
      // listed all the same.
      Effect.catchAllDefect((defect) =>
        Effect.succeed(Option.some(unreadable(id, defect instanceof Error ? defect.message : String(defect))))
      )
    )
