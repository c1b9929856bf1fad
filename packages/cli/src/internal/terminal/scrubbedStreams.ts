/**
 * Every byte a command prints passes the secret scrubber: the live view, the plain lines, `--json`'s events, the
 * report summary, warnings and log lines, a failure's message, and the MCP server's messages on stdout. The secrets
 * are those of the environment (the keys, the API token, the database's URL) and a `--database` given on the command
 * line. One place for all, so that no line a later change prints can forget it: the whole command line (`main.ts`)
 * and the quick entry of `list`, `show` and `delete` (`storeCommandLine.ts`, which must not load `CliConfig`).
 */
import * as Secrets from "@deep-research/providers/Secrets"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import { credentialsFrom, secretsIn } from "../config/credentials.js"

/** The secrets a command holds: the environment's, and a database URL given as an argument. */
export const commandSecrets = (
  env: Readonly<Record<string, string | undefined>>,
  args: ReadonlyArray<string>
): ReadonlyArray<Redacted.Redacted<string>> => {
  const given = args.flatMap((arg, i) =>
    arg === "--database" ? [args[i + 1] ?? ""] : arg.startsWith("--database=") ? [arg.slice("--database=".length)] : []
  )
  return [...secretsIn(credentialsFrom(env)), ...given.filter((url) => url !== "").map(Redacted.make)]
}

type Write = NodeJS.WriteStream["write"]

/** Replaces a stream's `write` with one that scrubs text before it goes; the restore puts the one before back. */
const wrap = (stream: NodeJS.WriteStream, scrub: (text: string) => string): (() => void) => {
  const original: Write = stream.write
  const scrubbing = function (this: unknown, chunk: unknown, ...rest: Array<unknown>): boolean {
    const text =
      typeof chunk === "string" ? chunk : chunk instanceof Uint8Array ? Buffer.from(chunk).toString("utf8") : undefined
    const clean = text === undefined ? undefined : scrub(text)
    const out = clean === undefined || clean === text ? chunk : clean
    // The stream's own write, with its encoding and callback as given.
    return Reflect.apply(original, stream, [out, ...rest])
  }
  Reflect.set(stream, "write", scrubbing)
  return () => {
    if (Reflect.get(stream, "write") === scrubbing) Reflect.set(stream, "write", original)
  }
}

/** Runs `effect` with stdout and stderr scrubbed of these secrets; they are as they were once it ends. */
export const scrubbingOutput = <A, E, R>(
  secrets: ReadonlyArray<Redacted.Redacted<string>>,
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> => {
  const scrub = Secrets.scrubber(secrets)
  return Effect.acquireUseRelease(
    Effect.sync(() => [wrap(process.stdout, scrub), wrap(process.stderr, scrub)]),
    () => effect,
    (restores) => Effect.sync(() => restores.forEach((restore) => restore()))
  )
}
