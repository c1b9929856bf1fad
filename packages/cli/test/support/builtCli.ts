/**
 * The built `deep-research` command, spawned as a user (or an operator starting workers) would run it: for what only
 * a process of its own shows (signals, its exit, its stdin, a runner killed). Files that use it are named
 * `*.spawn.test.ts`: their project builds `dist` first when the sources changed (`built.ts`). A test of what the
 * command says and does runs it in the test process instead (`inProcess.ts`).
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as nodePath from "node:path"
import { fileURLToPath } from "node:url"
import { checkBuilt } from "./built.js"

const root = fileURLToPath(new URL("../../../..", import.meta.url))
export const bin = nodePath.join(root, "packages/cli/bin/deep-research.js")

/** A temporary home and working folder, and an environment with nothing of the real one but `PATH`. */
export interface Sandbox {
  readonly dir: string
  readonly env: Record<string, string>
}

export const sandbox = (env: Record<string, string> = {}): Sandbox => {
  const dir = fs.mkdtempSync(nodePath.join(os.tmpdir(), "deep-research-cluster-"))
  const home = nodePath.join(dir, "home")
  fs.mkdirSync(home)
  return {
    dir,
    env: {
      PATH: process.env["PATH"] ?? "",
      HOME: home,
      DEEP_RESEARCH_HOME: nodePath.join(dir, "store"),
      NO_COLOR: "1",
      ...env
    }
  }
}

export interface Finished {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
}

/** A running CLI process, with what it has printed so far. */
export interface Running {
  readonly child: ChildProcess
  readonly output: () => { readonly stdout: string; readonly stderr: string }
  readonly done: Promise<Finished>
}

/** Starts the CLI. */
export const start = (box: Sandbox, args: ReadonlyArray<string>, env: Record<string, string> = {}): Running => {
  checkBuilt()
  const child = spawn(process.execPath, [bin, ...args], {
    cwd: box.dir,
    env: { ...box.env, ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let stdout = ""
  let stderr = ""
  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk))
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
  const done = new Promise<Finished>((resolve, reject) => {
    child.on("error", reject)
    child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr }))
  })
  return { child, output: () => ({ stdout, stderr }), done }
}

/** Runs the CLI to its end with `input` on its stdin, which is then closed (a script piping a file in). */
export const runWithInput = (
  box: Sandbox,
  args: ReadonlyArray<string>,
  input: string,
  env: Record<string, string> = {}
): Promise<Finished> => {
  checkBuilt()
  const child = spawn(process.execPath, [bin, ...args], { cwd: box.dir, env: { ...box.env, ...env }, stdio: "pipe" })
  let stdout = ""
  let stderr = ""
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk))
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
  child.stdin.end(input)
  return new Promise<Finished>((resolve, reject) => {
    child.on("error", reject)
    child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr }))
  })
}

/** Runs the CLI to its end. */
export const run = (box: Sandbox, args: ReadonlyArray<string>, env: Record<string, string> = {}): Promise<Finished> =>
  start(box, args, env).done

export const describeRun = (result: Finished) =>
  `exit ${result.code} (signal ${result.signal})\n--- stdout\n${result.stdout.slice(-3000)}\n--- stderr\n${result.stderr.slice(-3000)}`

/** A loopback port free now, for a process to listen on. */
export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = net.createServer()
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
    server.on("error", reject)
  })
