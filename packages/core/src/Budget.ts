/**
 * The spending limits of a run: optional token and USD budgets that are ceilings. Every model call of the run reserves
 * its input plus its output limit before it is sent (the `ModelRouter` does it, with the `Budget` in context) and
 * settles what it really spent when it ends; parallel callers wait while calls in flight hold what they need, and a
 * call the budget can no longer cover is refused with `ResearchBudgetExhausted`. Research draws on the budget less the report's
 * reserve (`synthesisReserve` of it, and never less than a report of useful length needs); the report draws on all of
 * it. Crossing 80% of the research allowance publishes a `BudgetWarning`, and so does research stopping (once each).
 *
 * The account is a `TRef` changed in transactions: a reservation is checked and taken in one step, and a caller that
 * must wait for calls in flight retries when the account changes.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Ref from "effect/Ref"
import * as STM from "effect/STM"
import * as TRef from "effect/TRef"
import { ResearchBudgetExhausted } from "./Errors.js"
import * as Pricing from "./Pricing.js"
import type * as ResearchConfig from "./ResearchConfig.js"
import * as ResearchEvents from "./ResearchEvents.js"
import * as Account from "./internal/budget/budgetAccount.js"
import * as BudgetPlan from "./internal/budget/budgetPlan.js"
import type { Role, Usage } from "./Usage.js"

// =============================================================================
// Types
// =============================================================================

/** What a run has spent: tokens and USD. */
export type Spent = Account.Amount

/** The part of the budget a call draws on: research, or the report (which may use all that is left). */
export type Pool = "research" | "report"

/** The pool of a role's calls. */
export const poolOf = (role: Role): Pool => (role === "report" ? "report" : "research")

/** A call about to be made: its role, its model, its input tokens and, when the call sets it, its output limit. */
export interface Call {
  readonly role: Role
  readonly model: string
  readonly inputTokens: number
  readonly outputTokens?: number | undefined
  /** The pool it draws on, where not its role's (the check of a written report draws on what the report left). */
  readonly pool?: Pool | undefined
}

/** What a call holds while it runs; `outputTokens` is the output limit to send with it. */
export interface Reservation extends Spent {
  readonly outputTokens: number
}

/** Where a run stands against its budget. */
export interface Status {
  readonly spent: Spent
  /** The share of the research allowance spent (0 when there is no budget), the largest over tokens and USD. */
  readonly researchShare: number
  /** True once research must stop: its allowance is spent, or a research call was refused. */
  readonly researchExhausted: boolean
  /** True when the whole budget, reserve included, is spent. */
  readonly exhausted: boolean
}

/** A run's budget. */
export interface Service {
  /** False when there is no limit: calls then go out unchecked. */
  readonly limited: boolean
  readonly status: Effect.Effect<Status>
  /** True once research must stop (see `Status.researchExhausted`); synthesis runs on what exists. */
  readonly researchExhausted: Effect.Effect<boolean>
  /** Whether a call could be covered now, without reserving it (a phase that would be skipped otherwise). */
  readonly covers: (call: Call) => Effect.Effect<boolean>
  /**
   * Reserves a call: its input plus its output limit, the limit lowered to what is left when less is left than it
   * asks (never below the role's `minimumOutput`). Waits while calls in flight hold what it needs; fails when the
   * budget cannot cover it even once they are done.
   */
  readonly reserve: (call: Call) => Effect.Effect<Reservation, ResearchBudgetExhausted>
  /** Replaces a reservation by what the call spent (nothing, when it failed). */
  readonly settle: (reservation: Reservation, spent: Spent) => Effect.Effect<void>
  /** Counts spending made without a reservation (a native web search priced per search). */
  readonly charge: (spent: Spent) => Effect.Effect<void>
  /** The most tokens a call to `model` drawing on `pool` could use now; undefined without a budget. */
  readonly room: (pool: Pool, model: string) => Effect.Effect<number | undefined>
}

