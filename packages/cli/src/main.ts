/**
 * The `deep-research` entry point: a question in first position means `run`; exit codes are 0 done, 1 research
 * failed, 2 usage or configuration error, 130 interrupted (Ctrl-C or SIGTERM: `NodeRuntime.runMain` interrupts the
 * program on both, and the run saves a checkpoint before it stops).
 */
import { CliConfig, ValidationError } from "@effect/cli"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as HeapGrowth from "./internal/HeapGrowth.js"
import * as SlicedScheduler from "./internal/SlicedScheduler.js"
import { Exited, optionNames, run, subcommands } from "./Commands.js"
import { stderrLogger } from "./internal/telemetry/logging.js"
import * as OtlpExport from "./OtlpExport.js"
import { describeFailure, failureCode } from "./internal/commandLine/failures.js"
import { closest, quickAnswer } from "./internal/commandLine/help.js"
import { unknownCommand } from "./internal/commandLine/commandWords.js"
import { commandSecrets, scrubbingOutput } from "./internal/terminal/scrubbedStreams.js"

const builtIns = new Set(["-h", "--help", "--version", "--wizard", "--completions", "--log-level"])

/** `deep-research "question" ...` is `deep-research run "question" ...`. */
export const normalizeArgs = (args: ReadonlyArray<string>): ReadonlyArray<string> => {
  const [first] = args
  if (first === undefined || subcommands.includes(first) || builtIns.has(first)) return args
  return ["run", ...args]
}

/** The options @effect/cli adds to every command. */
export const builtInOptions: ReadonlyArray<string> = ["help", "version", "wizard", "completions", "log-level"]

/**
 * Names an unknown option before the parser sees it: the parser would blame the next argument instead, which
 * confuses more than it helps.
 */
export const unknownOption = (args: ReadonlyArray<string>): string | undefined => {
  const [command, ...rest] = args
  const known = command === undefined ? undefined : optionNames[command]
  if (known === undefined) return undefined
  for (const arg of rest) {
    if (arg === "--") return undefined
    if (!arg.startsWith("--") || arg.length === 2) continue
    const name = arg.slice(2).split("=")[0] ?? ""
    if (known.includes(name) || builtInOptions.includes(name)) continue
    const suggestion = closest(name, known)
    return (
      `Unknown option --${name} for deep-research ${command}.` +
      (suggestion === undefined ? "" : ` Did you mean --${suggestion}?`) +
      `\nSee: deep-research ${command} --help`
    )
  }
  return undefined
}

const write = (stream: NodeJS.WriteStream, text: string) => Effect.sync(() => void stream.write(text))

/**
 * The command line, parsed and run; resolves to the exit code. Whatever it prints is scrubbed of the secrets it holds
 * (`scrubbedStreams.ts`).
 */
export const program = (args: ReadonlyArray<string>) =>
  Effect.suspend(() => scrubbingOutput(commandSecrets(process.env, args), unscrubbed(args)))

const unscrubbed = (args: ReadonlyArray<string>) => {
  const quick = quickAnswer(args)
  if (quick !== undefined) return Effect.as(write(process.stdout, quick), 0)
  // A single word where a command goes is a mistyped command, not a question (`commandWords`).
  const mistyped = unknownCommand(args, subcommands, builtIns)
  if (mistyped !== undefined) return Effect.as(write(process.stderr, `${mistyped}\n`), 2)
  const normalized = normalizeArgs(args)
  const unknown = unknownOption(normalized)
  if (unknown !== undefined) return Effect.as(write(process.stderr, `${unknown}\n`), 2)
  return run(["node", "deep-research", ...normalized]).pipe(
    Effect.as(0),
    Effect.catchIf(
      (error): error is Exited => error instanceof Exited,
      (error) => Effect.as(write(process.stderr, `${error.message}\n`), error.code)
    ),
    // The parser has printed what is wrong; this says where to look.
    Effect.catchIf(ValidationError.isValidationError, (error) =>
      ValidationError.isHelpRequested(error)
        ? Effect.succeed(0)
        : Effect.as(
            write(
              process.stderr,
              `See: deep-research${normalized[0] !== undefined && subcommands.includes(normalized[0]) ? ` ${normalized[0]}` : ""} --help\n`
            ),
            2
          )
    ),
    // Traces and metrics go out when the environment asks (OTEL_EXPORTER_OTLP_ENDPOINT); released, it flushes them.
    Effect.provide(OtlpExport.layer),
    // Anything else (a store that cannot be read or made, a defect) is one line on stderr, never a stack.
    Effect.catchAllCause((cause) =>
      Cause.isInterruptedOnly(cause)
        ? Effect.failCause(cause)
        : Effect.as(write(process.stderr, `${describeFailure(cause)}\n`), failureCode(cause))
    ),
    Effect.provide(stderrLogger),
    // Each command's help lists its own options, without the parser's built-in ones and type names.
    Effect.provide(CliConfig.layer({ showBuiltIns: false, showTypes: false })),
    Effect.provide(NodeContext.layer)
  )
}

/** Runs the CLI on `process.argv` and exits with its code. */
export const main = (): void => {
  const args = process.argv.slice(2)
  NodeRuntime.runMain(
    Effect.flatMap(program(args), (code) => Effect.sync(() => void (process.exitCode = code))).pipe(
      // A process holding many sessions keeps about twice what is alive, not up to four times.
      HeapGrowth.limited(),
      // Timers and sockets served between slices of the sessions' work, not behind all of it.
      SlicedScheduler.withSlices()
    ),
    {
      disableErrorReporting: false,
      // Log lines go to stderr (see `stderrLogger`), never to stdout.
      disablePrettyLogger: true,
      teardown: (exit, onExit) => {
        if (Exit.isSuccess(exit)) return onExit(typeof process.exitCode === "number" ? process.exitCode : 0)
        onExit(Cause.isInterruptedOnly(exit.cause) ? 130 : 1)
      }
    }
  )
}
