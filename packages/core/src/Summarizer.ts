/**
 * The fetch-time summarizer: one source in, an executive summary and at most five verbatim excerpts out. The
 * pipeline's implementation runs through the `summarization` role.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type { ModelMalformedOutput, ProviderError } from "./Errors.js"
import * as LanguageModel from "./LanguageModel.js"
import { ModelRouter } from "./ModelRouter.js"
import * as Prompt from "./prompts/summarization.js"
import { SourceSummary } from "./Source.js"
import * as StructuredOutput from "./StructuredOutput.js"

/** What is summarised. */
export interface SummaryInput {
  readonly url: string
  readonly title: string
  readonly content: string
}

/** A summarizer. */
export interface Service {
  readonly summarize: (input: SummaryInput) => Effect.Effect<SourceSummary, ProviderError | ModelMalformedOutput>
}

/**
 * The summarizer in context. A port (a tag) rather than an `Effect.Service`: besides `layer`'s summarizer over the
 * summarization role, `SessionRequests` provides a view that sends each distinct text once, and tests provide fakes.
 */
export class Summarizer extends Context.Tag("@deep-research/core/Summarizer")<Summarizer, Service>() {}

// =============================================================================
// The summarizer over the `summarization` role
// =============================================================================

/** What the summarization model answers; more than five excerpts are cut rather than sent back. */
export const Answer = Schema.Struct({
  summary: Schema.String.annotations({ description: "The executive summary, about a quarter of the page's length" }),
  excerpts: Schema.Array(Schema.String).annotations({ description: "Up to five verbatim excerpts of the page" })
})

/** A summarizer over a language model: one structured call per source. */
export const make = (model: LanguageModel.Service): Service => ({
  summarize: Effect.fn("Summarizer.summarize")(function* (input: SummaryInput) {
    const answer = yield* StructuredOutput.generateObject(
      model,
      Answer,
      { system: Prompt.system, messages: [LanguageModel.user(Prompt.user(input))] },
      { name: "source_summary" }
    )
    // Made from the decoded answer, at most five excerpts: the class would only check it again.
    return new SourceSummary(
      {
        summary: answer.value.summary.trim(),
        excerpts: answer.value.excerpts
          .map((excerpt) => excerpt.trim())
          .filter((excerpt) => excerpt !== "")
          .slice(0, 5)
      },
      true
    )
  })
})

/** The summarizer of the pipeline: the `summarization` role of the router in context (its calls are recorded). */
export const layer: Layer.Layer<Summarizer, never, ModelRouter> = Layer.effect(
  Summarizer,
  Effect.map(ModelRouter, (router) => make(router.forRole("summarization")))
)
