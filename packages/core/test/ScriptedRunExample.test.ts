// docs/library.md's example of a whole run with no keys, as written there (DocsExamples.test.ts keeps them alike).
import { Pipeline } from "@deep-research/core"
import { ScriptedRun } from "@deep-research/core/testing"
import { assert, it } from "@effect/vitest"
import { Effect } from "effect"

it.effect("researches capital rules from two pages, with no keys", () =>
  Effect.gen(function* () {
    const session = yield* Pipeline.research("How did the 2008 crisis change bank capital rules?")
    assert.strictEqual(session.status, "completed")
    assert.strictEqual(session.report?.citations.length, 2)
    assert.strictEqual(session.verification?.checked, 2)
  }).pipe(
    Effect.provide(
      ScriptedRun.layer({
        pages: [
          { url: "https://www.bis.org/basel3", title: "Basel III", content: "Common equity rose from 2% to 4.5%." },
          { url: "https://www.bis.org/leverage", title: "Basel III leverage", content: "A leverage ratio of 3%." }
        ],
        rounds: [["Basel III common equity requirement", "Basel III leverage ratio"]],
        report: "# Capital rules after 2008\n\nCommon equity rose to 4.5% [1]. A 3% leverage ratio was added [2]."
      })
    )
  )
)
