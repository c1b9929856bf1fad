import { assert, describe, it } from "@effect/vitest"
import { ScriptedModel } from "@deep-research/core/testing"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { Evaluation, Judge } from "../src/index.js"
import { session, source } from "./fixtures.js"

const evaluated = session({
  id: "gold-1",
  markdown:
    "# Gold\n\nGold fell 28% in 2013 [1]. Banks bought gold [3].\n\n## Sources\n[1] Rates: https://example.com/rates",
  sources: [source("d1-s1", "https://example.com/rates", "Rates", "Gold fell 28% in 2013.")]
})

const { balance: _missing, ...scores } = Object.fromEntries(
  Judge.dimensions.map((d) => [d, { score: 4, rationale: `good ${d}` }])
)

const router = ScriptedModel.layerRouter({
  default: ["unused"],
  roles: {
    evaluation: (request) =>
      (request.system ?? "").includes("strict, critical evaluator")
        ? JSON.stringify({ scores })
        : JSON.stringify({ verdicts: [{ claim: 1, label: "supported", explanation: "stated", citations: [] }] })
  }
})

describe("Evaluation", () => {
  it.effect("judges, checks citations and leaves claims out unless asked", () =>
    Effect.gen(function* () {
      const evaluation = yield* Evaluation.evaluateSession(evaluated)
      assert.strictEqual(evaluation.sessionId, "gold-1")
      assert.strictEqual(evaluation.judgement.imputedCount, 1)
      assert.strictEqual(evaluation.citations.counts.danglingCitations, 1)
      assert.isUndefined(evaluation.claims)
      assert.strictEqual((yield* ScriptedModel.calls).length, 1)
    }).pipe(Effect.provide(router))
  )

  it.effect("verifies claims when asked", () =>
    Effect.gen(function* () {
      const evaluation = yield* Evaluation.evaluateSession(evaluated, { claims: { maxClaims: 5 } })
      assert.strictEqual(evaluation.claims?.checked, 1)
      assert.strictEqual(evaluation.claims?.unverifiable, 1)
      assert.strictEqual(evaluation.claims?.fidelity, 1)
    }).pipe(Effect.provide(router))
  )

  it.effect("prints scores, flags and offending lines, and survives storage", () =>
    Effect.gen(function* () {
      const evaluation = yield* Evaluation.evaluateSession(evaluated, { claims: true })
      const text = Evaluation.format(evaluation)
      assert.include(text, "Evaluation of gold-1")
      assert.include(text, "balance")
      assert.include(text, "[missing: 3 stands in]")
      // Eight equal weights are an eighth each, as written, not 0.13 (eight of which make 1.04).
      assert.match(text, /depth\s+\d\/5 {2}weight 0\.125/)
      assert.include(text, "line 3 (dangling): [3] is not in the source list")
      assert.include(text, "Claims: fidelity 1.000 over 1 checked")
      const codec = Schema.parseJson(Evaluation.Evaluation)
      assert.deepStrictEqual(Schema.decodeUnknownSync(codec)(Schema.encodeSync(codec)(evaluation)), evaluation)
    }).pipe(Effect.provide(router))
  )

  it.effect("refuses a session without a report before calling any model", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(Evaluation.evaluateSession(session({ status: "failed" })))
      assert.strictEqual(error._tag, "ResearchInvalidInput")
      assert.include(error.message, "no report")
      assert.strictEqual((yield* ScriptedModel.calls).length, 0)
    }).pipe(Effect.provide(router))
  )
})
