/**
 * `npm test`: every package's tests, one vitest project a package (`packages/<name>/vitest.config.ts`), and the CLI's
 * tests that start the built command in a project of their own (`cli-spawn`, files named `*.spawn.test.ts`).
 *
 * Sized for two cores: two worker processes, each running file after file without being restarted (`isolate: false`:
 * a file's modules are imported once per worker, not once per file). A test's log lines are printed only when it
 * fails.
 */
import * as os from "node:os"
import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    projects: ["packages/*/vitest.config.ts", "packages/cli/vitest.spawn.config.ts"],
    pool: "forks",
    poolOptions: { forks: { isolate: false, maxForks: Math.max(2, os.availableParallelism()), minForks: 1 } },
    silent: "passed-only"
  }
})
