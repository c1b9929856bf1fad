/**
 * What a user installs: each published package declares, as a dependency, every package its shipped code imports (its
 * sources and its `bin`), and nothing else but the peers those need. A package missing from `dependencies` breaks an
 * install that does not hoist the workspace's copy; one listed there and never used is downloaded by every user for
 * nothing (the providers once shipped a test-input generator that way, the CLI a driver only its tests import).
 */
import { describe, expect, it } from "@effect/vitest"
import { builtinModules } from "node:module"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..")
const packages = ["core", "emulator", "providers", "evaluation", "cli"] as const

/** Every file under `folder` whose name ends with one of `extensions`. */
const filesUnder = (folder: string, extensions: ReadonlyArray<string>): Array<string> =>
  fs.existsSync(folder)
    ? fs
        .readdirSync(folder, { withFileTypes: true, recursive: true })
        .flatMap((entry) =>
          entry.isFile() && extensions.some((extension) => entry.name.endsWith(extension))
            ? [path.join(entry.parentPath, entry.name)]
            : []
        )
    : []

// `from "x"` (imports and re-exports, type-only ones too: a declaration file names them), `import "x"`, `import("x")`.
// A package's files found with `require.resolve` (the PDF export's fonts) are imports of it too.
const specifierPattern = /(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\.resolve\(\s*|^\s*import\s+)["']([^"'./][^"']*)["']/gm

/** The package a bare specifier names (`@scope/name` or `name`); undefined for Node's own modules. */
const packageOf = (specifier: string): string | undefined => {
  if (specifier.startsWith("node:") || builtinModules.includes(specifier.split("/")[0]!)) return undefined
  const parts = specifier.split("/")
  return specifier.startsWith("@") ? `${parts[0]}/${parts[1]}` : parts[0]
}

/** The packages the shipped code of a package imports, each with a file that imports it. */
const importsOf = (name: (typeof packages)[number]): Map<string, string> => {
  const folder = path.join(root, "packages", name)
  const found = new Map<string, string>()
  const files = [...filesUnder(path.join(folder, "src"), [".ts"]), ...filesUnder(path.join(folder, "bin"), [".js"])]
  for (const file of files) {
    const text = fs.readFileSync(file, "utf8")
    for (const match of text.matchAll(specifierPattern)) {
      const imported = packageOf(match[1]!)
      if (imported !== undefined && !found.has(imported)) found.set(imported, path.relative(root, file))
    }
  }
  return found
}

interface Manifest {
  readonly name: string
  readonly dependencies?: Record<string, string>
  readonly peerDependencies?: Record<string, string>
}

/** The peer dependencies of an installed package (what it expects its user to install beside it). */
const peersOf = (dependency: string): ReadonlyArray<string> => {
  const manifest: Manifest = JSON.parse(
    fs.readFileSync(path.join(root, "node_modules", dependency, "package.json"), "utf8")
  )
  return Object.keys(manifest.peerDependencies ?? {})
}

const manifestOf = (name: (typeof packages)[number]): Manifest =>
  JSON.parse(fs.readFileSync(path.join(root, "packages", name, "package.json"), "utf8"))

describe("Packaging", () => {
  it("finds the imports it looks for", () => {
    // The scan itself: a package whose sources import nothing would make the two checks below pass for nothing.
    const cli = importsOf("cli")
    expect(cli.get("@effect/cli")).toBeDefined()
    expect(cli.get("@deep-research/core")).toBeDefined()
    expect(cli.get("dejavu-fonts-ttf")).toBeDefined()
    expect(importsOf("providers").get("openai")).toBeDefined()
    expect(packageOf("node:fs")).toBeUndefined()
    expect(packageOf("fs/promises")).toBeUndefined()
    expect(packageOf("@effect/platform/HttpClient")).toBe("@effect/platform")
  })

  for (const name of packages) {
    it(`${name}: every package its code imports is a dependency`, () => {
      const manifest = manifestOf(name)
      const declared = new Set([
        manifest.name,
        ...Object.keys(manifest.dependencies ?? {}),
        ...Object.keys(manifest.peerDependencies ?? {})
      ])
      const undeclared = [...importsOf(name)].filter(([imported]) => !declared.has(imported))
      expect(undeclared.map(([imported, file]) => `${imported} (${file})`)).toEqual([])
    })

    it(`${name}: every dependency is imported by its code, or is a peer of one that is`, () => {
      const dependencies = Object.keys(manifestOf(name).dependencies ?? {})
      const imported = importsOf(name)
      // What the code imports, then the declared peers of what is needed, until nothing more is.
      const needed = new Set(dependencies.filter((dependency) => imported.has(dependency)))
      for (const dependency of needed) {
        for (const peer of peersOf(dependency)) if (dependencies.includes(peer)) needed.add(peer)
      }
      expect(dependencies.filter((dependency) => !needed.has(dependency))).toEqual([])
    })
  }
})
