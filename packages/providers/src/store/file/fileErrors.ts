/**
 * The file system's failures as the file store meets them: which ones mean "not there" or "already there", and the
 * infrastructure failures (disk full, permissions) no caller can act on, which end the run with a stated reason.
 */
import type { PlatformError } from "@effect/platform/Error"
import * as Effect from "effect/Effect"

/** A system error of this reason. */
export const isReason =
  (reason: string) =>
  (error: PlatformError): boolean =>
    error._tag === "SystemError" && error.reason === reason

export const isNotFound = isReason("NotFound")
export const isAlreadyExists = isReason("AlreadyExists")

/** Infrastructure failures (disk full, permissions) that no caller can act on end the run with a stated reason. */
export const orDieWith =
  (what: string) =>
  <A, R>(effect: Effect.Effect<A, PlatformError, R>): Effect.Effect<A, never, R> =>
    Effect.orDieWith(effect, (error) => new Error(`FileSessionStore: ${what}: ${error.message}`, { cause: error }))
