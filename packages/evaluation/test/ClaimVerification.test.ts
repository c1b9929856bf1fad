import { assert, describe, it } from "@effect/vitest"
import { Errors, Research } from "@deep-research/core"
import { ScriptedModel } from "@deep-research/core/testing"
import * as Effect from "effect/Effect"
import * as Ref from "effect/Ref"
import { ClaimVerification } from "../src/index.js"
import { session, source } from "./fixtures.js"

const sources = [
  source("d1-s1", "https://example.com/rates", "Rates", "Gold fell 28% in 2013 as real rates rose."),
  source("d1-s2", "https://example.com/banks", "Banks", "Central banks bought 1,037 tonnes of gold in 2023.")
]

const markdown = [
  "# Gold",
  "",
  "Gold fell 28% in 2013 [1]. Central banks bought over 1,000 tonnes in 2023 [2]. Gold is a great investment.",
  "Gold doubled in 2013 [1]. Central banks sold gold in 2023 [2]. Unknown things happened [7].",
  "",
  "## Sources",
  "[1] Rates: https://example.com/rates",
  "[2] Banks: https://example.com/banks"
].join("\n")

const sourceList = "\n\n## Sources\n[1] Rates: https://example.com/rates\n[2] Banks: https://example.com/banks"

const label = (value: ClaimVerification.Label) =>
  JSON.stringify({ verdicts: [{ claim: 1, label: value, explanation: `it is ${value}`, citations: [] }] })

/** A judge that labels a claim by what it says. */
const judgeByClaim = (claim: string): string =>
  claim.includes("fell 28%")
    ? label("supported")
    : claim.includes("over 1,000")
      ? label("partially_supported")
      : claim.includes("doubled")
        ? label("contradicted")
        : label("unsupported")

const claimOf = (request: { readonly messages: ReadonlyArray<{ readonly content: string }> }): string =>
  /<sentence id="1" cites="[^"]*">([\s\S]*?)<\/sentence>/.exec(request.messages[0]?.content ?? "")?.[1] ?? ""

const router = ScriptedModel.layerRouter({
  default: ["unused"],
  roles: { evaluation: (request) => judgeByClaim(claimOf(request)) }
})

describe("ClaimVerification fidelity", () => {
  it("is (supported + 0.5 partial - 0.5 contradicted) / checked", () => {
    const score = ClaimVerification.fidelity({ supported: 3, partiallySupported: 2, unsupported: 1, contradicted: 2 })
    assert.strictEqual(score, (3 + 1 - 1) / 8)
  })

  it("is floored at 0", () => {
    assert.strictEqual(
      ClaimVerification.fidelity({ supported: 0, partiallySupported: 0, unsupported: 1, contradicted: 3 }),
      0
    )
  })

  it("is undefined when nothing was checked", () => {
    assert.isUndefined(
      ClaimVerification.fidelity({ supported: 0, partiallySupported: 0, unsupported: 0, contradicted: 0 })
    )
  })
})

describe("ClaimVerification claims", () => {
  it("takes the sentences that cite something, with their citations", () => {
    const claims = ClaimVerification.claimsOf(markdown)
    assert.deepStrictEqual(
      claims.map((c) => [c.line, c.text, c.citations]),
      [
        [3, "Gold fell 28% in 2013 [1].", [1]],
        [3, "Central banks bought over 1,000 tonnes in 2023 [2].", [2]],
        [4, "Gold doubled in 2013 [1].", [1]],
        [4, "Central banks sold gold in 2023 [2].", [2]],
        [4, "Unknown things happened [7].", [7]]
      ]
    )
  })

  it("keeps a citation after the full stop with its sentence, in English and Chinese", () => {
    const claims = ClaimVerification.claimsOf(
      "First claim.[1] Second claim. [2][3] Third.\n黄金下跌。[1]央行购金【2】。没有引用。"
    )
    assert.deepStrictEqual(
      claims.map((c) => [c.text, c.citations]),
      [
        ["First claim.[1]", [1]],
        ["Second claim. [2][3]", [2, 3]],
        ["黄金下跌。[1]", [1]],
        ["央行购金【2】。", [2]]
      ]
    )
  })

  it("does not end a sentence at an abbreviation", () => {
    const claims = ClaimVerification.claimsOf(
      "Gold rose 5% in Q1 (e.g. in the U.S.) as Dr. Smith noted [1]. It fell [2]."
    )
    assert.deepStrictEqual(
      claims.map((c) => c.text),
      ["Gold rose 5% in Q1 (e.g. in the U.S.) as Dr. Smith noted [1].", "It fell [2]."]
    )
  })

  it("samples at most the maximum, the same claims for the same seed, in report order", () => {
    const claims = Array.from({ length: 30 }, (_, i) => ({ line: i + 1, text: `claim ${i}`, citations: [1] }))
    const first = ClaimVerification.sampleClaims(claims, 5, 42)
    const again = ClaimVerification.sampleClaims(claims, 5, 42)
    const other = ClaimVerification.sampleClaims(claims, 5, 7)
    assert.strictEqual(first.length, 5)
    assert.deepStrictEqual(first, again)
    assert.notDeepEqual(first, other)
    assert.deepStrictEqual(
      first.map((c) => c.line),
      [...first.map((c) => c.line)].sort((a, b) => a - b)
    )
    assert.strictEqual(ClaimVerification.sampleClaims(claims, 50, 1).length, 30)
  })
})

