#!/usr/bin/env node
// The command runs the compiled sources; `npm ci` builds them (the workspace's `prepare` script runs `tsc -b`).
const entry = new URL("../dist/main.js", import.meta.url)
let loaded
try {
  loaded = await import(entry.href)
} catch (error) {
  if (error?.code === "ERR_MODULE_NOT_FOUND" && String(error.message).includes(entry.pathname)) {
    process.stderr.write("deep-research is not built yet: run `npm run build` (or `npm ci`) in the repository first.\n")
    process.exit(2)
  }
  throw error
}
loaded.main()
