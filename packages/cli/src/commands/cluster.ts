/**
 * The cluster's side of the CLI, loaded by the commands that use a database (`run` and `resume` send to the cluster,
 * `worker` runs for it), and how a refusal of theirs ends the command.
 */
import * as Effect from "effect/Effect"
import { Exited } from "../internal/commandLine/exited.js"

/** The cluster's side of the CLI, loaded by the commands that use a database. */
export const loadCluster = Effect.promise(() => Promise.all([import("../ClusterRun.js"), import("../Worker.js")]))

/** Ends the command with the refusal's exit code and message. */
export const refused = (refusal: { readonly code: number; readonly message: string }) => new Exited(refusal)
