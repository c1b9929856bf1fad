/**
 * A PostgreSQL server of its own for a test that stops the database and starts it again: a throwaway cluster made by
 * the system's `initdb` (Debian's `/usr/lib/postgresql/<version>/bin`, which `.ci/run` installs) in a temporary
 * folder, served on a free loopback port with trust authentication, its socket in that folder too. A server another
 * test or a user relies on is never stopped. Run as the `postgres` user when this process is root (PostgreSQL refuses
 * to run as root); removed, server and folder, when the scope closes.
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { freePort } from "./builtCli.js"

/** A server this test owns: its URL, and how to stop it and start it again on the same port. */
export interface Server {
  readonly url: string
  /** Stops the server (`pg_ctl stop -m fast`): every connection is closed, new ones refused. */
  readonly stop: Effect.Effect<void, Error>
  /** Starts it again, on the same port and data folder, and returns once it accepts connections. */
  readonly start: Effect.Effect<void, Error>
}

/** The folder of the newest PostgreSQL's programs on this machine. */
const binaries = (): string => {
  const base = "/usr/lib/postgresql"
  const versions = fs.existsSync(base)
    ? fs
        .readdirSync(base)
        .filter((version) => fs.existsSync(nodePath.join(base, version, "bin/pg_ctl")))
        .sort((a, b) => Number(a) - Number(b))
    : []
  const newest = versions.at(-1)
  if (newest === undefined) {
    throw new Error(`no PostgreSQL programs in ${base}/<version>/bin (apt-get install postgresql, as .ci/run does)`)
  }
  return nodePath.join(base, newest, "bin")
}

/** Runs a PostgreSQL program, as the `postgres` user when this process is root; fails with what it printed. */
const program = (bin: string, name: string, args: ReadonlyArray<string>) =>
  Effect.async<void, Error>((resume) => {
    const asRoot = process.getuid?.() === 0
    const [command, commandArgs] = asRoot
      ? ["runuser", ["-u", "postgres", "--", nodePath.join(bin, name), ...args]]
      : [nodePath.join(bin, name), [...args]]
    execFile(command, commandArgs, { timeout: 120_000 }, (error, stdout, stderr) =>
      resume(
        error === null
          ? Effect.void
          : Effect.fail(new Error(`${name} ${args.join(" ")} failed: ${error.message}\n${stdout}\n${stderr}`))
      )
    )
  })

/** A fresh PostgreSQL server for the life of the scope. */
export const make: Effect.Effect<Server, Error, Scope.Scope> = Effect.gen(function* () {
  const bin = yield* Effect.try({ try: binaries, catch: (error) => new Error(String(error)) })
  const folder = yield* Effect.acquireRelease(
    Effect.sync(() => fs.mkdtempSync(nodePath.join(os.tmpdir(), "deep-research-pg-"))),
    (folder) => Effect.sync(() => fs.rmSync(folder, { recursive: true, force: true }))
  )
  if (process.getuid?.() === 0) {
    const uid = Number(yield* Effect.promise(() => idOf("-u")))
    const gid = Number(yield* Effect.promise(() => idOf("-g")))
    fs.chownSync(folder, uid, gid)
  }
  const data = nodePath.join(folder, "data")
  const port = yield* Effect.promise(freePort)
  yield* program(bin, "initdb", ["-D", data, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8"])
  const options = [
    `-p ${port}`,
    `-k ${folder}`,
    "-c listen_addresses=127.0.0.1",
    // A test's database: nothing here needs to survive a power cut, and the machine is shared.
    "-c fsync=off",
    "-c max_connections=200"
  ].join(" ")
  const start = program(bin, "pg_ctl", ["start", "-w", "-t", "60", "-D", data, "-l", `${folder}/log`, "-o", options])
  const stop = program(bin, "pg_ctl", ["stop", "-w", "-t", "60", "-m", "fast", "-D", data])
  yield* Effect.acquireRelease(start, () =>
    program(bin, "pg_ctl", ["stop", "-w", "-m", "immediate", "-D", data]).pipe(Effect.ignore)
  )
  return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, stop, start }
})

/** The `postgres` user's id (`-u`) or group (`-g`). */
const idOf = (which: "-u" | "-g") =>
  new Promise<string>((resolve, reject) =>
    execFile("id", [which, "postgres"], (error, stdout) => (error === null ? resolve(stdout.trim()) : reject(error)))
  )
