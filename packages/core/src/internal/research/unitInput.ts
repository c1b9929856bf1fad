/**
 * What a research unit is given: the task, the directive, the sources of earlier rounds and a way to be told to stop.
 * The supervisor hands it out, a research unit runs on it and the unit's researcher reads it whole, so it is declared
 * below all three (public as `ResearchUnit.Input`).
 */
import type * as Effect from "effect/Effect"
import type { IssuedDirective } from "../../Research.js"
import type { Source } from "../../Source.js"
import type { Task } from "../../Task.js"

/** What a research unit is given: the contract between the supervisor and whatever runs its units. */
export interface Input {
  /** The run's task: the question, its brief and the settings. */
  readonly task: Task
  /** The directive, with its id and round. */
  readonly directive: IssuedDirective
  /** Sources of earlier rounds: compared against for novelty and dedup, never added again. */
  readonly knownSources: ReadonlyArray<Source>
  /** Checked before each model call; true stops the unit cleanly (stopReason "run_budget"). */
  readonly shouldStop: Effect.Effect<boolean>
}
