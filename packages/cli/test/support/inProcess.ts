/**
 * The `deep-research` command run inside the test process: `main.ts`'s program on the arguments given, in a working
 * folder and an environment of the test's own (nothing of this process's but `PATH`), with what it writes captured:
 * the process's stdout and stderr, its log lines and Effect's `Console`. It resolves to the exit code the command
 * would exit with.
 *
 * Tests of what the command says and does use this: it proves what a spawned process would, without starting one.
 * The built CLI is spawned (`builtCli.ts`, in `*.spawn.test.ts` files) only where the process itself is under test:
 * signals, its exit, its stdin, a runner killed, the package as installed.
 *
 * The environment, the working folder and the streams belong to the process: one command runs at a time, and
 * everything is put back when it ends.
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import { Console } from "node:console"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { program } from "../../src/main.js"

/** What a command ended with, as a spawned one would report it. */
export interface Ran {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

export interface Options {
  /** The working folder (where the command looks for a project's configuration file). */
  readonly cwd: string
  /** The command's environment, besides `PATH`. */
  readonly env: Readonly<Record<string, string>>
}

/** A command running in this process, with what it has written so far. */
export interface Running {
  readonly output: () => { readonly stdout: string; readonly stderr: string }
  /** Interrupts the command, as Ctrl-C would, and waits for it to end. */
  readonly interrupt: () => Promise<Ran>
  readonly done: Promise<Ran>
}

/** Variables of this process a command keeps: where programs are, and vitest's own (its worker reads them). */
const kept = (name: string) => name === "PATH" || name.startsWith("VITEST") || name === "TEST" || name === "NODE_ENV"

let busy = false

const swapEnvironment = (env: Readonly<Record<string, string>>) => {
  const saved = { ...process.env }
  for (const name of Object.keys(process.env)) if (!kept(name)) delete process.env[name]
  Object.assign(process.env, env)
  return () => {
    for (const name of Object.keys(process.env)) delete process.env[name]
    Object.assign(process.env, saved)
  }
}

const capture = (stream: NodeJS.WriteStream, sink: (text: string) => void) => {
  const original = Reflect.get(stream, "write")
  Reflect.set(stream, "write", (chunk: unknown, encoding?: unknown, callback?: unknown) => {
    sink(typeof chunk === "string" ? chunk : Buffer.isBuffer(chunk) ? chunk.toString("utf8") : String(chunk))
    const done = typeof encoding === "function" ? encoding : callback
    if (typeof done === "function") process.nextTick(() => done())
    return true
  })
  return () => void Reflect.set(stream, "write", original)
}

/** Starts `deep-research ...args`; it runs until it ends or is interrupted. */
export const start = (args: ReadonlyArray<string>, options: Options): Running => {
  if (busy) throw new Error("inProcess: one command at a time (the environment and streams are the process's)")
  busy = true
  let stdout = ""
  let stderr = ""
  const restore = [
    swapEnvironment({ PATH: process.env["PATH"] ?? "", ...options.env }),
    capture(process.stdout, (text) => (stdout += text)),
    capture(process.stderr, (text) => (stderr += text))
  ]
  const cwd = process.cwd()
  process.chdir(options.cwd)
  const console = globalThis.console
  globalThis.console = new Console({ stdout: process.stdout, stderr: process.stderr })
  const fiber = Effect.runFork(program(args))
  const done = Effect.runPromise(Fiber.await(fiber)).then((exit) => {
    globalThis.console = console
    process.chdir(cwd)
    for (const undo of restore.reverse()) undo()
    busy = false
    // As `main` exits: the program's code, 130 when interrupted, 1 (and the cause, as Node prints it) on a defect.
    if (Exit.isSuccess(exit)) return { code: exit.value, stdout, stderr }
    if (Cause.isInterruptedOnly(exit.cause)) return { code: 130, stdout, stderr }
    return { code: 1, stdout, stderr: `${stderr}${Cause.pretty(exit.cause)}\n` }
  })
  return {
    output: () => ({ stdout, stderr }),
    interrupt: () => Effect.runPromise(Fiber.interrupt(fiber)).then(() => done),
    done
  }
}

/** Runs `deep-research ...args` to its end. */
export const run = (args: ReadonlyArray<string>, options: Options): Promise<Ran> => start(args, options).done

/** Runs `deep-research ...args` to its end in this process's own environment and working folder. */
export const cli = (args: ReadonlyArray<string>): Promise<Ran> =>
  run(args, {
    cwd: process.cwd(),
    env: Object.fromEntries(
      Object.entries(process.env).filter((entry): entry is [string, string] => entry[1] !== undefined)
    )
  })

/** A temporary folder, removed when the test process ends. */
export const tempDir = (prefix = "deep-research-cli-"): string => {
  const dir = fs.mkdtempSync(nodePath.join(os.tmpdir(), prefix))
  process.once("exit", () => fs.rmSync(dir, { recursive: true, force: true }))
  return dir
}

/** A run's output for an assertion's message. */
export const describeRan = (ran: Ran): string =>
  `exit ${ran.code}\n--- stdout\n${ran.stdout.slice(-3000)}\n--- stderr\n${ran.stderr.slice(-3000)}`
