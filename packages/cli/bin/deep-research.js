#!/usr/bin/env node
// The command runs the compiled sources; `npm ci` builds them (the workspace's `prepare` script runs `tsc -b`).
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

// Help and version are answered before the rest of the CLI (and its providers) is loaded.
const quick = (await load("../dist/internal/commandLine/help.js")).quickAnswer(process.argv.slice(2))
if (quick !== undefined) process.stdout.write(quick)
else (await load("../dist/main.js")).main()
