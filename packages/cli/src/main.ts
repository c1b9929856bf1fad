/**
 * The `deep-research` entry point: a question in first position means `run`; exit codes are 0 done, 1 research
 * failed, 2 usage or configuration error, 130 interrupted.
 */
import { ValidationError } from "@effect/cli"
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { Exited, run, subcommands } from "./Commands.js"

const builtIns = new Set(["-h", "--help", "--version", "--wizard", "--completions", "--log-level"])

/** `deep-research "question" ...` is `deep-research run "question" ...`. */
export const normalizeArgs = (args: ReadonlyArray<string>): ReadonlyArray<string> => {
  const [first] = args
  if (first === undefined || subcommands.includes(first) || builtIns.has(first)) return args
  return ["run", ...args]
}

/** Runs the CLI on `process.argv` and exits with its code. */
export const main = (): void => {
  const [node = "node", script = "deep-research", ...args] = process.argv
  const program = run([node, script, ...normalizeArgs(args)]).pipe(
    Effect.catchIf(
      (error): error is Exited => error instanceof Exited,
      (error) =>
        Effect.sync(() => {
          process.stderr.write(`${error.message}\n`)
          process.exitCode = error.code
        })
    ),
    Effect.catchIf(ValidationError.isValidationError, () => Effect.sync(() => void (process.exitCode = 2))),
    Effect.provide(NodeContext.layer)
  )
  NodeRuntime.runMain(program, {
    disableErrorReporting: false,
    teardown: (exit, onExit) => {
      if (Exit.isSuccess(exit)) return onExit(typeof process.exitCode === "number" ? process.exitCode : 0)
      onExit(Cause.isInterruptedOnly(exit.cause) ? 130 : 1)
    }
  })
}
