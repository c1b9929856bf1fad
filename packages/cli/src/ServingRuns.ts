/**
 * The runs of a serving process (`serve`, `mcp`): hosted here (`Runs`), or, with a database, sent to the cluster's
 * runners (`ClusterRuns`), which this process joins as a client (there, a runner resumes what a stopped one left). It stands above both, which share `Runs`' contract;
 * the cluster's modules are loaded only when a database is named. Either takes its clients' texts without secrets.
 */
import type { Errors } from "@deep-research/core"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type * as CliConfig from "./CliConfig.js"
import * as Runs from "./Runs.js"
import * as Store from "./Store.js"

/** The runs this serving process offers, as its configuration says. */
export const make = (
  resolved: CliConfig.Resolved,
  options: Runs.Options = {}
): Effect.Effect<Runs.Runs, Errors.InvalidInput, Scope.Scope> =>
  Effect.map(
    resolved.credentials.databaseUrl === undefined
      ? Runs.make(resolved, options)
      : Effect.flatMap(
          Effect.promise(() => import("./ClusterRuns.js")),
          (ClusterRuns) => ClusterRuns.make(resolved)
        ),
    (runs) => Runs.withoutSecrets(runs, Store.secretsOf(resolved.credentials))
  )
