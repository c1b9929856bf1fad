/**
 * The plan of a small token budget, made before anything is spent: what the brief, the supervisor's plan and one
 * researcher cost is estimated, and a budget too small for a round of the configured width gets fewer researchers and
 * fewer searches each, so that it researches something; one too small for even one researcher with one search is
 * said to be so, in numbers, before anything is spent (the run then writes what the budget allows).
 *
 * The estimates are of what calls spend with the project's prompts (measured on the emulator's runs, rounded up for a
 * real model's longer answers), plus what the last call reserves for its answer beyond what it spends (a call is sent
 * only when its input and `minimumOutput` fit). A run may spend less; it never needs much more for the plan's width.
 */
import * as Either from "effect/Either"
import * as ResearchConfig from "../../ResearchConfig.js"
import { limitsOf } from "./budgetAccount.js"

/** Tokens a call of each kind spends, as estimated (input and output together). */
export const estimates = {
  clarification: 800,
  brief: 800,
  supervisor: 1_500,
  /** A researcher's first turn; each later one reads the results before it (`perSearch` more). */
  researcherTurn: 1_700,
  /** What each search adds to a researcher's later turns and its compression, and the summary of its pages. */
  perSearch: 600,
  summarization: 1_200,
  compression: 2_100,
  /** What the last call of research holds beyond what it spends: the least answer it is sent with. */
  headroom: 800
} as const

/** Tokens one researcher with `searches` searches costs: a turn for each and the last, summaries, compression. */
export const researcherCost = (searches: number): number => {
  let turns = 0
  for (let turn = 0; turn <= searches; turn++) turns += estimates.researcherTurn + turn * estimates.perSearch
  return turns + searches * estimates.summarization + estimates.compression + searches * estimates.perSearch
}

/** The searches a researcher is planned for where the budget is tight: what a useful researcher does. */
const typicalSearches = 2

/** The tokens of the smallest round: the setup, one researcher with one search, and what its last call holds. */
const smallestRound = (config: ResearchConfig.ResearchConfig): number =>
  setupOf(config) + researcherCost(1) + estimates.headroom

/**
 * The smallest token budget that researches at all under `config`: one whose research, after the report's reserve (its
 * share, or at least 2,000), holds the smallest round; rounded up to a thousand.
 */
export const smallestBudget = (config: ResearchConfig.ResearchConfig): number => {
  const smallest = smallestRound(config)
  return roundUp(Math.max(smallest + 2_000, smallest / (1 - config.budget.synthesisReserve)))
}

const setupOf = (config: ResearchConfig.ResearchConfig) =>
  (config.allowClarification ? estimates.clarification : 0) + estimates.brief + estimates.supervisor

/** A budget's plan: the research it leaves, and what a round's setup costs. */
export interface Plan {
  readonly budget: number
  readonly research: number
  readonly report: number
  /** The brief (and clarifying question, when allowed) and the supervisor's plan of the first round. */
  readonly setup: number
}

const planOf = (config: ResearchConfig.ResearchConfig, budget: number): Plan => {
  const { research } = limitsOf(
    { maxTokens: budget },
    config.budget.synthesisReserve,
    // The report's reserve as the budget keeps it (`Budget.minimumReportTokens`).
    2_000,
    { input: 0, output: 0 }
  )
  return { budget, research: research.tokens, report: budget - research.tokens, setup: setupOf(config) }
}

/** Whether `researchers` researchers with `searches` searches each fit the plan. */
const fits = (plan: Plan, researchers: number, searches: number) =>
  plan.setup + researchers * researcherCost(searches) + estimates.headroom <= plan.research

/** The configuration fitted to its token budget, and a sentence saying what was changed and why. */
export interface Fitted {
  readonly config: ResearchConfig.ResearchConfig
  readonly note: string | undefined
}

const width = (config: ResearchConfig.ResearchConfig) =>
  Math.min(config.maxConcurrentResearchUnits, config.maxDirectivesPerRound)

/**
 * The configuration fitted to its token budget: unchanged without one, or when a round of its width, each researcher
 * making `typicalSearches` searches, fits; else the most researchers and searches that fit; or, when not even one
 * researcher with one search fits, the sentence that says so in numbers (Left).
 */
export const fit = (config: ResearchConfig.ResearchConfig): Either.Either<Fitted, string> => {
  const budget = config.budget.maxTokens
  if (budget === undefined) return Either.right({ config, note: undefined })
  const plan = planOf(config, budget)
  const wanted = width(config)
  const searches = Math.min(config.researcherMaxToolCalls, typicalSearches)
  if (fits(plan, wanted, searches)) return Either.right({ config, note: undefined })
  const smallest = smallestRound(config)
  if (!fits(plan, 1, 1)) {
    const needed = smallestBudget(config)
    return Either.left(
      `a budget of ${budget} tokens is too small to research: after the report's reserve of ${plan.report} tokens, research ` +
        `has ${plan.research}, and the smallest round needs about ${smallest} (the brief and the supervisor's plan ` +
        `about ${plan.setup}, one researcher with one search about ${researcherCost(1)}: two turns, a summary and ` +
        `a compression, and ${estimates.headroom} that the last call holds for its answer). Give a budget of at ` +
        `least ${needed} tokens.`
    )
  }
  let researchers = 1
  while (researchers < wanted && fits(plan, researchers + 1, searches)) researchers++
  let planned = 1
  while (planned < config.researcherMaxToolCalls && fits(plan, researchers, planned + 1)) planned++
  const fitted = {
    maxConcurrentResearchUnits: Math.min(config.maxConcurrentResearchUnits, researchers),
    maxDirectivesPerRound: Math.min(config.maxDirectivesPerRound, researchers),
    researcherMaxToolCalls: Math.min(config.researcherMaxToolCalls, planned)
  }
  const round = plan.setup + researchers * researcherCost(planned)
  return Either.right({
    config: new ResearchConfig.ResearchConfig({ ...config, ...fitted }),
    note:
      `budget plan: ${budget} tokens leave research ${plan.research} after the report's ${plan.report}; a round of ` +
      `${wanted} researchers would cost about ${plan.setup + wanted * researcherCost(searches)}, so this run ` +
      `researches with ${researchers} researcher${researchers === 1 ? "" : "s"} of at most ${planned} ` +
      `search${planned === 1 ? "" : "es"} (about ${round} tokens)`
  })
}

/** `n` rounded up to the next thousand. */
const roundUp = (n: number) => Math.ceil(n / 1_000) * 1_000
