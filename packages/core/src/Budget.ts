/**
 * The spending limits of a run, over its `UsageLedger`: optional token and USD budgets, checked before each call.
 * Research may spend the budget minus the synthesis reserve; when that runs low research stops and synthesis runs on
 * what exists, with the reserve kept for it. Crossing 80% of the research allowance, and reaching it, publishes a
 * `BudgetWarning` (once each).
 */
import * as Effect from "effect/Effect"
import * as Ref from "effect/Ref"
import * as Pricing from "./Pricing.js"
import type * as ResearchConfig from "./ResearchConfig.js"
import * as ResearchEvents from "./ResearchEvents.js"
import type * as UsageLedger from "./UsageLedger.js"
import { totals } from "./UsageLedger.js"
import { Usage } from "./Usage.js"

/** What a run has spent. */
export interface Spent {
  readonly tokens: number
  readonly costUsd: number
}

/** A call about to be made, to check before making it: its model and its estimated input tokens. */
export interface NextCall {
  readonly model: string
  readonly inputTokens: number
  /** Output tokens to expect; a quarter of the input when not given, at most 8,000. */
  readonly outputTokens?: number | undefined
}

/** Where a run stands against its budget. */
export interface Status {
  readonly spent: Spent
  /** The share of the research allowance spent (0 when there is no budget), the largest over tokens and USD. */
  readonly researchShare: number
  /** True when research must stop to keep the synthesis reserve. */
  readonly researchExhausted: boolean
  /** True when the whole budget, reserve included, is spent. */
  readonly exhausted: boolean
}

/** The share of the research allowance at which the first warning goes out. */
export const warningShare = 0.8

/** A run's budget. */
export interface Service {
  readonly status: Effect.Effect<Status>
  /**
   * True when research must stop: the allowance (budget minus the synthesis reserve) is spent, or would be by the
   * next call. Publishes the warnings.
   */
  readonly researchExhausted: (next?: NextCall | undefined) => Effect.Effect<boolean>
}

const none = (limit: number | undefined): limit is undefined => limit === undefined

/** A budget over the ledger; `table` prices the projected next call. */
export const make = (
  budget: ResearchConfig.Budget,
  ledger: UsageLedger.Service,
  table: Pricing.PriceTable = Pricing.defaultTable
): Effect.Effect<Service> =>
  Effect.gen(function* () {
    const warned = yield* Ref.make<ReadonlySet<string>>(new Set())
    const allowance = 1 - budget.synthesisReserve
    const tokenAllowance = none(budget.maxTokens) ? undefined : budget.maxTokens * allowance
    const usdAllowance = none(budget.maxUsd) ? undefined : budget.maxUsd * allowance

    const spent = Effect.map(ledger.snapshot, totals)

    const shareOf = (value: Spent): { readonly tokens: number; readonly usd: number } => ({
      tokens: tokenAllowance === undefined ? 0 : value.tokens / tokenAllowance,
      usd: usdAllowance === undefined ? 0 : value.costUsd / usdAllowance
    })

    const status = Effect.map(spent, (value): Status => {
      const share = shareOf(value)
      return {
        spent: value,
        researchShare: Math.max(share.tokens, share.usd),
        researchExhausted: share.tokens >= 1 || share.usd >= 1,
        exhausted:
          (budget.maxTokens !== undefined && value.tokens >= budget.maxTokens) ||
          (budget.maxUsd !== undefined && value.costUsd >= budget.maxUsd)
      }
    })

    const warn = (kind: "tokens" | "usd", level: string, spentValue: number, limit: number) =>
      Effect.flatMap(
        Ref.modify(warned, (seen) => {
          const key = `${kind}:${level}`
          return seen.has(key) ? [false, seen] : [true, new Set([...seen, key])]
        }),
        (first) =>
          first
            ? ResearchEvents.publish({ _tag: "BudgetWarning", budget: kind, spent: spentValue, limit })
            : Effect.void
      )

    const project = (value: Spent, next: NextCall | undefined): Spent => {
      if (next === undefined) return value
      const outputTokens = next.outputTokens ?? Math.min(8_000, Math.ceil(next.inputTokens / 4))
      const usage = new Usage({ inputTokens: next.inputTokens, outputTokens })
      return {
        tokens: value.tokens + next.inputTokens + outputTokens,
        costUsd: value.costUsd + Pricing.costOf(table, next.model, usage)
      }
    }

    const researchExhausted = (next?: NextCall | undefined) =>
      Effect.gen(function* () {
        if (tokenAllowance === undefined && usdAllowance === undefined) return false
        const value = yield* spent
        const now = shareOf(value)
        const projected = shareOf(project(value, next))
        if (tokenAllowance !== undefined && budget.maxTokens !== undefined) {
          if (now.tokens >= warningShare) yield* warn("tokens", "warning", value.tokens, budget.maxTokens)
          if (projected.tokens >= 1) yield* warn("tokens", "research", value.tokens, budget.maxTokens)
        }
        if (usdAllowance !== undefined && budget.maxUsd !== undefined) {
          if (now.usd >= warningShare) yield* warn("usd", "warning", value.costUsd, budget.maxUsd)
          if (projected.usd >= 1) yield* warn("usd", "research", value.costUsd, budget.maxUsd)
        }
        return projected.tokens >= 1 || projected.usd >= 1
      })

    return { status, researchExhausted }
  })
