/**
 * What a research unit is given: the directive, the question and its brief, the settings, the sources of earlier
 * rounds and a way to be told to stop. The supervisor hands it out, a research unit runs on it and the unit's
 * researcher reads it whole, so it is declared below all three (public as `ResearchUnit.Input`).
 */
import type * as Effect from "effect/Effect"
import type { Brief, IssuedDirective } from "../../Research.js"
import type { ResearchConfig } from "../../ResearchConfig.js"
import type { Source } from "../../Source.js"

/** What a research unit is given: the contract between the supervisor and whatever runs its units. */
export interface Input {
  /** The directive, with its id and round. */
  readonly directive: IssuedDirective
  /** The user's question. */
  readonly query: string
  readonly brief: Brief | undefined
  readonly config: ResearchConfig
  /** Sources of earlier rounds: compared against for novelty and dedup, never added again. */
  readonly knownSources: ReadonlyArray<Source>
  /** Checked before each model call; true stops the unit cleanly (stopReason "run_budget"). */
  readonly shouldStop: Effect.Effect<boolean>
}
