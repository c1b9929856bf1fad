/**
 * Benchmark 6: the CLI's cold start, each command a new Node process timed from outside (its start-up included):
 * `deep-research --help`, `list`, `show <id>` and `delete <an unknown id>` on a store of three simulated sessions, `list`
 * on an empty store, the same `list` through the compiled modules of its quick entry rather than the one file the bin
 * runs (`packages/cli/quick/build.mjs`), and a bare `node -e ""` for Node's own start. Wall and CPU (user + system, the
 * child's own accounting) are the medians of 10 runs after one unmeasured run: on a busy machine, CPU is the figure that
 * holds. Usage: node bench/dist/cliStart.js
 */
import { spawnSync } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { performance } from "node:perf_hooks"
import { fileURLToPath, pathToFileURL } from "node:url"
import * as Measure from "./Measure.js"

const runs = 10
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..")
const bin = path.join(root, "packages", "cli", "bin", "deep-research.js")
const sandbox = mkdtempSync(path.join(os.tmpdir(), "deep-research-bench-cli-"))
const env = { ...process.env, HOME: path.join(sandbox, "home"), DEEP_RESEARCH_HOME: path.join(sandbox, "store") }

const timeCommand = (args: ReadonlyArray<string>, expectedStatus = 0) => {
  const wall: Array<number> = []
  const cpu: Array<number> = []
  let failure: string | undefined
  for (let i = 0; i <= runs; i++) {
    const cpuBefore = Measure.childrenCpu()
    const start = performance.now()
    const result = spawnSync(process.execPath, args, { cwd: sandbox, encoding: "utf8", env })
    const millis = performance.now() - start
    const cpuAfter = Measure.childrenCpu()
    if (result.status !== expectedStatus) {
      failure = `exit ${String(result.status)}: ${(result.stderr || result.stdout).slice(0, 500)}`
      break
    }
    if (i === 0) continue
    wall.push(millis)
    if (cpuBefore !== undefined && cpuAfter !== undefined) cpu.push(cpuAfter - cpuBefore)
  }
  return failure !== undefined
    ? { runnable: false as const, failure }
    : {
        runnable: true as const,
        medianMillis: Measure.round(Measure.median(wall), 0),
        minMillis: Measure.round(Math.min(...wall), 0),
        maxMillis: Measure.round(Math.max(...wall), 0),
        // In steps of 10 ms (Linux's clock ticks).
        medianCpuMillis: cpu.length === 0 ? undefined : Measure.round(Measure.median(cpu), 0)
      }
}

/** The bin's quick path for the store commands, but through the compiled modules of the quick entry. */
const compiledEntry = (args: ReadonlyArray<string>) => {
  const entry = pathToFileURL(path.join(root, "packages/cli/dist/internal/commandLine/storeCommandLine.js")).href
  const help = pathToFileURL(path.join(root, "packages/cli/dist/internal/commandLine/help.js")).href
  const script =
    `(await import("node:module")).enableCompileCache?.(); (await import(${JSON.stringify(help)})).quickAnswer([]);` +
    `process.exitCode = await (await import(${JSON.stringify(entry)})).run(${JSON.stringify(args)})`
  return ["--input-type=module", "-e", script]
}

const help = timeCommand([bin, "--help"])
const emptyStore = path.join(sandbox, "empty")
const emptyList = timeCommand([bin, "list", "--store", emptyStore])
// Three simulated sessions, made once (not timed).
for (const question of ["How do heat pumps work?", "Why is the sky blue?", "How do tides work?"]) {
  const made = spawnSync(
    process.execPath,
    [bin, "--simulate", "--no-clarify", "--out", path.join(sandbox, "report.md"), question],
    { cwd: sandbox, encoding: "utf8", env }
  )
  if (made.status !== 0) throw new Error(`a simulated run failed: ${made.stderr.slice(0, 500)}`)
}
const listed = spawnSync(process.execPath, [bin, "list", "--json"], { cwd: sandbox, encoding: "utf8", env })
const id = String(JSON.parse(listed.stdout.split("\n")[0] ?? "{}").id)
const result = {
  benchmark: "cliStart",
  machine: Measure.machine(),
  runs,
  command: "node packages/cli/bin/deep-research.js --help",
  help,
  store: "three simulated sessions",
  list: timeCommand([bin, "list"]),
  show: timeCommand([bin, "show", id]),
  deleteUnknown: timeCommand([bin, "delete", "dr-unknown"], 2),
  listCompiledModules: timeCommand(compiledEntry(["list"])),
  listEmptyStore: emptyList,
  nodeBaseline: timeCommand(["-e", ""])
}
rmSync(sandbox, { recursive: true, force: true })
process.stdout.write(`${JSON.stringify(result, null, 2)}\n`)
