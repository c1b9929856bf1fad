/** `deep-research bench`: runs DeepResearch Bench's tasks, with `Bench` loaded only when it runs. */
import { Command } from "@effect/cli"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { usageError } from "../internal/commandLine/exited.js"
import * as OptionTable from "../internal/commandLine/optionTable.js"
import * as ParserOptions from "../internal/commandLine/parserOptions.js"
import { resolveConfig, toFlags } from "./configuration.js"

const loadBench = Effect.promise(() => import("../Bench.js"))

export const bench = Command.make(
  "bench",
  ParserOptions.withRoleModels(OptionTable.commands.bench),
  ({ ids, language, limit, out, parallel, tasks, topic, ...options }) =>
    Effect.gen(function* () {
      const tasksAtOnce = Option.getOrElse(parallel, () => 2)
      if (!Number.isInteger(tasksAtOnce) || tasksAtOnce < 1 || tasksAtOnce > 20) {
        return yield* usageError(`--parallel takes a whole number from 1 to 20, got ${tasksAtOnce}`)
      }
      const Bench = yield* loadBench
      const filter = Bench.filterOf({
        ids: Option.getOrUndefined(ids),
        language: Option.getOrUndefined(language),
        topic: Option.getOrUndefined(topic),
        limit: Option.getOrUndefined(limit)
      })
      if (filter._tag === "Left") return yield* usageError(filter.left)
      // A benchmark task never waits for an answer: the model's understanding of the question stands.
      const flags = toFlags({
        ...options,
        out: Option.none(),
        database: Option.none(),
        noClarify: true,
        json: false,
        requireSources: false,
        noVerify: false
      })
      const resolved = yield* resolveConfig(flags)
      yield* Bench.run(resolved, {
        tasksFile: Option.getOrUndefined(tasks),
        outputDir: Option.getOrElse(out, () => "deep-research-bench"),
        filter: filter.right,
        parallel: tasksAtOnce
      })
    })
).pipe(
  Command.withDescription(
    "Run DeepResearch Bench: research its tasks into the official scorer's {id, prompt, article} lines and a table " +
      "of time and cost per task; a run stopped anywhere goes on where it stopped"
  )
)
