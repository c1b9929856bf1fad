/**
 * The runs of a serving process (`serve`, `mcp`): hosted here (`Runs`), or, with a database, sent to the cluster's
 * runners (`ClusterRuns`), which this process joins as a client (there, a runner resumes what a stopped one left). It
 * stands above both, which share `Runs`' contract; the cluster's modules are loaded only when a database is named.
 * Either takes its clients' texts without secrets, and lists each question's beginning only. A session the store fails
 * to keep (a full disk, a database made read-only) is refused as `NotStored`, in a sentence that names the cause,
 * rather than as an unexplained failure.
 */
import type { Errors } from "@deep-research/core"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type * as CliConfig from "./CliConfig.js"
import * as Runs from "./Runs.js"
import { secretsIn } from "./internal/config/credentials.js"

/**
 * A session that was not accepted because the store could not keep it: the client is told so (HTTP 503), with the
 * store's own words for the cause, and nothing was acknowledged.
 */
export class NotStored extends Data.TaggedError("NotStored")<{ readonly message: string }> {}

/** The sentence a client is given for a session the store failed to keep. */
export const notStoredMessage = (cause: unknown): string => {
  const said = cause instanceof Error ? cause.message : String(cause)
  return `The session was not accepted: the session store could not keep it (${said.replace(/\.$/, "")}).`
}

/** A failure of the session store, which says so first (`SqlSessionStore: cannot save session …: database or disk is full`). */
const isStoreFailure = (defect: unknown): boolean =>
  defect instanceof Error && defect.message.startsWith("SqlSessionStore:")

/** Runs whose `start` dies with `NotStored` when storing the new session fails. */
const sayingNotStored = (runs: Runs.Runs): Runs.Runs => ({
  ...runs,
  start: (question, options, clarification) =>
    Effect.catchAllDefect(runs.start(question, options, clarification), (defect) =>
      Effect.die(isStoreFailure(defect) ? new NotStored({ message: notStoredMessage(defect) }) : defect)
    )
})

/** The runs this serving process offers, as its configuration says. */
export const make = (
  resolved: CliConfig.Resolved,
  options: Runs.Options = {}
): Effect.Effect<Runs.Runs, Errors.ResearchInvalidInput, Scope.Scope> =>
  Effect.map(
    resolved.credentials.databaseUrl === undefined
      ? Effect.map(Runs.make(resolved, options), sayingNotStored)
      : // An outage of the database is said as such, by the server's probe of it.
        Effect.flatMap(
          Effect.promise(() => import("./ClusterRuns.js")),
          (ClusterRuns) => ClusterRuns.make(resolved)
        ),
    (runs) => Runs.withShortListing(Runs.withoutSecrets(runs, secretsIn(resolved.credentials)))
  )

/** A session refused because the store could not keep it, as the API's 503; anything else goes on as it was. */
export const catchNotStored = <A, E, R, E2>(
  effect: Effect.Effect<A, E, R>,
  onNotStored: (error: NotStored) => E2
): Effect.Effect<A, E | E2, R> =>
  Effect.catchAllDefect(effect, (defect) =>
    defect instanceof NotStored ? Effect.fail(onNotStored(defect)) : Effect.die(defect)
  )
