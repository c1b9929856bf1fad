/**
 * The terminal as the pipeline's `UserInput`: a clarifying question asked on stderr and answered on stdin, for a run
 * in a terminal (`runSession`).
 */
import { Errors, type UserInput } from "@deep-research/core"
import * as Effect from "effect/Effect"
import * as readline from "node:readline/promises"
import { printableLine } from "./printable.js"

/** Asks on the terminal; an empty answer or a closed input declines. */
export const userInput: UserInput.Service = {
  ask: (question) =>
    Effect.acquireUseRelease(
      Effect.sync(() => {
        const rl = readline.createInterface({ input: process.stdin, output: process.stderr })
        // The prompt reads the terminal raw, so Ctrl-C arrives as input: pass it on as the signal it means, so the
        // run is interrupted (and resumable) as it would be at any other moment.
        rl.on("SIGINT", () => process.kill(process.pid, "SIGINT"))
        return rl
      }),
      (rl) =>
        Effect.tryPromise({
          try: (signal) => rl.question(`\n${printableLine(question)}\n> `, { signal }),
          catch: () => new Errors.ResearchInvalidInput({ reason: "no answer was given" })
        }).pipe(
          Effect.flatMap((answer) =>
            answer.trim() === ""
              ? Effect.fail(new Errors.ResearchInvalidInput({ reason: "no answer was given" }))
              : Effect.succeed(answer.trim())
          )
        ),
      (rl) => Effect.sync(() => rl.close())
    )
}
