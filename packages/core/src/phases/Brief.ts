/**
 * The brief: a structured research brief from the question and the clarification. If it cannot be had, the original
 * question stands in (`briefFallback`) and research goes on.
 */
import * as Effect from "effect/Effect"
import { endsRun, isUnreachable } from "../Errors.js"
import * as LanguageModel from "../LanguageModel.js"
import * as ModelRouter from "../ModelRouter.js"
import * as Prompt from "../prompts/brief.js"
import { Brief } from "../Research.js"
import * as ResearchEvents from "../ResearchEvents.js"
import * as StructuredOutput from "../StructuredOutput.js"
import type { Task } from "../Task.js"
import { today } from "../internal/text/calendar.js"

/** What the phase produced: a brief, or none when the question stands in. */
export interface Outcome {
  readonly brief: Brief | undefined
  readonly fallback: boolean
}

/** Runs the brief phase on the task as asked: its question and clarification. */
export const run = Effect.fn("Brief.run")(function* (task: Pick<Task, "query" | "clarification">) {
  const model = yield* ModelRouter.forRole("brief")
  const date = yield* today
  const brief = yield* StructuredOutput.generateObject(
    model,
    Brief,
    { system: Prompt.system(date), messages: [LanguageModel.user(Prompt.user(task))] },
    { name: "research_brief" }
  ).pipe(
    Effect.map((generated) => (generated.value.brief.trim() === "" ? undefined : generated.value)),
    Effect.catchIf(
      (error) => !endsRun(error) && !isUnreachable(error),
      (error) => Effect.as(Effect.logWarning("brief failed; the original question stands in", error), undefined)
    )
  )
  yield* ResearchEvents.publish({
    _tag: "BriefWritten",
    brief: brief?.brief ?? task.query,
    fallback: brief === undefined
  })
  return { brief, fallback: brief === undefined } satisfies Outcome
})

/** No brief is written (the budget cannot pay for one): the original question stands in. */
export const fallback = (query: string): Effect.Effect<Outcome> =>
  Effect.as(ResearchEvents.publish({ _tag: "BriefWritten", brief: query, fallback: true }), {
    brief: undefined,
    fallback: true
  })
