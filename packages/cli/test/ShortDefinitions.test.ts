/**
 * Short definitions: no source file over 400 lines and no function over 100 lines in any package's sources, counted on
 * TypeScript's own parse, outermost functions only (a closure counts as part of the function that holds it). A
 * definition past these lines holds two things; the mend is to name them (small top-level functions over a shared
 * record, or a module of its own), not to squeeze lines.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import ts from "typescript"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..")
const packagesDir = path.join(root, "packages")
const maxFileLines = 400
const maxFunctionLines = 100

/** The name a reader would look for: the function's own, or that of the nearest named thing holding it. */
const nameOf = (node: ts.Node, source: ts.SourceFile): string => {
  for (let at: ts.Node | undefined = node; at !== undefined && !ts.isSourceFile(at); at = at.parent) {
    const name = (at as { readonly name?: ts.Node }).name
    if (name !== undefined) return name.getText(source)
  }
  return "(anonymous)"
}

/** A file's outermost functions with a body, each with its name, first line and length in lines. */
const outermostFunctions = (
  fileName: string,
  text: string
): ReadonlyArray<{ readonly name: string; readonly line: number; readonly lines: number }> => {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true)
  const lineOf = (position: number) => source.getLineAndCharacterOfPosition(position).line + 1
  const found: Array<{ name: string; line: number; lines: number }> = []
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && "body" in node && node.body !== undefined) {
      const line = lineOf(node.getStart(source))
      found.push({ name: nameOf(node, source), line, lines: lineOf(node.end) - line + 1 })
      return
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return found
}

const linesOf = (text: string): number => text.split("\n").length - (text.endsWith("\n") ? 1 : 0)

const sources = fs
  .readdirSync(packagesDir, { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && fs.existsSync(path.join(packagesDir, entry.name, "src")))
  .flatMap((entry) =>
    fs
      .readdirSync(path.join(packagesDir, entry.name, "src"), { withFileTypes: true, recursive: true })
      .filter((file) => file.isFile() && file.name.endsWith(".ts"))
      .map((file) => path.join(file.parentPath, file.name))
  )

describe("Short definitions", () => {
  it("counts outermost functions, closures inside them included, and names each", () => {
    const text = [
      "export const make = Effect.gen(function* () {",
      "  const inner = () => {",
      "    return 1",
      "  }",
      "  return inner",
      "})",
      "function plain(a: number) {",
      "  return a",
      "}",
      "class Box { get size() { return 1 } }"
    ].join("\n")
    expect(outermostFunctions("sample.ts", text)).toEqual([
      { name: "make", line: 1, lines: 6 },
      { name: "plain", line: 7, lines: 3 },
      { name: "size", line: 10, lines: 1 }
    ])
    expect(sources.length).toBeGreaterThan(100)
  })

  it(`no source file is over ${maxFileLines} lines`, () => {
    const long = sources
      .map((file) => ({ file: path.relative(root, file), lines: linesOf(fs.readFileSync(file, "utf8")) }))
      .filter(({ lines }) => lines > maxFileLines)
    expect(long).toEqual([])
  })

  it(`no function is over ${maxFunctionLines} lines`, () => {
    const long = sources.flatMap((file) =>
      outermostFunctions(file, fs.readFileSync(file, "utf8"))
        .filter(({ lines }) => lines > maxFunctionLines)
        .map(({ line, lines, name }) => `${path.relative(root, file)}:${line} ${name} (${lines} lines)`)
    )
    expect(long).toEqual([])
  })
})
