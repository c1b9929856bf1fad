/**
 * The CLI's tests that start the built `deep-research` command (`test/**\/*.spawn.test.ts`): what only a process of
 * its own shows (signals, its exit, its stdin, a cluster runner killed). The packages are built once before they run
 * when their sources changed since the last build (`test/support/built.ts`). A test here has more time than the
 * others: each process it starts loads the CLI, which is slow on a machine whose cores are busy.
 */
import { defineProject } from "vitest/config"
import { shared } from "../../vitest.shared.js"

export default defineProject({
  ...shared,
  test: {
    ...shared.test,
    name: "cli-spawn",
    include: ["test/**/*.spawn.test.ts"],
    globalSetup: ["test/support/built.ts"],
    testTimeout: 120_000,
    hookTimeout: 120_000
  }
})
