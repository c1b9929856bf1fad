/**
 * What a new session starts from: its id, and its configuration decoded and fitted to a small token budget before
 * anything is spent (`Pipeline` begins and enqueues sessions with them).
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Random from "effect/Random"
import { ResearchInvalidInput } from "../../Errors.js"
import * as ResearchConfig from "../../ResearchConfig.js"
import * as BudgetPlan from "../budget/budgetPlan.js"

const idAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

/** A new session id: the UTC time and six random characters, e.g. `dr-20260301-142530-k3x9qa`. */
export const newSessionId: Effect.Effect<string> = Effect.gen(function* () {
  const now = yield* Clock.currentTimeMillis
  const stamp = new Date(now).toISOString().slice(0, 19).replace(/[-:]/g, "").replace("T", "-")
  let suffix = ""
  for (let i = 0; i < 6; i++) suffix += idAlphabet[yield* Random.nextIntBetween(0, idAlphabet.length)] ?? "x"
  return `dr-${stamp}-${suffix}`
})

export const decodeConfig = (
  config: ResearchConfig.ResearchConfig | Partial<typeof ResearchConfig.ResearchConfig.Encoded> | undefined
): Effect.Effect<ResearchConfig.ResearchConfig, ResearchInvalidInput> => {
  if (config instanceof ResearchConfig.ResearchConfig) return planned(config)
  // No configuration is the defaults, decoded once rather than for every session.
  if (config === undefined) return Effect.succeed(ResearchConfig.defaults)
  return ResearchConfig.decode(config).pipe(
    Effect.mapError(
      (error) =>
        new ResearchInvalidInput({
          reason: `the research configuration is invalid:\n${ParseResult.TreeFormatter.formatErrorSync(error)}`
        })
    ),
    Effect.flatMap(planned)
  )
}

/**
 * A new session's configuration fitted to a small token budget before anything is spent (`BudgetPlan`): fewer
 * researchers and searches, said in a line; or, when not even one researcher fits, a line that says so in numbers
 * (the run goes on, writing from what the budget allows, as it always could).
 */
const planned = (config: ResearchConfig.ResearchConfig) =>
  Either.match(BudgetPlan.fit(config), {
    onLeft: (reason) => Effect.as(Effect.logWarning(reason), config),
    onRight: ({ config, note }) => Effect.as(note === undefined ? Effect.void : Effect.logWarning(note), config)
  })