/** The budget of the current run, in context while it runs. */
export class Budget extends Context.Tag("@deep-research/core/Budget")<Budget, Service>() {}

// =============================================================================
// Sizes
// =============================================================================

/** The share of the research allowance at which the first warning goes out. */
export const warningShare = 0.8

/**
 * Output tokens reserved for a role's call that sets no limit of its own, and sent as its limit: what such a call
 * writes at most in practice (a researcher's turn is tool calls, compression rewrites a topic's findings, the report is
 * the longest).
 */
export const outputEstimate: Readonly<Record<Role, number>> = {
  clarification: 1_000,
  brief: 2_000,
  supervisor: 4_000,
  researcher: 4_000,
  summarization: 2_000,
  compression: 8_000,
  report: 8_000,
  evaluation: 4_000
}

/** Output tokens of a report of useful length (about 700 words): less than this is not worth writing. */
export const usefulReportTokens = 1_000

/** The fewest output tokens worth a call of each role: with less left, the call is refused rather than cut short. */
export const minimumOutput: Readonly<Record<Role, number>> = {
  clarification: 300,
  brief: 500,
  supervisor: 1_000,
  researcher: 1_000,
  summarization: 500,
  compression: 1_000,
  report: usefulReportTokens,
  evaluation: 500
}

/**
 * The least the report's reserve holds, in tokens: its prompt without findings (about 600), some findings, and a
 * report of useful length.
 */
export const minimumReportTokens = 2_000

/** The tokens a budget of `maxTokens` keeps for the report: its share, and at least `minimumReportTokens`. */
export const reportReserveTokens = (maxTokens: number, synthesisReserve: number): number =>
  maxTokens -
  Account.limitsOf({ maxTokens }, synthesisReserve, minimumReportTokens, { input: 0, output: 0 }).research.tokens

/** The smallest token budget that researches at all under a configuration: below it, research has not one round. */
export const smallestResearchBudget = (config: ResearchConfig.ResearchConfig): number =>
  BudgetPlan.smallestBudget(config)

// =============================================================================
// Constructor
// =============================================================================

const unlimited: Service = {
  limited: false,
  status: Effect.succeed({
    spent: { tokens: 0, costUsd: 0 },
    researchShare: 0,
    researchExhausted: false,
    exhausted: false
  }),
  researchExhausted: Effect.succeed(false),
  covers: () => Effect.succeed(true),
  reserve: (call) =>
    Effect.succeed({ tokens: 0, costUsd: 0, outputTokens: call.outputTokens ?? outputEstimate[call.role] }),
  settle: () => Effect.void,
  charge: () => Effect.void,
  room: () => Effect.succeed(undefined)
}

/**
 * The run's budget warnings, each published once: 80% of the research allowance spent (after a call settles), and
 * research stopped (when a research call is refused), which says all the first would and so stops it from following.
 */
const warnings = (budget: ResearchConfig.Budget, research: Spent, whole: Spent) =>
  Effect.map(Ref.make<ReadonlySet<string>>(new Set()), (warned) => {
    const warnOnce = (level: "warning" | "research_stopped", committed: Spent) =>
      Effect.flatMap(
        Ref.modify(warned, (seen) => {
          if (seen.has(level) || seen.has("research_stopped")) return [false, seen] as const
          return [true, new Set([...seen, level])] as const
        }),
        (first) => {
          if (!first) return Effect.void
          const byTokens =
            budget.maxTokens !== undefined &&
            (budget.maxUsd === undefined || committed.tokens / research.tokens >= committed.costUsd / research.costUsd)
          return ResearchEvents.publish({
            _tag: "BudgetWarning",
            level,
            budget: byTokens ? "tokens" : "usd",
            spent: byTokens ? committed.tokens : committed.costUsd,
            limit: byTokens ? whole.tokens : whole.costUsd
          })
        }
      )
    const afterSpending = (committed: Spent) => {
      const share = Math.max(committed.tokens / research.tokens, committed.costUsd / research.costUsd)
      return share >= warningShare && share < 1 ? warnOnce("warning", committed) : Effect.void
    }
    return { warnOnce, afterSpending }
  })

