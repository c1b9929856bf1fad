import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"
import { shared } from "../../vitest.shared.js"

// The tests that stop a PostgreSQL server of their own and start it again need PostgreSQL's programs (Debian's
// `postgresql`, which .ci/run installs), so they are not part of `npm test`: run them with
// `npx vitest run --config packages/cli/vitest.postgres.config.ts`. They start the built command, which is built first
// when its sources changed.
export default defineConfig({
  ...shared,
  root: fileURLToPath(new URL(".", import.meta.url)),
  test: {
    ...shared.test,
    name: "cli-postgres",
    include: ["test/**/*.postgres.ts"],
    testTimeout: 240_000,
    hookTimeout: 120_000,
    globalSetup: ["test/support/built.ts"]
  }
})
