/**
 * The evaluation of a session by a process that runs no research (`serve --database`, `mcp --database`): it runs
 * here, with this process's judge model when it has one; a session a simulated run made is judged by the emulator.
 */
import type { ModelRouter, SessionStore } from "@deep-research/core"
import * as Variables from "@deep-research/providers/Environment"
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as CliConfig from "../../CliConfig.js"
import { JudgeUnavailable } from "../../RunSchema.js"
import * as Store from "../../Store.js"
import * as StoredEvaluation from "../../StoredEvaluation.js"
import * as Wiring from "../../Wiring.js"

/** What the evaluation takes of a cluster client. */
export interface Judging<R> {
  readonly resolved: CliConfig.Resolved
  /** The store's services (and whatever else the client holds). */
  readonly context: Context.Context<R>
  readonly store: SessionStore.Service
  /** This process's judge model, when it has one. */
  readonly judge: Option.Option<Context.Context<ModelRouter.ModelRouter>>
}

/** Evaluates a stored session here, or says that this process has no model to judge it with. */
export const evaluate = <R>(client: Judging<R>, sessionId: string) =>
  Effect.gen(function* () {
    const { resolved } = client
    const evaluation = StoredEvaluation.evaluateStored(
      sessionId,
      Store.artefactPlace(resolved.storeDir, resolved.credentials)
    ).pipe(Effect.provide(client.context))
    // As `deep-research evaluate` does: a session a simulated run made is judged by the emulator, whatever this
    // server was given; any other by this server's model.
    if (!resolved.simulate && (yield* Store.wasSimulated(client.store, sessionId))) {
      return yield* Effect.provide(evaluation, Wiring.simulatedJudgeLayer(resolved))
    }
    if (Option.isSome(client.judge)) return yield* Effect.provide(evaluation, client.judge.value)
    return yield* new JudgeUnavailable({
      message:
        "This server has no model to judge a report with (its sessions run on the cluster's workers): start it " +
        `with a model (${Variables.openaiApiKey} or ${Variables.anthropicApiKey}, or --model) to evaluate here, ` +
        `or run deep-research evaluate ${sessionId} --database URL where a model is configured.`
    })
  })
