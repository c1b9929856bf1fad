/**
 * A person who can answer a question while the run waits (the CLI on a terminal). Where none is provided the
 * pipeline never blocks.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { InvalidInput } from "./Errors.js"

/** Someone to ask. */
export interface Service {
  /** The answer, or `InvalidInput` when the person declined. */
  readonly ask: (question: string) => Effect.Effect<string, InvalidInput>
}

/** The person in context. */
export class UserInput extends Context.Tag("@deep-research/core/UserInput")<UserInput, Service>() {}
