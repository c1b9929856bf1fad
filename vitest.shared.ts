import { fileURLToPath } from "node:url"
import type { ViteUserConfig } from "vitest/config"

const packagesDir = fileURLToPath(new URL("./packages", import.meta.url))

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
    fakeTimers: { toFake: undefined },
    testTimeout: 30_000,
    hookTimeout: 30_000
  }
}
