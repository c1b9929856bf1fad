/**
 * The settings a resumed run may change: the budget. A run stopped by its budget (research cut short, or a report
 * that rests on no source because nothing could be afforded) can only finish with more of it, so a larger budget
 * given to `resume` replaces the stored one and, when the budget is what stopped research, opens research again
 * (its finished rounds and researchers kept); a budget that does not exceed what the session spent is refused.
 */
import * as Effect from "effect/Effect"
import { upperBounds } from "../../Defaults.js"
import { ResearchInvalidInput } from "../../Errors.js"
import * as Checkpoint from "../../phases/Checkpoint.js"
import { Budget, ResearchConfig } from "../../ResearchConfig.js"
import { SupervisionRound } from "../../Research.js"
import type { Session } from "../../Session.js"
import * as UsageLedger from "../../UsageLedger.js"

/** A new budget for a resumed run; a field left out keeps the stored one. */
export interface BudgetChange {
  readonly maxTokens?: number | undefined
  readonly maxUsd?: number | undefined
}

const refuse = (reason: string) => Effect.fail(new ResearchInvalidInput({ reason }))

/** Whether the budget is what stopped the session's research. */
export const stoppedByBudget = (session: Session): boolean =>
  session.supervisionStopReason === "budget" ||
  session.rounds.some((round) => round.results.some((result) => result.stopReason === "run_budget"))

/** The stored session with the new budget applied (and its research opened again where the budget stopped it). */
export const withBudget = (
  stored: Session,
  change: BudgetChange | undefined
): Effect.Effect<Session, ResearchInvalidInput> =>
  Effect.gen(function* () {
    if (change === undefined || (change.maxTokens === undefined && change.maxUsd === undefined)) return stored
    const { maxTokens, maxUsd } = change
    const spent = UsageLedger.totals(stored.usage)
    if (maxTokens !== undefined) {
      if (!Number.isInteger(maxTokens) || maxTokens <= 0 || maxTokens > upperBounds.maxTokens) {
        return yield* refuse(`the token budget must be a whole number from 1 to ${upperBounds.maxTokens}`)
      }
      if (maxTokens <= spent.tokens) {
        return yield* refuse(
          `session ${stored.id} has spent ${spent.tokens} tokens already: a budget of ${maxTokens} tokens leaves ` +
            `nothing to research or write with; give more than ${spent.tokens}`
        )
      }
    }
    if (maxUsd !== undefined) {
      if (!(maxUsd > 0) || maxUsd > upperBounds.maxUsd) {
        return yield* refuse(`the USD budget must be above 0 and at most ${upperBounds.maxUsd}`)
      }
      if (maxUsd <= spent.costUsd) {
        return yield* refuse(
          `session ${stored.id} has spent $${spent.costUsd.toFixed(4)} already: a budget of $${maxUsd} leaves ` +
            `nothing to research or write with; give more than that`
        )
      }
    }
    const budget = new Budget({
      ...stored.config.budget,
      ...(maxTokens !== undefined ? { maxTokens } : {}),
      ...(maxUsd !== undefined ? { maxUsd } : {})
    })
    const config = new ResearchConfig({ ...stored.config, budget })
    if (stored.status === "completed" || !stoppedByBudget(stored)) return Checkpoint.patch(stored, { config })
    // Research stopped for want of budget: it goes on (a researcher the budget stopped before it found anything runs
    // again, the others are kept), and the report is written again from what it then has.
    const phasesCompleted = stored.phasesCompleted.filter(
      (phase) => phase !== "supervision" && phase !== "synthesis" && phase !== "verification"
    )
    const rounds = stored.rounds.map((round) => {
      const results = round.results.filter((r) => !(r.stopReason === "run_budget" && r.sourceIds.length === 0))
      // A saved round's parts: not validated again.
      return results.length === round.results.length
        ? round
        : new SupervisionRound({ ...round, results, completed: false }, true)
    })
    return Checkpoint.patch(stored, {
      config,
      phasesCompleted,
      rounds,
      supervisionStopReason: undefined,
      report: undefined,
      verification: undefined
    })
  })