/** What the functions of a limited budget share: its limits, its prices, its account and its warnings. */
interface Limited {
  readonly budget: ResearchConfig.Budget
  readonly table: Pricing.PriceTable
  /** The research allowance: the budget less the report's reserve. */
  readonly research: Spent
  readonly whole: Spent
  readonly account: TRef.TRef<Account.Account>
  readonly warnings: Effect.Effect.Success<ReturnType<typeof warnings>>
}

const ratesOf = (table: Pricing.PriceTable, model: string): Account.Rates => {
  const price = Pricing.priceOf(table, model)
  return { input: (price?.input ?? 0) / 1e6, output: (price?.output ?? 0) / 1e6 }
}

const limitOf = (limited: Limited, pool: Pool): Spent => (pool === "report" ? limited.whole : limited.research)

const exhaustedError = ({ budget, whole }: Limited, committed: Spent) =>
  new ResearchBudgetExhausted(
    budget.maxTokens !== undefined &&
      (budget.maxUsd === undefined || committed.tokens / whole.tokens >= committed.costUsd / whole.costUsd)
      ? { budget: "tokens", limit: budget.maxTokens, spent: committed.tokens }
      : { budget: "usd", limit: budget.maxUsd ?? 0, spent: committed.costUsd }
  )

const decide = (limited: Limited, state: Account.Account, call: Call): Account.Decision => {
  const wanted = call.outputTokens ?? outputEstimate[call.role]
  return Account.decide(state, limitOf(limited, call.pool ?? poolOf(call.role)), {
    inputTokens: call.inputTokens,
    wanted,
    floor: Math.min(wanted, minimumOutput[call.role]),
    rates: ratesOf(limited.table, call.model)
  })
}

const statusOf = ({ account, research, whole }: Limited): Effect.Effect<Status> =>
  Effect.map(STM.commit(TRef.get(account)), (state): Status => {
    const share = Math.max(state.committed.tokens / research.tokens, state.committed.costUsd / research.costUsd)
    return {
      spent: state.committed,
      researchShare: Number.isFinite(share) ? share : 1,
      researchExhausted: state.researchRefused || share >= 1,
      exhausted: state.committed.tokens >= whole.tokens || state.committed.costUsd >= whole.costUsd
    }
  })

type Outcome =
  | { readonly _tag: "Granted"; readonly reservation: Reservation }
  | { readonly _tag: "Refused"; readonly committed: Spent }

/** Checks and takes a reservation in one transaction; waits (retries) while calls in flight hold what it needs. */
const take = (limited: Limited, call: Call): STM.STM<Outcome> =>
  STM.flatMap(TRef.get(limited.account), (state): STM.STM<Outcome> => {
    const decision = decide(limited, state, call)
    if (decision._tag === "Granted") {
      return STM.as(
        TRef.set(limited.account, { ...state, reserved: Account.plus(state.reserved, decision.reservation) }),
        decision
      )
    }
    if (decision._tag === "Wait") return STM.retry
    const refused: Outcome = { _tag: "Refused", committed: state.committed }
    return (call.pool ?? poolOf(call.role)) === "research"
      ? STM.as(TRef.set(limited.account, { ...state, researchRefused: true }), refused)
      : STM.succeed(refused)
  })

const reserve = (limited: Limited, call: Call): Effect.Effect<Reservation, ResearchBudgetExhausted> =>
  Effect.flatMap(STM.commit(take(limited, call)), (outcome) =>
    outcome._tag === "Granted"
      ? Effect.succeed(outcome.reservation)
      : Effect.zipRight(
          (call.pool ?? poolOf(call.role)) === "research"
            ? limited.warnings.warnOnce("research_stopped", outcome.committed)
            : Effect.void,
          Effect.fail(exhaustedError(limited, outcome.committed))
        )
  )

