#!/usr/bin/env node
// The command runs the compiled sources; `npm ci` builds them (the workspace's `prepare` script runs `tsc -b`, then
// `packages/cli/quick/build.mjs`).
import * as nodeModule from "node:module"
import { fileURLToPath, pathToFileURL } from "node:url"

// Node 22.1 and later keep the code V8 compiled for the CLI's modules in the system's temporary folder, so a later
// start skips compiling them again (a short command's start is mostly loading modules); Node 20 has no such cache.
nodeModule.enableCompileCache?.()
const load = async (relative) => {
  const entry = new URL(relative, import.meta.url)
  try {
    return await import(entry.href)
  } catch (error) {
    if (error?.code === "ERR_MODULE_NOT_FOUND" && String(error.message).includes(entry.pathname)) {
      process.stderr.write(
        "deep-research is not built yet: run `npm run build` (or `npm ci`) in the repository first.\n"
      )
      process.exit(2)
    }
    throw error
  }
}

// Help and version are answered before the rest of the CLI (and its providers) is loaded, and list, show and delete
// load the session store and nothing else (the parser, servers and providers stay unloaded).
const args = process.argv.slice(2)
const quick = (await load("../dist/internal/commandLine/help.js")).quickAnswer(args)
const storeCommand = quick === undefined && ["list", "show", "delete"].includes(args[0])
// The quick entry built into one file (`quick/build.mjs`) starts on less than half the CPU its 630 modules take; it is
// used while it is as new as the modules it was built from, and one whose native SQLite driver cannot be found from
// it gives way to the modules themselves.
const storeCommands = async () => {
  const { freshBundle } = await load("../dist/internal/commandLine/quickBundle.js")
  const bundle = freshBundle(fileURLToPath(new URL("../dist/quick/", import.meta.url)))
  if (bundle !== undefined) {
    try {
      return await import(pathToFileURL(bundle).href)
    } catch (error) {
      if (error?.code !== "ERR_MODULE_NOT_FOUND" && error?.code !== "MODULE_NOT_FOUND") throw error
    }
  }
  return load("../dist/internal/commandLine/storeCommandLine.js")
}
const code = storeCommand ? await (await storeCommands()).run(args) : undefined
if (quick !== undefined) process.stdout.write(quick)
else if (code !== undefined) process.exitCode = code
else (await load("../dist/main.js")).main()
