// A TypeScript block of the README or docs/ marked `<!-- runs as <file> -->` is that test file's code, as written: the
// test runs the example the reader sees.
import { assert, describe, it } from "@effect/vitest"
import { existsSync, readdirSync, readFileSync } from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("../../../", import.meta.url))

const documents = [
  "README.md",
  ...readdirSync(path.join(root, "docs"))
    .filter((file) => file.endsWith(".md"))
    .map((file) => `docs/${file}`)
]

const marked = documents.flatMap((document) =>
  [...readFileSync(path.join(root, document), "utf8").matchAll(/<!-- runs as (\S+) -->\s*```ts\n([\s\S]*?)```/g)].map(
    ([, file, code]) => ({ document, file: file ?? "", code: code ?? "" })
  )
)

describe("the documents' runnable examples", () => {
  it("docs/library.md has its whole-run example marked", () => {
    assert.isTrue(marked.some((example) => example.file === "packages/core/test/ScriptedRunExample.test.ts"))
  })

  for (const example of marked) {
    it(`${example.document}'s example is ${example.file} as written`, () => {
      assert.isTrue(existsSync(path.join(root, example.file)), example.file)
      assert.include(readFileSync(path.join(root, example.file), "utf8"), example.code)
    })
  }
})
