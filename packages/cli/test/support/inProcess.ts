/**
 * The `deep-research` command line run in this process, as `main` runs it, with what it prints captured: for the
 * tests of a command's own behaviour, which need no separate process (the end-to-end tests spawn the built CLI).
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { Exited, run } from "../../src/Commands.js"

/** What a command printed and how it ended: its exit code (0 when it succeeded) and its message when it failed. */
export interface Ran {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/** A temporary folder, removed when the test process ends. */
export const tempDir = (prefix = "deep-research-cli-"): string => {
  const dir = fs.mkdtempSync(nodePath.join(os.tmpdir(), prefix))
  process.once("exit", () => fs.rmSync(dir, { recursive: true, force: true }))
  return dir
}

/** Runs `deep-research <args>` here; one at a time, since what it prints is taken from this process's streams. */
export const cli = (args: ReadonlyArray<string>): Promise<Ran> => {
  let stdout = ""
  let stderr = ""
  const out = process.stdout.write.bind(process.stdout)
  const err = process.stderr.write.bind(process.stderr)
  const capture =
    (append: (text: string) => void) =>
    (chunk: string | Uint8Array, ...rest: Array<unknown>): boolean => {
      append(typeof chunk === "string" ? chunk : Buffer.from(chunk).toString("utf8"))
      const callback = rest.find((arg): arg is () => void => typeof arg === "function")
      callback?.()
      return true
    }
  process.stdout.write = capture((text) => (stdout += text))
  process.stderr.write = capture((text) => (stderr += text))
  // Effect's Console writes through the global console, which the test runner takes over.
  const { error, log } = console
  console.log = (...parts: Array<unknown>) => void (stdout += `${parts.map(String).join(" ")}\n`)
  console.error = (...parts: Array<unknown>) => void (stderr += `${parts.map(String).join(" ")}\n`)
  return Effect.runPromiseExit(run(["node", "deep-research", ...args]).pipe(Effect.provide(NodeContext.layer)))
    .then((exit): Ran => {
      if (Exit.isSuccess(exit)) return { code: 0, stdout, stderr }
      const failure = Cause.failureOption(exit.cause)
      if (Option.isSome(failure) && failure.value instanceof Exited) {
        return { code: failure.value.code, stdout, stderr: `${stderr}${failure.value.message}\n` }
      }
      return { code: 1, stdout, stderr: `${stderr}${Cause.pretty(exit.cause)}\n` }
    })
    .finally(() => {
      process.stdout.write = out
      process.stderr.write = err
      console.log = log
      console.error = error
    })
}

/** A run's output for an assertion's message. */
export const describeRan = (ran: Ran): string =>
  `exit ${ran.code}\n--- stdout\n${ran.stdout.slice(-3000)}\n--- stderr\n${ran.stderr.slice(-3000)}`
