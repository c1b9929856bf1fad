/**
 * The quick entry of `list`, `show` and `delete`: these read or delete stored sessions and nothing else, so they
 * load the store and what prints (`commands/storeActions`), not the command-line parser, the servers, the cluster or
 * any provider. Only the plain forms are taken here (the options `--store`, `--json` and, for `show` and `delete`, an
 * id); anything else (a database, an option it does not know, a config file it cannot read plainly) is left to the
 * whole command line, which says what is wrong as it does for every command.
 */
import * as Variables from "@deep-research/providers/Environment"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as fs from "node:fs"
import * as StoreActions from "../../commands/storeActions.js"
import { configFileCandidates, credentialsFrom, homeOf } from "../config/credentials.js"
import { stderrLogger } from "../telemetry/logging.js"
import { commandSecrets, scrubbingOutput } from "../terminal/scrubbedStreams.js"
import { Exited } from "./exited.js"
import { describeFailure, failureCode } from "./failures.js"

/** The commands taken here. */
export const quickCommands: ReadonlyArray<string> = ["list", "show", "delete"]

/** A store command in its plain form, as parsed here. */
export interface Plain {
  readonly command: "list" | "show" | "delete"
  readonly id: string | undefined
  readonly store: string | undefined
  readonly json: boolean
}

/** The plain form of a store command, or undefined when the whole command line should take it. */
export const parsePlain = (args: ReadonlyArray<string>): Plain | undefined => {
  const [command, ...rest] = args
  if (command !== "list" && command !== "show" && command !== "delete") return undefined
  let store: string | undefined
  let json = false
  const positional: Array<string> = []
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i] ?? ""
    if (arg === "--json") json = true
    else if (arg === "--store" && i + 1 < rest.length) store = rest[++i]
    else if (arg.startsWith("--store=")) store = arg.slice("--store=".length)
    else if (arg.startsWith("-")) return undefined
    else positional.push(arg)
  }
  const [id] = positional
  const wantsId = command !== "list"
  if (positional.length !== (wantsId ? 1 : 0) || store === "") return undefined
  return { command, id: wantsId ? id : undefined, store, json }
}

/**
 * The store folder a config file names (`store`), read plainly; `null` when a file is there that this cannot read
 * plainly (the whole command line then reads it and says what is wrong with it).
 */
const configuredStore = (env: NodeJS.ProcessEnv): string | undefined | null => {
  for (const candidate of configFileCandidates(process.cwd(), env)) {
    if (!fs.existsSync(candidate)) continue
    try {
      const file: unknown = JSON.parse(fs.readFileSync(candidate, "utf8"))
      if (typeof file !== "object" || file === null || Array.isArray(file)) return null
      const store: unknown = Reflect.get(file, "store")
      return store === undefined ? undefined : typeof store === "string" && store.trim() !== "" ? store : null
    } catch {
      return null
    }
  }
  return undefined
}

/**
 * Runs a plain store command; the exit code, or undefined when the whole command line should run it. What it prints
 * (a session's question and report, a refusal naming the id it was given) is scrubbed of the secrets the environment
 * holds, as the whole command line's is.
 */
export const run = (args: ReadonlyArray<string>): Promise<number | undefined> => {
  const plain = parsePlain(args)
  const env = process.env
  const credentials = credentialsFrom(env)
  // A cluster's database brings its own queue and messages: the whole command line handles it.
  if (plain === undefined || credentials.databaseUrl !== undefined) return Promise.resolve(undefined)
  const fromFile = configuredStore(env)
  if (fromFile === null) return Promise.resolve(undefined)
  const storeDir = Variables.storeFolder([plain.store, env[Variables.home], fromFile], homeOf(env))
  const program = StoreActions.withStoreAt(storeDir, credentials, (sessions) =>
    plain.command === "list"
      ? StoreActions.list(sessions, credentials, plain.json)
      : plain.command === "show"
        ? StoreActions.show(sessions, credentials, plain.id ?? "", plain.json)
        : StoreActions.remove(sessions, credentials, plain.id ?? "")
  )
  const answered = program.pipe(
    Effect.provide(stderrLogger),
    Effect.exit,
    Effect.map((exit) => {
      if (Exit.isSuccess(exit)) return 0
      const failure = Cause.failureOption(exit.cause)
      if (failure._tag === "Some" && failure.value instanceof Exited) {
        process.stderr.write(`${failure.value.message}\n`)
        return failure.value.code
      }
      process.stderr.write(`${describeFailure(exit.cause)}\n`)
      return failureCode(exit.cause)
    })
  )
  return Effect.runPromise(scrubbingOutput(commandSecrets(env, args), answered))
}
