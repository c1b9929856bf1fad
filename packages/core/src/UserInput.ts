/**
 * A person who can answer a question while the run waits (the CLI on a terminal). Where none is provided the
 * pipeline never blocks.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { ResearchInvalidInput } from "./Errors.js"

/** Someone to ask. */
export interface Service {
  /** The answer, or `ResearchInvalidInput` when the person declined. */
  readonly ask: (question: string) => Effect.Effect<string, ResearchInvalidInput>
}

/** The person in context. */
export class UserInput extends Context.Tag("@deep-research/core/UserInput")<UserInput, Service>() {}
