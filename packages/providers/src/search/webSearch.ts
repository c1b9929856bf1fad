import { Budget, Pricing, type Usage, UsageLedger } from "@deep-research/core"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"

/** How a search's time range is said to a model that runs the search itself. */
export const timeRangeText = {
  day: "the past day",
  week: "the past week",
  month: "the past month",
  year: "the past year"
} as const

/**
 * Records what a native web search cost in the run's `UsageLedger` (when there is one) and its `Budget`: the call's
 * tokens at the model's price plus a fee per search, under `role`.
 */
export const recordSearchSpend = (options: {
  readonly role: Usage.Role
  readonly model: string
  readonly usage: Usage.Usage
  readonly searches: number
  readonly searchFeeUsd: number
}): Effect.Effect<void> =>
  Effect.gen(function* () {
    const ledger = yield* Effect.serviceOption(UsageLedger.UsageLedger)
    if (Option.isNone(ledger)) return
    const table = Option.getOrElse(yield* Effect.serviceOption(Pricing.Pricing), () => Pricing.defaultTable)
    const costUsd = Pricing.costOf(table, options.model, options.usage) + options.searches * options.searchFeeUsd
    yield* ledger.value.record(options.role, options.usage, costUsd)
    // Made by a search provider, not through the router: the run's budget is told of it after the fact.
    yield* Effect.flatMap(Budget.current, (budget) => budget.charge(Budget.spentBy(options.usage, costUsd)))
  })
