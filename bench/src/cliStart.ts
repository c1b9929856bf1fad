/**
 * Benchmark 6: the CLI's cold start, `deep-research --help` in a new Node process each time (the files in the page
 * cache, as on any second run), next to `deep-research list` on an empty store (which loads the whole CLI, providers
 * included) and a bare `node -e ""` for Node's own start-up. Median of 10 runs after one
 * unmeasured run. Usage: node bench/dist/cliStart.js
 */
import { spawnSync } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { performance } from "node:perf_hooks"
import { fileURLToPath } from "node:url"
import * as Measure from "./Measure.js"

const runs = 10
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..")
const bin = path.join(root, "packages", "cli", "bin", "deep-research.js")

const timeCommand = (args: ReadonlyArray<string>) => {
  const times: Array<number> = []
  let failure: string | undefined
  for (let i = 0; i <= runs; i++) {
    const start = performance.now()
    const result = spawnSync(process.execPath, args, { cwd: root, encoding: "utf8", env: { ...process.env } })
    const millis = performance.now() - start
    if (result.status !== 0) {
      failure = `exit ${String(result.status)}: ${(result.stderr || result.stdout).slice(0, 500)}`
      break
    }
    if (i > 0) times.push(millis)
  }
  return failure !== undefined
    ? { runnable: false as const, failure }
    : {
        runnable: true as const,
        medianMillis: Measure.round(Measure.median(times), 0),
        minMillis: Measure.round(Math.min(...times), 0),
        maxMillis: Measure.round(Math.max(...times), 0)
      }
}

const help = timeCommand([bin, "--help"])
// `--help` is answered before the rest of the CLI loads; `list` over an empty store loads all of it.
const emptyStore = mkdtempSync(path.join(os.tmpdir(), "deep-research-bench-cli-"))
const list = timeCommand([bin, "list", "--store", emptyStore])
rmSync(emptyStore, { recursive: true, force: true })
const output = spawnSync(process.execPath, [bin, "--help"], { cwd: root, encoding: "utf8" }).stdout
const result = {
  benchmark: "cliStart",
  machine: Measure.machine(),
  runs,
  command: "node packages/cli/bin/deep-research.js --help",
  help,
  helpMentionsCommand: output.includes("deep-research"),
  listCommand: "node packages/cli/bin/deep-research.js list --store <an empty folder>",
  list,
  nodeBaseline: timeCommand(["-e", ""])
}
process.stdout.write(`${JSON.stringify(result, null, 2)}\n`)
