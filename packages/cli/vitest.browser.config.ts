import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"
import { shared } from "../../vitest.shared.js"

// The browser test needs Chromium (Debian's `chromium`, which .ci/run installs), so it is not part of `npm test`:
// run it with `npx vitest run --config packages/cli/vitest.browser.config.ts`.
export default defineConfig({
  ...shared,
  root: fileURLToPath(new URL(".", import.meta.url)),
  test: { ...shared.test, name: "cli-browser", include: ["test/**/*.browser.ts"], testTimeout: 120_000 }
})
