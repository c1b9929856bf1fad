// Run by .ci/run inside the fresh project that installed the packed packages: every TypeScript block of the README and
// of docs/ becomes a module of its own, and the lot must type-check under `strict` with `skipLibCheck: false` (every
// declaration file the blocks reach is checked too), against the packages as a user installs them. Exits non-zero on
// any error. Usage: node docs.mjs <repository>
import { execFileSync } from "node:child_process"
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import * as path from "node:path"

const repository = process.argv[2]
const documents = [
  "README.md",
  ...readdirSync(path.join(repository, "docs"))
    .filter((file) => file.endsWith(".md"))
    .map((file) => `docs/${file}`)
]
rmSync("blocks", { recursive: true, force: true })
mkdirSync("blocks")
let count = 0
for (const document of documents) {
  const text = readFileSync(path.join(repository, document), "utf8")
  let index = 0
  for (const [, code] of text.matchAll(/```(?:ts|typescript)\n([\s\S]*?)```/g)) {
    index += 1
    count += 1
    const name = `${document.replace(/[/.]/g, "_")}_${index}.ts`
    // Each block is a module of its own, whether or not it exports anything.
    writeFileSync(path.join("blocks", name), `${code}\nexport {}\n`)
  }
}
writeFileSync(
  "tsconfig.blocks.json",
  JSON.stringify({
    compilerOptions: {
      strict: true,
      skipLibCheck: false,
      noEmit: true,
      target: "ES2022",
      module: "NodeNext",
      moduleResolution: "NodeNext",
      exactOptionalPropertyTypes: true,
      noUncheckedIndexedAccess: true,
      types: ["node"]
    },
    include: ["blocks"]
  })
)
execFileSync("npx", ["--no-install", "tsc", "-p", "tsconfig.blocks.json"], { stdio: "inherit" })
console.log(`docs: ${count} TypeScript blocks of ${documents.length} documents type-check`)
