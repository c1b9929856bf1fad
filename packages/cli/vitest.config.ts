import { configDefaults, defineProject, mergeConfig } from "vitest/config"
import { shared } from "../../vitest.shared.js"

// The tests that start the built command are the `cli-spawn` project's (vitest.spawn.config.ts).
export default mergeConfig(
  shared,
  defineProject({ test: { name: "cli", exclude: [...configDefaults.exclude, "test/**/*.spawn.test.ts"] } })
)
