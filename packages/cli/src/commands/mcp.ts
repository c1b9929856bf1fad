/** `deep-research mcp`: the MCP server on stdio, loaded only when it runs. */
import { Command } from "@effect/cli"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { Exited } from "../internal/commandLine/exited.js"
import { describeError } from "../internal/telemetry/logging.js"
import * as OptionTable from "../internal/commandLine/optionTable.js"
import * as ParserOptions from "../internal/commandLine/parserOptions.js"
import { purposeOf, resolveConfig, toFlags } from "./configuration.js"

const loadMcp = Effect.promise(() => import("../Mcp.js"))

const mcpOptions = ParserOptions.withRoleModels(OptionTable.commands.mcp)

export const mcp = Command.make("mcp", mcpOptions, (options) =>
  Effect.gen(function* () {
    const flags = { ...toFlags(options), json: false, maxSessions: Option.getOrUndefined(options.maxSessions) }
    const resolved = yield* resolveConfig(flags, purposeOf(flags))
    const Mcp = yield* loadMcp
    yield* Mcp.serveStdio(resolved).pipe(
      Effect.mapError(
        (error) => new Exited({ code: 2, message: `The MCP server cannot start: ${describeError(error)}` })
      )
    )
  })
).pipe(
  Command.withDescription(
    "Serve MCP on stdio: start_research, get_status, get_report, list_sessions, answer_clarification, " +
      "cancel_research and evaluate_report, over the same session store as the CLI"
  )
)
