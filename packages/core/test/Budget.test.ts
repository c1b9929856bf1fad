import { assert, describe, it } from "@effect/vitest"
import { Effect, Queue } from "effect"
import * as Budget from "../src/Budget.js"
import * as Pricing from "../src/Pricing.js"
import * as ResearchConfig from "../src/ResearchConfig.js"
import * as ResearchEvents from "../src/ResearchEvents.js"
import { Usage } from "../src/Usage.js"
import * as UsageLedger from "../src/UsageLedger.js"

const table = new Pricing.PriceTable({
  prices: [new Pricing.Price({ match: "priced-model", input: 1_000_000, output: 1_000_000 })]
})

const usage = (tokens: number) => new Usage({ inputTokens: tokens, outputTokens: 0 })

describe("Budget", () => {
  it.effect("without limits research is never exhausted", () =>
    Effect.gen(function* () {
      const ledger = yield* UsageLedger.make()
      const budget = yield* Budget.make(new ResearchConfig.Budget({ synthesisReserve: 0.15 }), ledger, table)
      yield* ledger.record("researcher", usage(10_000_000), 1_000)
      assert.isFalse(yield* budget.researchExhausted())
    })
  )

  it.effect("stops research once the token budget minus the synthesis reserve is spent", () =>
    Effect.gen(function* () {
      const ledger = yield* UsageLedger.make()
      const budget = yield* Budget.make(new ResearchConfig.Budget({ maxTokens: 1_000, synthesisReserve: 0.2 }), ledger)
      yield* ledger.record("researcher", usage(790), 0)
      assert.isFalse(yield* budget.researchExhausted())
      yield* ledger.record("researcher", usage(10), 0)
      // 800 of the 1,000 tokens are spent: the remaining 200 are the reserve for synthesis.
      assert.isTrue(yield* budget.researchExhausted())
      const status = yield* budget.status
      assert.isTrue(status.researchExhausted)
      assert.isFalse(status.exhausted)
    })
  )

  it.effect("checks the projected cost of the next call before it is made", () =>
    Effect.gen(function* () {
      const ledger = yield* UsageLedger.make()
      const budget = yield* Budget.make(new ResearchConfig.Budget({ maxUsd: 1, synthesisReserve: 0 }), ledger, table)
      // One token of priced-model costs 1 USD: a 1-token call would spend the whole budget.
      assert.isFalse(yield* budget.researchExhausted({ model: "unpriced", inputTokens: 10 }))
      assert.isTrue(yield* budget.researchExhausted({ model: "priced-model", inputTokens: 1, outputTokens: 0 }))
    })
  )

  it.effect("a resumed run counts what the session spent before", () =>
    Effect.gen(function* () {
      const earlier = yield* UsageLedger.make()
      yield* earlier.record("researcher", usage(900), 0)
      const ledger = yield* UsageLedger.make(yield* earlier.snapshot)
      const budget = yield* Budget.make(new ResearchConfig.Budget({ maxTokens: 1_000, synthesisReserve: 0.15 }), ledger)
      assert.isTrue(yield* budget.researchExhausted())
    })
  )

  it.scoped("publishes a warning at 80% and at the research limit, once each", () =>
    Effect.gen(function* () {
      const events = yield* ResearchEvents.make
      const queue = yield* events.subscribe
      const ledger = yield* UsageLedger.make()
      const budget = yield* Budget.make(new ResearchConfig.Budget({ maxTokens: 1_000, synthesisReserve: 0 }), ledger)
      const check = budget.researchExhausted().pipe(Effect.provideService(ResearchEvents.ResearchEvents, events))
      yield* ledger.record("researcher", usage(500), 0)
      yield* check
      assert.strictEqual(yield* Queue.size(queue), 0)
      yield* ledger.record("researcher", usage(350), 0)
      yield* check
      yield* check
      yield* ledger.record("researcher", usage(200), 0)
      yield* check
      const warnings = [...(yield* Queue.takeAll(queue))]
      assert.deepStrictEqual(
        warnings.map((e) => (e._tag === "BudgetWarning" ? [e.budget, e.spent, e.limit] : [])),
        [
          ["tokens", 850, 1_000],
          ["tokens", 1_050, 1_000]
        ]
      )
    })
  )
})
