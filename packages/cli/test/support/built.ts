/**
 * The tests that spawn the CLI run it as built (`dist`). The `cli-spawn` project builds the packages once, before its
 * files run, when they are missing or older than their sources (after `npm ci` they are built already), with a clear
 * message when the build fails: this module is its global setup. A spawning test elsewhere finds a stale build said,
 * not silently run (`checkBuilt`).
 */
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { fileURLToPath } from "node:url"
import { freshBundle } from "../../src/internal/commandLine/quickBundle.js"

const root = fileURLToPath(new URL("../../../..", import.meta.url))

/** Where the quick entry of list, show and delete is built into one file. */
export const quickFolder = nodePath.join(root, "packages/cli/dist/quick")
const packages = ["core", "emulator", "providers", "evaluation", "cli"]

const newestSource = (dir: string): number => {
  let newest = 0
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = nodePath.join(dir, entry.name)
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(full))
    else if (entry.name.endsWith(".ts")) newest = Math.max(newest, fs.statSync(full).mtimeMs)
  }
  return newest
}

/** What keeps `dist` from being the sources: packages never built, and packages changed since their build. */
const outOfDate = () => {
  const built = (name: string) => nodePath.join(root, "packages", name, "dist/.tsbuildinfo")
  const missing = packages.filter((name) => !fs.existsSync(built(name)))
  const stale = packages.filter(
    (name) =>
      fs.existsSync(built(name)) &&
      newestSource(nodePath.join(root, "packages", name, "src")) > fs.statSync(built(name)).mtimeMs
  )
  if (missing.length === 0 && stale.length === 0) return undefined
  return missing.length > 0
    ? `${missing.join(", ")} ${missing.length > 1 ? "are" : "is"} not built`
    : `${stale.join(", ")} changed since the last build`
}

/** Runs a build command of the workspace; what it printed when it failed. */
const build = (command: string, args: ReadonlyArray<string>) =>
  new Promise<string | undefined>((resolve) =>
    execFile(command, args, { cwd: root }, (error, stdout, stderr) =>
      resolve(error === null ? undefined : `${stdout}${stderr}${error.message}`)
    )
  )

/**
 * Builds the packages when they are missing or stale, then the quick entry of list, show and delete in one file when
 * it is older than its modules (as `npm run build` does), so that the spawned command is the one a user runs.
 */
export const ensureBuilt = async (): Promise<void> => {
  const reason = outOfDate()
  if (reason !== undefined) {
    const output = await build(nodePath.join(root, "node_modules/.bin/tsc"), ["-b"])
    if (output !== undefined) {
      throw new Error(`The tests that spawn the CLI run it built, and ${reason}; \`npx tsc -b\` failed:\n${output}`)
    }
    if (!fs.existsSync(nodePath.join(root, "packages/cli/dist/main.js"))) {
      throw new Error("packages/cli/dist/main.js is missing after `npx tsc -b`: run `npm ci` (it builds everything)")
    }
  }
  if (freshBundle(quickFolder) !== undefined) return
  const output = await build(process.execPath, [nodePath.join(root, "packages/cli/quick/build.mjs")])
  if (output !== undefined) throw new Error(`\`node packages/cli/quick/build.mjs\` failed:\n${output}`)
}

let checked = false

/** Fails, saying what to do, when the built CLI is not the sources: checked once a process. */
export const checkBuilt = (): void => {
  if (checked) return
  const reason = outOfDate()
  if (reason !== undefined) {
    throw new Error(
      `This test spawns the built CLI, and ${reason}: run \`npx tsc -b\`, or name the file *.spawn.test.ts ` +
        "(the cli-spawn project builds before its tests run)."
    )
  }
  checked = true
}

/** The `cli-spawn` project's global setup. */
export default ensureBuilt
