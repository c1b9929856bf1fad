/**
 * The end-to-end tests run the built CLI: the packages are built when they are missing or older than their sources
 * (after \`npm ci\` they are built already), with a clear message when the build fails.
 */
import { execFileSync } from "node:child_process"
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

/** The CLI as built; rebuilt when a package's sources are newer than its last build. */
/** Builds the packages when they are missing or stale. */
export const ensureBuilt = () => {
  const built = (name: string) => nodePath.join(root, "packages", name, "dist/.tsbuildinfo")
  const missing = packages.filter((name) => !fs.existsSync(built(name)))
  const stale = packages.filter(
    (name) =>
      fs.existsSync(built(name)) &&
      newestSource(nodePath.join(root, "packages", name, "src")) > fs.statSync(built(name)).mtimeMs
  )
  if (missing.length === 0 && stale.length === 0) return
  try {
    execFileSync(nodePath.join(root, "node_modules/.bin/tsc"), ["-b"], { cwd: root, stdio: "pipe" })
  } catch (error) {
    const output = error instanceof Error && "stdout" in error ? String(error.stdout) : String(error)
    throw new Error(
      `The end-to-end tests run the built CLI, and ${missing.length > 0 ? `${missing.join(", ")} ${missing.length > 1 ? "are" : "is"} not built` : `${stale.join(", ")} changed since the last build`}; ` +
        `\`npx tsc -b\` failed:\n${output}`
    )
  }
  if (!fs.existsSync(nodePath.join(root, "packages/cli/dist/main.js"))) {
    throw new Error("packages/cli/dist/main.js is missing after `npx tsc -b`: run `npm ci` (it builds everything)")
  }
}
