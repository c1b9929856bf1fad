/**
 * The plan of a small token budget, before anything is spent: a round of the configured width that fits is left as
 * it is; a tighter budget gets fewer researchers and searches; one that cannot hold one researcher with one search is
 * said to be so, in numbers.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import * as BudgetPlan from "../src/internal/budget/budgetPlan.js"
import * as ResearchConfig from "../src/ResearchConfig.js"

const configOf = (maxTokens: number | undefined) =>
  Schema.decodeUnknownSync(ResearchConfig.ResearchConfig)({
    allowClarification: false,
    ...(maxTokens === undefined ? {} : { budget: { maxTokens, synthesisReserve: 0.15 } })
  })

describe("BudgetPlan.fit", () => {
  it("leaves a run without a token budget, or with a large one, as it is", () => {
    for (const budget of [undefined, 1_000_000]) {
      const config = configOf(budget)
      const fitted = Either.getOrThrow(BudgetPlan.fit(config))
      assert.strictEqual(fitted.config, config)
      assert.isUndefined(fitted.note)
    }
  })

  it("gives a tight budget fewer researchers and searches, within what research may spend, and says so", () => {
    const fitted = Either.getOrThrow(BudgetPlan.fit(configOf(40_000)))
    const { maxConcurrentResearchUnits: researchers, researcherMaxToolCalls: searches } = fitted.config
    assert.isAtLeast(researchers, 1)
    assert.isBelow(researchers, configOf(undefined).maxConcurrentResearchUnits)
    assert.isAtMost(fitted.config.maxDirectivesPerRound, researchers)
    const round = 800 + 1_500 + researchers * BudgetPlan.researcherCost(searches)
    assert.isAtMost(round + BudgetPlan.estimates.headroom, 40_000 - 6_000)
    assert.match(fitted.note ?? "", /^budget plan: 40000 tokens leave research 34000 after the report's 6000; /)
    // A budget a little larger plans no less.
    const larger = Either.getOrThrow(BudgetPlan.fit(configOf(60_000))).config
    assert.isAtLeast(larger.maxConcurrentResearchUnits * larger.researcherMaxToolCalls, researchers * searches)
  })

  it("says in numbers why 5,000 tokens cannot research, and what budget could", () => {
    const refused = BudgetPlan.fit(configOf(5_000))
    assert.isTrue(Either.isLeft(refused))
    const reason = Either.isLeft(refused) ? refused.left : ""
    assert.include(reason, "a budget of 5000 tokens is too small to research")
    assert.include(reason, "research has 3000")
    const least = Number(/at least (\d+) tokens/.exec(reason)?.[1])
    // The budget it names is one the plan accepts.
    assert.isTrue(Either.isRight(BudgetPlan.fit(configOf(least))))
    assert.isTrue(Either.isLeft(BudgetPlan.fit(configOf(least - 2_000))))
  })
})
