/**
 * The CLI's tests that start the built `deep-research` command (`test/**\/*.spawn.test.ts`): what only a process of
 * its own shows (signals, its exit, its stdin, a cluster runner killed, the heap a process grows to). The packages are built once before they run
 * when their sources changed since the last build (`test/support/built.ts`).
 */
import { defineProject } from "vitest/config"
import { shared } from "../../vitest.shared.js"

export default defineProject({
  ...shared,
  test: {
    ...shared.test,
    name: "cli-spawn",
    include: ["test/**/*.spawn.test.ts"],
    // A test here starts the built command (often twice: killed, then resumed), each a Node process that loads the
    // CLI: on two busy cores that alone can take the 30 s other projects allow a test.
    testTimeout: 120_000,
    globalSetup: ["test/support/built.ts"]
  }
})