/** Adds what was spent to the account, less the reservation it settles (none for a charge). */
const commit = (limited: Limited, used: Spent, reservation?: Reservation) =>
  Effect.flatMap(
    STM.commit(
      TRef.modify(limited.account, (state) => {
        const committed = Account.plus(state.committed, used)
        const reserved = reservation === undefined ? state.reserved : Account.minus(state.reserved, reservation)
        return [committed, { ...state, committed, reserved }] as const
      })
    ),
    limited.warnings.afterSpending
  )

const room = (limited: Limited, pool: Pool, model: string) =>
  Effect.map(STM.commit(TRef.get(limited.account)), (state) => {
    const free = Account.minus(Account.minus(limitOf(limited, pool), state.committed), state.reserved)
    const rate = ratesOf(limited.table, model)
    const perToken = Math.max(rate.input, rate.output)
    return Math.max(0, Math.floor(Math.min(free.tokens, perToken > 0 ? free.costUsd / perToken : Infinity)))
  })

/**
 * A budget over what the run has already `spent` (after a resume); `table` prices calls, and the report's reserve in
 * USD is priced at `reportModel`'s rates and holds at least `reportTokens`.
 */
export const make = (
  budget: ResearchConfig.Budget,
  spent: Spent,
  options: {
    readonly table?: Pricing.PriceTable | undefined
    readonly reportModel?: string | undefined
    /**
     * Tokens the report is planned to take (a long report's sections, introduction and conclusion, their findings
     * read and a second pass), when more than `minimumReportTokens`: the reserve holds at least that.
     */
    readonly reportTokens?: number | undefined
  } = {}
): Effect.Effect<Service> =>
  Effect.gen(function* () {
    if (budget.maxTokens === undefined && budget.maxUsd === undefined) return unlimited
    const table = options.table ?? Pricing.defaultTable
    const reportRates = ratesOf(table, options.reportModel ?? "")
    const reportTokens = Math.max(minimumReportTokens, options.reportTokens ?? 0)
    const { research, whole } = Account.limitsOf(budget, budget.synthesisReserve, reportTokens, reportRates)
    const limited: Limited = {
      budget,
      table,
      research,
      whole,
      account: yield* STM.commit(
        TRef.make<Account.Account>({ committed: spent, reserved: { tokens: 0, costUsd: 0 }, researchRefused: false })
      ),
      warnings: yield* warnings(budget, research, whole)
    }
    const status = statusOf(limited)
    const service: Service = {
      limited: true,
      status,
      researchExhausted: Effect.map(status, (s) => s.researchExhausted),
      covers: (call) =>
        Effect.map(STM.commit(TRef.get(limited.account)), (state) => decide(limited, state, call)._tag !== "Refused"),
      reserve: (call) => reserve(limited, call),
      settle: (reservation, used) => commit(limited, used, reservation),
      charge: (used) => commit(limited, used),
      room: (pool, model) => room(limited, pool, model)
    }
    return service
  })

/** What a completion spent, priced. */
export const spentBy = (usage: Usage, costUsd: number): Spent => ({
  tokens: usage.inputTokens + usage.outputTokens,
  costUsd
})

/** A budget whose calls all draw on `pool`, whatever their role. */
export const drawingOn =
  (pool: Pool) =>
  (service: Service): Service => ({
    ...service,
    covers: (call) => service.covers({ ...call, pool }),
    reserve: (call) => service.reserve({ ...call, pool })
  })

/** The budget in context, or none (a call made outside a run). */
export const current: Effect.Effect<Service> = Effect.map(Effect.serviceOption(Budget), (budget) =>
  budget._tag === "Some" ? budget.value : unlimited
)
