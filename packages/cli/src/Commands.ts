/**
 * The `deep-research` command line: run (the default), resume, ask, continue, list, show, delete, export, evaluate, mcp, serve, worker and
 * bench, put together for the parser. Each command is defined in `commands/` (the configuration they resolve in
 * `commands/configuration`, the list, show and delete over the session store in `commands/store`); their options are
 * declared once, in `internal/commandLine/optionTable`. A session's run in the terminal is `internal/terminal/runSession`.
 */
import { type CliApp, Command } from "@effect/cli"
import type * as Effect from "effect/Effect"
import { Exited } from "./internal/commandLine/exited.js"
import * as OptionTable from "./internal/commandLine/optionTable.js"
import { resumeCommand } from "./internal/terminal/runSession.js"
import * as StoreCommands from "./commands/store.js"
import { version } from "./version.js"
import { bench } from "./commands/bench.js"
import { evaluate } from "./commands/evaluate.js"
import { exportCommand } from "./commands/export.js"
import { ask, continueCommand } from "./commands/followUp.js"
import { mcp } from "./commands/mcp.js"
import { resume } from "./commands/resume.js"
import { runCommand } from "./commands/run.js"
import { serve } from "./commands/serve.js"
import { worker } from "./commands/worker.js"

// Imported from here by the entry point and the tests, wherever they are defined.
export { Exited, resumeCommand }

/** The options each command accepts, by name, to name a mistyped one before parsing. */
export const optionNames: Readonly<Record<string, ReadonlyArray<string>>> = Object.fromEntries(
  OptionTable.commandNames.map((command) => [command, OptionTable.namesOf(command)])
)

/** The command line as the parser knows it. */
export const root = Command.make("deep-research", {}).pipe(
  Command.withDescription("Turns a question into a cited research report."),
  Command.withSubcommands([
    runCommand,
    resume,
    ask,
    continueCommand,
    StoreCommands.list,
    StoreCommands.show,
    StoreCommands.remove,
    StoreCommands.importStore,
    exportCommand,
    StoreCommands.search,
    evaluate,
    mcp,
    serve,
    worker,
    bench
  ])
)

/** Parses the arguments (with the program's name and script first, as in `process.argv`) and runs the command. */
export const run: (args: ReadonlyArray<string>) => Effect.Effect<void, unknown, CliApp.CliApp.Environment> =
  Command.run(root, { name: "deep-research", version })

/** The names the CLI treats as subcommands; anything else in first position is a question. */
export const subcommands: ReadonlyArray<string> = OptionTable.commandNames
