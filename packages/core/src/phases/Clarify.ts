/**
 * Clarification: a structured decision whether the question needs one, then, when it does, ask the `UserInput`
 * ("ask"), go on with the model's understanding as constraints ("proceed"), or stop and wait for an answer ("await").
 * It never blocks where nobody can answer, and a failing model never stops the run.
 */
import { today } from "../internal/text/calendar.js"
import * as Effect from "effect/Effect"
import { endsRun, isUnreachable } from "../Errors.js"
import * as Option from "effect/Option"
import * as ModelRouter from "../ModelRouter.js"
import * as LanguageModel from "../LanguageModel.js"
import * as Prompt from "../prompts/clarify.js"
import { Clarification, ClarificationRecord } from "../Research.js"
import * as ResearchEvents from "../ResearchEvents.js"
import * as StructuredOutput from "../StructuredOutput.js"
import * as Task from "../Task.js"
import { UserInput } from "../UserInput.js"

/** What to do when a clarification is needed. */
export type Mode = "ask" | "proceed" | "await"

/** What the phase decided. */
export interface Outcome {
  /** The decision and the answer, when the model gave a decision. */
  readonly record: ClarificationRecord | undefined
  /** True when the run must stop and wait for the user's answer. */
  readonly awaiting: boolean
}

/** The mode to use when the caller did not say: ask when someone can answer, otherwise go on. */
export const defaultMode: Effect.Effect<Mode> = Effect.map(Effect.serviceOption(UserInput), (input) =>
  Option.isSome(input) ? "ask" : "proceed"
)

/** Asks the `UserInput` in context, if there is one; "" when nobody answers. */
export const askNow = (question: string): Effect.Effect<string> =>
  Effect.flatMap(Effect.serviceOption(UserInput), (input) =>
    Option.isSome(input)
      ? input.value.ask(question).pipe(
          Effect.map((text) => text.trim()),
          Effect.orElseSucceed(() => "")
        )
      : Effect.succeed("")
  )

/** Runs the clarification phase. */
export const run = Effect.fn("Clarify.run")(function* (query: string, mode: Mode) {
  const model = yield* ModelRouter.forRole("clarification")
  const date = yield* today
  const decided = yield* StructuredOutput.generateObject(
    model,
    Clarification,
    { system: Prompt.system(date), messages: [LanguageModel.user(Prompt.user(query))] },
    { name: "clarification" }
  ).pipe(
    Effect.map((generated) => generated.value),
    // A clarification that cannot be had is no reason to stop: research goes on with the question as asked. A model
    // that refuses the key or cannot be reached is: no later phase would do better.
    Effect.catchIf(
      (error) => !endsRun(error) && !isUnreachable(error),
      (error) => Effect.as(Effect.logWarning("clarification failed; going on without it", error), undefined)
    )
  )
  if (decided === undefined) {
    yield* ResearchEvents.publish({ _tag: "ClarificationResolved", needed: false, answered: false, verification: "" })
    return { record: undefined, awaiting: false } satisfies Outcome
  }
  const needed = decided.needClarification && decided.question.trim() !== ""
  if (!needed) {
    yield* ResearchEvents.publish({
      _tag: "ClarificationResolved",
      needed: false,
      answered: false,
      verification: decided.verification
    })
    return { record: new ClarificationRecord({ decision: decided }), awaiting: false } satisfies Outcome
  }
  yield* ResearchEvents.publish({ _tag: "ClarificationAsked", question: decided.question })
  if (mode === "await") {
    yield* ResearchEvents.publish({ _tag: "SessionAwaitingClarification", question: decided.question })
    return { record: new ClarificationRecord({ decision: decided }), awaiting: true } satisfies Outcome
  }
  // A person who declines to answer is like nobody there: the understood constraints stand in.
  const answer = mode === "ask" ? yield* askNow(decided.question) : ""
  yield* ResearchEvents.publish({
    _tag: "ClarificationResolved",
    needed: true,
    answered: answer !== "",
    verification: decided.verification
  })
  return {
    record: new ClarificationRecord({ decision: decided, ...(answer !== "" ? { answer } : {}) }),
    awaiting: false
  } satisfies Outcome
})

/** The record once the user's answer to an awaited question came. */
export const answered = (record: ClarificationRecord, answer: string): ClarificationRecord =>
  new ClarificationRecord({ decision: record.decision, ...(answer.trim() !== "" ? { answer: answer.trim() } : {}) })

/** What the clarification contributes to later phases as constraints: the answer, else the understanding. */
export const constraints: (record: ClarificationRecord | undefined) => string | undefined = Task.constraintsOf
