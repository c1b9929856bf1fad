// The whole-run harness of @deep-research/core/testing: a research run scripted in a few lines, with no keys.
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as ContentExtractor from "../src/ContentExtractor.js"
import * as Pipeline from "../src/Pipeline.js"
import { ScriptedRun } from "../src/testing/index.js"

const pages = [
  {
    url: "https://www.bis.org/basel3",
    title: "Basel III: international regulatory framework for banks",
    content: "Basel III raised the minimum common equity requirement from 2% to 4.5% of risk-weighted assets."
  },
  {
    url: "https://www.bis.org/leverage",
    title: "Basel III leverage ratio framework",
    content: "Basel III introduced a leverage ratio of at least 3% of Tier 1 capital to total exposure."
  }
]

describe("ScriptedRun", () => {
  it.effect("runs a whole research from a few lines: directives, pages, report, and the citations verified", () =>
    Effect.gen(function* () {
      const session = yield* Pipeline.research("How did the 2008 crisis change bank capital rules?")
      assert.strictEqual(session.status, "completed")
      assert.strictEqual(session.rounds[0]?.results.length, 2)
      assert.isTrue(session.rounds[0]?.results.every((result) => result.status === "completed"))
      assert.include(session.report?.markdown ?? "", "4.5% [1]")
      assert.strictEqual(session.report?.citations.length, 2)
      assert.strictEqual(session.verification?.checked, 2)
      assert.strictEqual(session.verification?.changed, 0)
      const roles = new Set((yield* ScriptedRun.calls).map((call) => call.role))
      for (const role of ["clarification", "brief", "supervisor", "researcher", "compression", "report"] as const) {
        assert.isTrue(roles.has(role), role)
      }
      // Nothing fell through to the default script.
      assert.isFalse((yield* ScriptedRun.calls).some((call) => call.role === undefined))
    }).pipe(
      Effect.provide(
        ScriptedRun.layer({
          pages,
          rounds: [
            [
              { topic: "Basel III common equity requirement", findings: "Common equity rose to 4.5% [1]." },
              { topic: "Basel III leverage ratio", findings: "A leverage ratio of 3% was added [1]." }
            ]
          ],
          report: "# Capital rules after 2008\n\nCommon equity rose to 4.5% [1]. A 3% leverage ratio was added [2]."
        })
      )
    )
  )

  it.effect("the verification's verdicts come from the script: unsupported sentences are marked", () =>
    Effect.gen(function* () {
      const session = yield* Pipeline.research("How did the 2008 crisis change bank capital rules?")
      assert.strictEqual(session.status, "completed")
      const verdicts = session.verification?.verdicts ?? []
      assert.isAbove(verdicts.length, 0)
      assert.isTrue(verdicts.every((verdict) => verdict.status === "checked" && verdict.label === "unsupported"))
      assert.strictEqual(session.verification?.marked, verdicts.length)
    }).pipe(
      Effect.provide(
        ScriptedRun.layer({
          pages,
          rounds: [["Basel III common equity requirement"]],
          report: "# Capital\n\nCommon equity rose to 4.5% [1].",
          verdict: "unsupported"
        })
      )
    )
  )
})

describe("ContentExtractor.layerNone", () => {
  it.effect(
    "answers every URL with a failure that says pages are not read, so a search-only backend can research",
    () =>
      Effect.gen(function* () {
        const extractor = yield* ContentExtractor.ContentExtractor
        const results = yield* extractor.extract(["https://a.example/1", "https://b.example/2"])
        assert.deepStrictEqual(
          results.map((result) => [result._tag, result.url]),
          [
            ["ExtractFailure", "https://a.example/1"],
            ["ExtractFailure", "https://b.example/2"]
          ]
        )
      }).pipe(Effect.provide(ContentExtractor.layerNone))
  )
})
