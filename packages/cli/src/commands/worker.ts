/** `deep-research worker`: runs research sessions as a runner of the cluster. */
import { Command } from "@effect/cli"
import * as Variables from "@deep-research/providers/Environment"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { usageError } from "../internal/commandLine/exited.js"
import * as OptionTable from "../internal/commandLine/optionTable.js"
import * as ParserOptions from "../internal/commandLine/parserOptions.js"
import { loadCluster, refused } from "./cluster.js"
import { resolveConfig, toFlags } from "./configuration.js"

export const worker = Command.make(
  "worker",
  ParserOptions.withRoleModels(OptionTable.commands.worker),
  ({ healthPort, host: givenHost, listen, port, ...options }) =>
    Effect.gen(function* () {
      // Without a database there is no cluster to work for: said before anything about models and keys.
      if (Option.isNone(options.database) && (process.env[Variables.databaseUrl] ?? "").trim() === "") {
        return yield* usageError(
          `deep-research worker needs the cluster's database: --database URL or ${Variables.databaseUrl}`
        )
      }
      for (const [name, value] of [
        ["--port", port],
        ["--health-port", healthPort]
      ] as const) {
        if (Option.isSome(value) && (value.value < 0 || value.value > 65535)) {
          return yield* usageError(`${name} must be between 0 and 65535, got ${value.value}`)
        }
      }
      const resolved = yield* resolveConfig(
        toFlags({ ...options, out: Option.none(), json: false, store: Option.none() })
      )
      const [, Worker] = yield* loadCluster
      const host = Option.getOrElse(givenHost, () => OptionTable.defaults.workerHost)
      yield* Effect.mapError(
        Worker.run(resolved, {
          host,
          port: Option.getOrElse(port, () => OptionTable.defaults.workerPort),
          listenHost: Option.getOrElse(listen, () => host),
          healthPort: Option.getOrUndefined(healthPort)
        }),
        refused
      )
    })
).pipe(
  Command.withDescription(
    `Run research sessions as a runner of the cluster whose database is --database (or ${Variables.databaseUrl})`
  )
)
