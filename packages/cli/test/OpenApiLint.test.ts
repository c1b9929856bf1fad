/**
 * The OpenAPI document `deep-research serve` publishes, read by Redocly's linter with its recommended rules, as a team
 * that lints the APIs it takes in would read it: every operation has a summary, the document names its servers and
 * its license, and every tag says what it holds.
 */
import { createConfig, lintFromString } from "@redocly/openapi-core"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { request, served } from "./ServeHarness.js"

describe("deep-research serve: the OpenAPI document, linted", () => {
  it.scopedLive("passes Redocly's recommended rules with no error and no warning", () =>
    Effect.gen(function* () {
      const s = yield* served({ noClarify: true })
      const published = yield* request(`${s.url}/openapi.json`)
      assert.strictEqual(published.status, 200)
      const problems = yield* Effect.promise(async () =>
        lintFromString({
          source: published.text,
          absoluteRef: `${s.url}/openapi.json`,
          config: await createConfig({ extends: ["recommended"] })
        })
      )
      assert.deepStrictEqual(
        problems.map((problem) => `${problem.severity} ${problem.ruleId}: ${problem.message}`),
        []
      )
    })
  )
})
