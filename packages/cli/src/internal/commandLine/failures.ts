/**
 * How a failure nothing else caught is said and ended: one line, the store's own words up to the system call and the
 * system's reason in plain words, and the exit code it deserves. Apart from `main` so that a command that ends a run
 * on such a failure (`runSession`) says it the same way.
 */
import * as Cause from "effect/Cause"

/** What a file-system error code means, in words. */
const systemReasons: Readonly<Record<string, string>> = {
  ENOTDIR: "not a folder",
  EISDIR: "a folder, not a file",
  EACCES: "permission denied",
  EPERM: "not permitted",
  ENOENT: "does not exist",
  EROFS: "read-only file system",
  ENAMETOOLONG: "the path is too long",
  ENOSPC: "no space left on the device",
  ELOOP: "too many symbolic links"
}

const messageOf = (cause: Cause.Cause<unknown>): string => {
  const failure = Cause.squash(cause)
  return failure instanceof Error ? failure.message : String(failure)
}

/**
 * One line for a failure nothing else caught: the store's own words up to the system call, and the system's reason
 * in plain words ("SqlSessionStore: cannot save session …: database or disk is full").
 */
export const describeFailure = (cause: Cause.Cause<unknown>): string => {
  const message = messageOf(cause).split("\n")[0] ?? ""
  const code = /\b(E[A-Z]{2,})\b/.exec(message)?.[1]
  const reason = code === undefined ? undefined : systemReasons[code]
  const subject = message.replace(
    /: (?:BadResource|NotFound|PermissionDenied|SystemError|Unknown|AlreadyExists|TimedOut|WouldBlock|Busy|InvalidData|UnexpectedEof|WriteZero|BadArgument)\b.*$/,
    ""
  )
  const text = reason === undefined ? message : `${subject}: ${reason}`
  return `error: ${text.length > 500 ? `${text.slice(0, 500)}…` : text}`
}

/**
 * A store or file-system problem met before a run held its session (a store that cannot be made, read or locked) is
 * the user's to fix (2); anything else is a failed run (1). One met once a run held its session is `stoppedRun`'s.
 */
export const failureCode = (cause: Cause.Cause<unknown>): number =>
  /\bE[A-Z]{2,}\b|SessionStore|cannot (?:create|list|read|write|open|use the session database)/.test(messageOf(cause))
    ? 2
    : 1

/**
 * How a run that held its session ends on a failure outside research's own errors (the store failing under it: a full
 * disk, a permission taken away; a defect): exit 1, as a failed run, saying what failed, where its session is kept
 * as of its last checkpoint, and how to resume it.
 */
export const stoppedRun = (
  cause: Cause.Cause<unknown>,
  session: { readonly kept: string; readonly resume: string }
): { readonly code: number; readonly message: string } => ({
  code: 1,
  message:
    `Research stopped: ${describeFailure(cause).replace(/^error: /, "")}\n` +
    `The session is kept at ${session.kept} as of its last checkpoint\nOnce the cause is fixed, resume it with: ${session.resume}`
})