describe("ClaimVerification.verify", () => {
  it.effect("labels each claim against its cited source and scores fidelity", () =>
    Effect.gen(function* () {
      const result = yield* ClaimVerification.verify({ markdown, sources })
      assert.strictEqual(result.totalClaims, 5)
      assert.strictEqual(result.checked, 4)
      assert.strictEqual(result.supported, 1)
      assert.strictEqual(result.partiallySupported, 1)
      assert.strictEqual(result.unsupported, 1)
      assert.strictEqual(result.contradicted, 1)
      assert.strictEqual(result.unverifiable, 1)
      assert.strictEqual(result.fidelity, (1 + 0.5 - 0.5) / 4)
      const calls = yield* ScriptedModel.calls
      assert.strictEqual(calls.length, 4)
      assert.isTrue(calls.every((c) => c.role === "evaluation"))
      const doubled = calls.find((c) => claimOf(c.request).includes("doubled"))
      assert.include(doubled?.request.messages[0]?.content ?? "", "Gold fell 28% in 2013 as real rates rose.")
      assert.notInclude(doubled?.request.messages[0]?.content ?? "", "1,037 tonnes")
    }).pipe(Effect.provide(router))
  )

  it.effect("makes no model call for a claim whose sources were never retrieved", () =>
    Effect.gen(function* () {
      const result = yield* ClaimVerification.verify({ markdown: "Unknown things happened [7].", sources })
      assert.strictEqual(result.unverifiable, 1)
      assert.strictEqual(result.checked, 0)
      assert.isUndefined(result.fidelity)
      assert.strictEqual((yield* ScriptedModel.calls).length, 0)
    }).pipe(Effect.provide(router))
  )

  it.effect("checks at most maxClaims claims", () =>
    Effect.gen(function* () {
      const many = Array.from({ length: 12 }, (_, i) => `Gold fell 28% in 2013, point ${i} [1].`).join(" ")
      const result = yield* ClaimVerification.verify(
        { markdown: many + sourceList, sources },
        { maxClaims: 3, seed: 5 }
      )
      assert.strictEqual(result.totalClaims, 12)
      assert.strictEqual(result.sampled, 3)
      assert.strictEqual(result.verdicts.length, 3)
      assert.strictEqual((yield* ScriptedModel.calls).length, 3)
    }).pipe(Effect.provide(router))
  )

  it.effect("runs at most `concurrency` checks at once", () =>
    Effect.gen(function* () {
      const inFlight = yield* Ref.make(0)
      const peak = yield* Ref.make(0)
      const gated = ScriptedModel.layerRouter({
        default: ["unused"],
        roles: {
          evaluation: () =>
            Effect.gen(function* () {
              const now = yield* Ref.updateAndGet(inFlight, (n) => n + 1)
              yield* Ref.update(peak, (p) => Math.max(p, now))
              for (let i = 0; i < 5; i++) yield* Effect.yieldNow()
              yield* Ref.update(inFlight, (n) => n - 1)
              return label("supported")
            })
        }
      })
      const many = Array.from({ length: 8 }, (_, i) => `Claim ${i} [1].`).join(" ")
      const result = yield* ClaimVerification.verify({ markdown: many + sourceList, sources }, { concurrency: 2 }).pipe(
        Effect.provide(gated)
      )
      assert.strictEqual(result.checked, 8)
      assert.strictEqual(yield* Ref.get(peak), 2)
    })
  )

  it.effect("records a failed check and leaves it out of the score", () =>
    Effect.gen(function* () {
      const flaky = ScriptedModel.layerRouter({
        default: ["unused"],
        roles: {
          evaluation: (request) =>
            claimOf(request).includes("doubled")
              ? new Errors.ProviderUnavailable({ provider: "scripted", status: 503 })
              : judgeByClaim(claimOf(request))
        }
      })
      const result = yield* ClaimVerification.verify({ markdown, sources }).pipe(Effect.provide(flaky))
      assert.strictEqual(result.failed, 1)
      assert.strictEqual(result.checked, 3)
      assert.strictEqual(result.fidelity, (1 + 0.5) / 3)
      assert.include(result.verdicts.find((v) => v.status === "failed")?.explanation ?? "", "unavailable")
    })
  )

  it.effect("asks again after an answer with an unknown label", () =>
    Effect.gen(function* () {
      const result = yield* ClaimVerification.verify({
        markdown: "Gold fell 28% in 2013 [1]." + sourceList,
        sources
      }).pipe(
        Effect.provide(
          ScriptedModel.layerRouter({
            default: ["unused"],
            roles: { evaluation: ['{"label": "mostly true"}', `Sure:\n\`\`\`json\n${label("supported")}\n\`\`\``] }
          })
        )
      )
      assert.strictEqual(result.supported, 1)
      assert.strictEqual(result.fidelity, 1)
    })
  )

  it.effect("maps citations through the session's structured citations", () =>
    Effect.gen(function* () {
      const verified = session({
        markdown: "Gold fell 28% in 2013 [1].",
        sources,
        citations: [
          new Research.Citation({ number: 1, sourceId: "d1-s1", url: "https://example.com/rates", title: "Rates" })
        ]
      })
      const result = yield* ClaimVerification.verifySession(verified)
      assert.strictEqual(result.supported, 1)
    }).pipe(Effect.provide(router))
  )
})
