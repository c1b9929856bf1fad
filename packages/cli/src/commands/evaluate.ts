/**
 * `deep-research evaluate`: judges a stored session's report and checks its citations. The evaluation and the research
 * wiring are loaded only when it runs.
 */
import { Command } from "@effect/cli"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { Exited } from "../internal/commandLine/exited.js"
import * as OptionTable from "../internal/commandLine/optionTable.js"
import * as ParserOptions from "../internal/commandLine/parserOptions.js"
import * as StoreCommands from "./store.js"
import * as Store from "../Store.js"
import { resolveConfig, toFlags } from "./configuration.js"

const loadWiring = Effect.promise(() => import("../Wiring.js"))
const loadEvaluation = Effect.promise(() =>
  Promise.all([import("../StoredEvaluation.js"), import("@deep-research/evaluation")])
)

const evaluationOptions = ParserOptions.withRoleModels(OptionTable.commands.evaluate)

export const evaluate = Command.make(
  "evaluate",
  { id: StoreCommands.sessionIdArg, ...evaluationOptions },
  ({ id, ...given }) =>
    Effect.gen(function* () {
      const options = yield* StoreCommands.rememberSimulated(id, given, "evaluated")
      const resolved = yield* resolveConfig(
        toFlags({
          ...options,
          search: Option.none(),
          corpus: Option.none(),
          maxRounds: Option.none(),
          concurrency: Option.none(),
          maxToolCalls: Option.none(),
          budgetTokens: Option.none(),
          budgetUsd: Option.none(),
          noClarify: false,
          requireSources: false,
          noVerify: false,
          out: Option.none()
        }),
        "evaluation"
      )
      const [StoredEvaluation, { Evaluation }] = yield* loadEvaluation
      const Wiring = yield* loadWiring
      yield* Effect.mapError(
        Store.checkDatabase(resolved.credentials),
        (error) => new Exited({ code: 2, message: error.message })
      )
      const place = Store.artefactPlace(resolved.storeDir, resolved.credentials)
      const result = yield* StoredEvaluation.evaluateStored(id, place).pipe(
        Effect.provide(Wiring.evaluationLayer(resolved)),
        Effect.mapError(
          (error) =>
            new Exited({
              code:
                error._tag === "ResearchInvalidInput" ||
                error._tag === "ResearchSessionNotFound" ||
                error._tag === "ResearchSessionCorrupt" ||
                error._tag === "RunConflict"
                  ? 2
                  : 1,
              // A session that cannot be evaluated yet is said as it is: nothing failed.
              message: error._tag === "RunConflict" ? error.message : `Evaluation failed: ${error.message}`
            })
        )
      )
      if (options.json) {
        return yield* Console.log(JSON.stringify(Schema.encodeSync(Evaluation.Evaluation)(result.evaluation)))
      }
      if (resolved.simulate) yield* Console.log("[simulated] judged by the built-in emulator, not by a real model")
      yield* Console.log(StoredEvaluation.format(result.evaluation))
      yield* Console.log(`\nStored in ${result.file}`)
    })
).pipe(
  Command.withDescription(
    "Judge a session's report on eight dimensions (the evaluation role's model) and check its citations; the " +
      "result is kept beside the session as evaluation.json (--json: printed as one JSON line)"
  )
)
