/**
 * The arithmetic of a run's budget, apart from its transactions (`Budget.ts`): amounts of tokens and USD, the limits
 * research and the report draw on, and what a call is granted from what the account holds.
 */

/** Tokens and USD together: spent, held, or allowed. */
export interface Amount {
  readonly tokens: number
  readonly costUsd: number
}

/** A model's prices, USD a token. */
export interface Rates {
  readonly input: number
  readonly output: number
}

/** What a run has spent, and what calls in flight hold. */
export interface Account {
  readonly committed: Amount
  readonly reserved: Amount
  /** Set when a research call was refused: research stops. */
  readonly researchRefused: boolean
}

/** What a call asks for: its input, the output it wants, the least output worth it, and its model's rates. */
export interface Ask {
  readonly inputTokens: number
  readonly wanted: number
  readonly floor: number
  readonly rates: Rates
}

/** A call granted, told to wait for calls in flight, or refused outright. */
export type Decision =
  | { readonly _tag: "Granted"; readonly reservation: Amount & { readonly outputTokens: number } }
  | { readonly _tag: "Wait" }
  | { readonly _tag: "Refused" }

export const plus = (a: Amount, b: Amount): Amount => ({ tokens: a.tokens + b.tokens, costUsd: a.costUsd + b.costUsd })

export const minus = (a: Amount, b: Amount): Amount => ({
  tokens: a.tokens - b.tokens,
  costUsd: a.costUsd - b.costUsd
})

/**
 * The limits of research and of the report: the report may use the whole budget; research, the budget less the
 * report's reserve, which is `reserveShare` of it and never less than `minimumReportTokens` (priced at the report
 * model's dearer rate, for a USD budget). An absent limit is infinite.
 */
export const limitsOf = (
  budget: { readonly maxTokens?: number | undefined; readonly maxUsd?: number | undefined },
  reserveShare: number,
  minimumReportTokens: number,
  reportRates: Rates
): { readonly research: Amount; readonly whole: Amount } => {
  const whole: Amount = { tokens: budget.maxTokens ?? Infinity, costUsd: budget.maxUsd ?? Infinity }
  const reserveOf = (limit: number, perToken: number) =>
    Number.isFinite(limit) ? Math.min(limit, Math.max(limit * reserveShare, minimumReportTokens * perToken)) : 0
  return {
    whole,
    research: {
      tokens: whole.tokens - reserveOf(whole.tokens, 1),
      costUsd: whole.costUsd - reserveOf(whole.costUsd, Math.max(reportRates.input, reportRates.output))
    }
  }
}

/** The most output tokens a call may have within `room`, after its input (negative when not even its input fits). */
export const grantWithin = (room: Amount, ask: Ask): number => {
  const { input, output } = ask.rates
  if (output === 0 && ask.inputTokens * input > room.costUsd) return -1
  const byTokens = room.tokens - ask.inputTokens
  const byUsd = output > 0 ? (room.costUsd - ask.inputTokens * input) / output : Infinity
  return Math.floor(Math.min(byTokens, byUsd))
}

/**
 * What a call drawing on `limit` gets: the output it wants when that fits beside the calls in flight; less, down to
 * its floor, when no more would fit even once they are done; else it waits for them when their end would let it fit,
 * and is refused when nothing would.
 */
export const decide = (state: Account, limit: Amount, ask: Ask): Decision => {
  const now = grantWithin(minus(minus(limit, state.committed), state.reserved), ask)
  const later = grantWithin(minus(limit, state.committed), ask)
  if (now >= ask.floor && now >= Math.min(ask.wanted, later)) {
    const outputTokens = Math.min(ask.wanted, now)
    return {
      _tag: "Granted",
      reservation: {
        tokens: ask.inputTokens + outputTokens,
        costUsd: ask.inputTokens * ask.rates.input + outputTokens * ask.rates.output,
        outputTokens
      }
    }
  }
  return later >= ask.floor ? { _tag: "Wait" } : { _tag: "Refused" }
}
