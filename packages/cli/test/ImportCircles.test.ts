/**
 * No import goes round in a circle: inside each package's sources, a file never reaches itself through its imports
 * (type-only and dynamic ones included, as TypeScript's own parse of a file reads them). A circle means a type or a
 * helper lives above a file that needs it; the mend is to move it below every file that needs it.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import ts from "typescript"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..")
const packagesDir = path.join(root, "packages")

/** Every TypeScript source of a package. */
const sourcesOf = (name: string): ReadonlyArray<string> => {
  const folder = path.join(packagesDir, name, "src")
  return fs.existsSync(folder)
    ? fs
        .readdirSync(folder, { withFileTypes: true, recursive: true })
        .filter((entry) => entry.isFile() && entry.name.endsWith(".ts"))
        .map((entry) => path.join(entry.parentPath, entry.name))
    : []
}

/** Each source with the sources of the same package it imports. */
const importGraph = (files: ReadonlyArray<string>): ReadonlyMap<string, ReadonlyArray<string>> => {
  const known = new Set(files)
  return new Map(
    files.map((file) => {
      const { importedFiles } = ts.preProcessFile(fs.readFileSync(file, "utf8"), true, true)
      const targets = importedFiles
        .filter(({ fileName }) => fileName.startsWith("."))
        .map(({ fileName }) => path.resolve(path.dirname(file), fileName).replace(/\.js$/, ".ts"))
        .filter((target) => known.has(target))
      return [file, targets]
    })
  )
}

/** The circles of a graph: its strongly connected parts of more than one file, or of one that imports itself. */
const circlesOf = (graph: ReadonlyMap<string, ReadonlyArray<string>>): ReadonlyArray<ReadonlyArray<string>> => {
  // Tarjan's walk: each file's order of discovery, and the earliest file still on the stack it leads back to.
  const order = new Map<string, number>()
  const stack: Array<string> = []
  const circles: Array<Array<string>> = []
  const visit = (file: string): number => {
    const mine = order.size
    order.set(file, mine)
    let low = mine
    stack.push(file)
    for (const next of graph.get(file) ?? []) {
      const seen = order.get(next)
      if (seen === undefined) low = Math.min(low, visit(next))
      else if (stack.includes(next)) low = Math.min(low, seen)
    }
    if (low === mine) {
      const part = stack.splice(stack.indexOf(file))
      if (part.length > 1 || (graph.get(file) ?? []).includes(file)) circles.push(part.sort())
    }
    return low
  }
  for (const file of graph.keys()) if (!order.has(file)) visit(file)
  return circles
}

const packages = fs
  .readdirSync(packagesDir, { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && fs.existsSync(path.join(packagesDir, entry.name, "src")))
  .map((entry) => entry.name)

describe("Import circles", () => {
  it("finds a circle where there is one, and the imports it looks for", () => {
    const graph = new Map([
      ["a", ["b"]],
      ["b", ["c"]],
      ["c", ["a"]],
      ["d", ["a"]],
      ["e", ["e"]]
    ])
    expect(circlesOf(graph)).toEqual([["a", "b", "c"], ["e"]])
    // The parse itself: a type-only import and a dynamic one are read as imports.
    const runs = importGraph(sourcesOf("cli")).get(path.join(packagesDir, "cli/src/ServingRuns.ts")) ?? []
    expect(runs.map((file) => path.basename(file)).sort()).toEqual([
      "CliConfig.ts",
      "ClusterRuns.ts",
      "Runs.ts",
      "credentials.ts"
    ])
    expect(packages).toEqual(expect.arrayContaining(["core", "emulator", "providers", "evaluation", "cli"]))
  })

  for (const name of packages) {
    it(`${name}: no file reaches itself through its imports`, () => {
      const circles = circlesOf(importGraph(sourcesOf(name)))
      expect(circles.map((circle) => circle.map((file) => path.relative(root, file)).join(" <-> "))).toEqual([])
    })
  }
})
