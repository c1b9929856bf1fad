/**
 * How the file store lists a session it cannot list as saved: one the system will not let it read, one whose file is
 * corrupt, and one saved as running whose run is gone.
 */
import { Session } from "@deep-research/core"
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
