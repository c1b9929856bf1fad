/**
 * How a command ends when it does not succeed: the exit code and the message the entry point prints. Apart from
 * `Commands` so that the modules of its commands can end with it too.
 */
import * as Data from "effect/Data"

/** How a command ended, as the process exit code says it. */
export class Exited extends Data.TaggedError("Exited")<{ readonly code: number; readonly message: string }> {}

/** A usage or configuration error: exit code 2. */
export const usageError = (message: string) => new Exited({ code: 2, message })
