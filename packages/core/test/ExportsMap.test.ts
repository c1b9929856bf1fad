// The exports map of each library package is its public API and nothing else: no wildcard that opens phases/,
// prompts/ or internal/ by accident, every module of the index importable by its own name, and no other.
import { assert, describe, it } from "@effect/vitest"
import { existsSync, readFileSync } from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const packages = fileURLToPath(new URL("../../", import.meta.url))

const manifestOf = (name: string): { readonly exports: Record<string, { readonly default: string } | null> } =>
  JSON.parse(readFileSync(path.join(packages, name, "package.json"), "utf8"))

/** The modules the index exports, by name, and the source file of each. */
const indexModules = (name: string): ReadonlyMap<string, string> =>
  new Map(
    [
      ...readFileSync(path.join(packages, name, "src/index.ts"), "utf8").matchAll(
        /^export \* as (\w+) from "\.\/([\w/]+)\.js"/gm
      )
    ].map(([, module, file]) => [module ?? "", `src/${file}.ts`])
  )

describe("the exports maps", () => {
  for (const name of ["core", "providers", "emulator", "evaluation"]) {
    it(`${name}: every subpath is a module of the index by its name, and every module of the index has one`, () => {
      const exports = manifestOf(name).exports
      const modules = indexModules(name)
      const subpaths = Object.keys(exports).filter((subpath) => subpath !== "." && subpath !== "./testing")
      for (const subpath of subpaths) {
        assert.notInclude(subpath, "*")
        const target = exports[subpath]?.default ?? ""
        const source = target.replace(/^\.\/dist\//, "src/").replace(/\.js$/, ".ts")
        assert.isTrue(existsSync(path.join(packages, name, source)), `${subpath} -> ${source}`)
        assert.strictEqual(modules.get(subpath.slice(2)), source, subpath)
      }
      for (const module of modules.keys()) {
        assert.include(subpaths, `./${module}`, `${module} of the index has no subpath`)
      }
    })
  }
})
