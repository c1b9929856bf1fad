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

const root = fileURLToPath(new URL("../../../..", import.meta.url))
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

/** Builds the packages when they are missing or stale. */
export const ensureBuilt = async (): Promise<void> => {
  const reason = outOfDate()
  if (reason === undefined) return
  const output = await new Promise<string | undefined>((resolve) =>
    execFile(nodePath.join(root, "node_modules/.bin/tsc"), ["-b"], { cwd: root }, (error, stdout) =>
      resolve(error === null ? undefined : `${stdout}${error.message}`)
    )
  )
  if (output !== undefined) {
    throw new Error(`The tests that spawn the CLI run it built, and ${reason}; \`npx tsc -b\` failed:\n${output}`)
  }
  if (!fs.existsSync(nodePath.join(root, "packages/cli/dist/main.js"))) {
    throw new Error("packages/cli/dist/main.js is missing after `npx tsc -b`: run `npm ci` (it builds everything)")
  }
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
