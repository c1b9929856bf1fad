import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Fiber, Option, Queue } from "effect"
import * as Budget from "../src/Budget.js"
import * as Pricing from "../src/Pricing.js"
import * as ResearchConfig from "../src/ResearchConfig.js"
import * as ResearchEvents from "../src/ResearchEvents.js"

const table = new Pricing.PriceTable({
  prices: [new Pricing.Price({ match: "priced-model", input: 1_000_000, output: 1_000_000 })]
})

const none: Budget.Spent = { tokens: 0, costUsd: 0 }

const tokens = (maxTokens: number, synthesisReserve = 0) => new ResearchConfig.Budget({ maxTokens, synthesisReserve })

const researcher = (inputTokens: number, outputTokens?: number): Budget.Call => ({
  role: "researcher",
  model: "m",
  inputTokens,
  outputTokens
})

describe("Budget", () => {
  it.effect("without limits every call goes out with the output it asks for, unchecked", () =>
    Effect.gen(function* () {
      const budget = yield* Budget.make(new ResearchConfig.Budget({ synthesisReserve: 0.15 }), none)
      assert.isFalse(budget.limited)
      const reservation = yield* budget.reserve(researcher(10_000_000))
      assert.strictEqual(reservation.outputTokens, Budget.outputEstimate.researcher)
      assert.isFalse(yield* budget.researchExhausted)
    })
  )

  it.effect("reserves a call's input and output limit, lowering the limit to what is left, never below the floor", () =>
    Effect.gen(function* () {
      const budget = yield* Budget.make(tokens(100_000), none)
      assert.deepStrictEqual(yield* budget.reserve(researcher(1_000, 2_000)), {
        tokens: 3_000,
        costUsd: 0,
        outputTokens: 2_000
      })
      // Research may spend 5,000 less the report's reserve (at least 2,000): 3,000, less 1,000 of input, leave 2,000 of
      // the 4,000 a researcher's turn asks for by default.
      const small = yield* Budget.make(tokens(5_000), none)
      assert.strictEqual((yield* small.reserve(researcher(1_000))).outputTokens, 2_000)
      const tiny = yield* Budget.make(tokens(3_500), none)
      const refused = yield* Effect.either(tiny.reserve(researcher(1_000)))
      assert.isTrue(Either.isLeft(refused) && refused.left._tag === "ResearchBudgetExhausted")
      assert.isTrue(yield* tiny.researchExhausted)
    })
  )

  it.effect("research stops short of the report's reserve, which the report can still spend", () =>
    Effect.gen(function* () {
      // A reserve of a fifth of 20,000 is 4,000: research may spend 16,000.
      const budget = yield* Budget.make(tokens(20_000, 0.2), none)
      const first = yield* budget.reserve(researcher(6_000, 6_000))
      yield* budget.settle(first, { tokens: 12_000, costUsd: 0 })
      const refused = yield* Effect.either(budget.reserve(researcher(3_500, 2_000)))
      assert.isTrue(Either.isLeft(refused))
      assert.isTrue(yield* budget.researchExhausted)
      assert.strictEqual(yield* budget.room("report", "m"), 8_000)
      const report = yield* budget.reserve({ role: "report", model: "m", inputTokens: 3_000, outputTokens: 5_000 })
      assert.strictEqual(report.tokens, 8_000)
    })
  )

  it.effect("the reserve is never less than a report of useful length needs", () =>
    Effect.gen(function* () {
      const budget = yield* Budget.make(tokens(5_000, 0.15), none)
      // 15% of 5,000 would be 750 tokens: the reserve is 2,000, so research may spend 3,000.
      const refused = yield* Effect.either(budget.reserve(researcher(2_500, 1_000)))
      assert.isTrue(Either.isLeft(refused))
      assert.strictEqual(yield* budget.room("research", "m"), 3_000)
    })
  )

  it.effect("a caller waits while calls in flight hold what it needs, and goes once they settle for less", () =>
    Effect.gen(function* () {
      // Research may spend 12,000 less the report's reserve of 2,000.
      const budget = yield* Budget.make(tokens(12_000), none)
      const first = yield* budget.reserve(researcher(1_000, 5_000))
      const second = yield* budget.reserve(researcher(1_000, 2_000))
      // 9,000 are held: a third call of 1,000 plus 4,000 must wait.
      const third = yield* Effect.fork(budget.reserve(researcher(1_000, 4_000)))
      yield* Effect.yieldNow()
      assert.isTrue(Option.isNone(yield* Fiber.poll(third)))
      yield* budget.settle(first, { tokens: 1_200, costUsd: 0 })
      const granted = yield* Fiber.join(third)
      assert.strictEqual(granted.outputTokens, 4_000)
      yield* budget.settle(second, { tokens: 1_500, costUsd: 0 })
      yield* budget.settle(granted, { tokens: 5_000, costUsd: 0 })
      assert.strictEqual((yield* budget.status).spent.tokens, 7_700)
    })
  )

  it.effect("prices a call in USD: one its cost cannot fit is refused", () =>
    Effect.gen(function* () {
      const budget = yield* Budget.make(new ResearchConfig.Budget({ maxUsd: 1, synthesisReserve: 0 }), none, {
        table
      })
      // One token of priced-model costs 1 USD: a 1-token input leaves nothing for the output.
      const refused = yield* Effect.either(
        budget.reserve({ role: "researcher", model: "priced-model", inputTokens: 1, outputTokens: 10 })
      )
      assert.isTrue(Either.isLeft(refused) && refused.left.budget === "usd")
      const unpriced = yield* budget.reserve({ role: "researcher", model: "local", inputTokens: 10 })
      assert.strictEqual(unpriced.costUsd, 0)
    })
  )

  it.effect("a resumed run counts what the session spent before", () =>
    Effect.gen(function* () {
      // Research may spend 10,000 less the report's reserve of 2,000: all of it was spent before.
      const budget = yield* Budget.make(tokens(10_000, 0.15), { tokens: 8_000, costUsd: 0 })
      assert.isTrue(yield* budget.researchExhausted)
    })
  )

  it.scoped("warns once at 80% of the research allowance, and once when research stops, never the same twice", () =>
    Effect.gen(function* () {
      const events = yield* ResearchEvents.make
      const queue = yield* events.subscribe
      // Research may spend 12,000 less the report's reserve of 2,000: 10,000.
      const budget = yield* Budget.make(tokens(12_000), none)
      const spend = (amount: number) =>
        Effect.flatMap(budget.reserve(researcher(amount, 1_000)), (reservation) =>
          budget.settle(reservation, { tokens: amount, costUsd: 0 })
        )
      const run = (effect: Effect.Effect<unknown, unknown>) =>
        Effect.ignore(effect).pipe(Effect.provideService(ResearchEvents.ResearchEvents, events))
      yield* run(spend(5_000))
      assert.strictEqual(yield* Queue.size(queue), 0)
      yield* run(spend(3_500))
      yield* run(spend(100))
      yield* run(spend(1_000))
      yield* run(spend(1_000))
      const warnings = [...(yield* Queue.takeAll(queue))]
      assert.deepStrictEqual(
        warnings.map((e) => (e._tag === "BudgetWarning" ? [e.level, e.spent, e.limit] : [])),
        [
          ["warning", 8_500, 12_000],
          ["research_stopped", 8_600, 12_000]
        ]
      )
    })
  )

  it.scoped("crossing both at once sends only that research stopped", () =>
    Effect.gen(function* () {
      const events = yield* ResearchEvents.make
      const queue = yield* events.subscribe
      const budget = yield* Budget.make(tokens(10_000), none)
      yield* Effect.ignore(budget.reserve(researcher(20_000))).pipe(
        Effect.provideService(ResearchEvents.ResearchEvents, events)
      )
      const warnings = [...(yield* Queue.takeAll(queue))]
      assert.deepStrictEqual(
        warnings.map((e) => (e._tag === "BudgetWarning" ? e.level : "")),
        ["research_stopped"]
      )
    })
  )
})
