import { readdirSync, readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import type { ViteUserConfig } from "vitest/config"

const packagesDir = fileURLToPath(new URL("./packages", import.meta.url))
const setup = fileURLToPath(new URL("./vitest.setup.ts", import.meta.url))

type Alias = { readonly find: RegExp; readonly replacement: string }

const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")

/**
 * Each subpath a workspace package exports, resolved to its source rather than its build: `./dist/x/Y.js` is
 * `src/x/Y.ts`. Named subpaths first, then a wildcard (`./*`) where the package has one (never into `internal/`).
 */
const aliasesOf = (name: string): ReadonlyArray<Alias> => {
  const manifest: { readonly exports?: Record<string, { readonly default?: string } | null> } = JSON.parse(
    readFileSync(`${packagesDir}/${name}/package.json`, "utf8")
  )
  const source = (target: string) =>
    `${packagesDir}/${name}/${target.replace(/^\.\/dist\//, "src/").replace(/\.js$/, ".ts")}`
  const named: Array<Alias> = []
  const wildcards: Array<Alias> = []
  for (const [subpath, target] of Object.entries(manifest.exports ?? {})) {
    if (target?.default === undefined) continue
    const specifier = `@deep-research/${name}${subpath.slice(1)}`
    if (subpath.includes("*")) {
      const [before, after] = specifier.split("*") as [string, string]
      wildcards.push({
        find: new RegExp(`^${escape(before)}(?!internal/)(.+)${escape(after)}$`),
        replacement: source(target.default.replace("*", "$1"))
      })
    } else {
      named.push({ find: new RegExp(`^${escape(specifier)}$`), replacement: source(target.default) })
    }
  }
  return [...named, ...wildcards]
}

const packages = readdirSync(packagesDir, { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name)

/** Settings every package's vitest config starts from: workspace packages resolve to their sources. */
export const shared: ViteUserConfig = {
  resolve: { alias: packages.flatMap(aliasesOf) },
  test: {
    include: ["test/**/*.test.ts"],
    setupFiles: [setup],
    fakeTimers: { toFake: undefined },
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // A worker runs file after file in one process (see the root vitest.config.ts): a file leaves the process as it
    // found it (environment variables put back, servers and processes it started stopped).
    poolOptions: { forks: { isolate: false } }
  }
}
