/**
 * The fetch-time summarizer: one source in, an executive summary and at most five verbatim excerpts out. The
 * pipeline's implementation runs through the `summarization` role.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { MalformedOutput, ProviderError } from "./Errors.js"
import type { SourceSummary } from "./Source.js"

/** What is summarised. */
export interface SummaryInput {
  readonly url: string
  readonly title: string
  readonly content: string
}

/** A summarizer. */
export interface Service {
  readonly summarize: (input: SummaryInput) => Effect.Effect<SourceSummary, ProviderError | MalformedOutput>
}

/** The summarizer in context. */
export class Summarizer extends Context.Tag("@deep-research/core/Summarizer")<Summarizer, Service>() {}
