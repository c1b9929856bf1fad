import { fileURLToPath } from "node:url"
import type { ViteUserConfig } from "vitest/config"

const packagesDir = fileURLToPath(new URL("./packages", import.meta.url))
const setup = fileURLToPath(new URL("./vitest.setup.ts", import.meta.url))

/** Settings every package's vitest config starts from: workspace packages resolve to their sources. */
export const shared: ViteUserConfig = {
  resolve: {
    alias: [
      { find: /^@deep-research\/([a-z]+)\/testing$/, replacement: `${packagesDir}/$1/src/testing/index.ts` },
      { find: /^@deep-research\/([a-z]+)$/, replacement: `${packagesDir}/$1/src/index.ts` },
      { find: /^@deep-research\/([a-z]+)\/([A-Z][A-Za-z]*)$/, replacement: `${packagesDir}/$1/src/$2.ts` },
      {
        find: /^@deep-research\/([a-z]+)\/phases\/([A-Z][A-Za-z]*)$/,
        replacement: `${packagesDir}/$1/src/phases/$2.ts`
      }
    ]
  },
  test: {
    include: ["test/**/*.test.ts"],
    setupFiles: [setup],
    fakeTimers: { toFake: undefined },
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // A worker runs file after file in one process (see the root vitest.config.ts): a file leaves the process as it
    // found it (environment variables put back, servers and processes it started stopped).
    poolOptions: { forks: { isolate: false } }
  }
}
