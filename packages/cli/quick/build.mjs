// Builds the quick entry of `list`, `show` and `delete` (`dist/internal/commandLine/storeCommandLine.js`) into one file,
// `dist/quick/storeCommands.js`, with `dist/quick/inputs.json` naming the project's modules it was built from. A short
// command's start is mostly Node finding, reading and compiling modules (about 630 of them, most of them `effect`'s):
// one file cuts that cost by half (BENCHMARKS.md §6). Run by the workspace's `build` and `prepare` after `tsc -b`; the
// bin uses the file only while it is newer than every module it names (`quickBundle.ts`), so a `tsc -b` alone never
// runs stale code. Usage: node packages/cli/quick/build.mjs [out folder]
import * as esbuild from "esbuild"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const cli = fileURLToPath(new URL("../", import.meta.url))
const root = path.resolve(cli, "../..")
const out = path.resolve(process.argv[2] ?? path.join(cli, "dist/quick"))

// libsql, the native SQLite binding, is loaded where `@libsql/client` (the providers' dependency) finds it, wherever
// the install put it; a bundled copy of its loader would look for the binary beside the bundle.
const nativeDriver = `
import { createRequire } from "node:module"
const providers = createRequire(import.meta.resolve("@deep-research/providers/SqlSessionStore"))
export default createRequire(providers.resolve("@libsql/client"))("libsql")
`

const result = await esbuild.build({
  absWorkingDir: root,
  entryPoints: { storeCommands: path.join(cli, "dist/internal/commandLine/storeCommandLine.js") },
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  outdir: out,
  metafile: true,
  logLevel: "warning",
  // The quick entry opens only a store folder's SQLite file (a database goes to the whole command line): the client's
  // local driver, without its WebSocket and HTTP clients.
  alias: { "@libsql/client": "@libsql/client/sqlite3" },
  plugins: [
    {
      name: "left-outside",
      setup(build) {
        // Reached only with a database, which the quick entry leaves to the whole command line: the PostgreSQL
        // client as installed, the cluster's compiled modules (at the same relative place from dist/quick/ as from
        // dist/commands/).
        build.onResolve({ filter: /^@effect\/sql-pg\// }, (args) => ({ path: args.path, external: true }))
        build.onResolve({ filter: /^\.\.\/Cluster(Queue)?\.js$/ }, (args) => ({ path: args.path, external: true }))
        build.onResolve({ filter: /^libsql$/ }, () => ({ path: "libsql", namespace: "native-driver" }))
        build.onLoad({ filter: /.*/, namespace: "native-driver" }, () => ({ contents: nativeDriver, loader: "js" }))
      }
    }
  ]
})

// The project's own modules (not node_modules': a new install builds again), relative to the output folder.
const inputs = Object.keys(result.metafile.inputs)
  .filter((input) => !input.includes(":") && !input.split(path.sep).includes("node_modules"))
  .map((input) => path.relative(out, path.join(root, input)))
fs.writeFileSync(path.join(out, "inputs.json"), `${JSON.stringify(inputs, null, 2)}\n`)
