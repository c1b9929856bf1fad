/** Counting what a model spends across the calls of one evaluation (retries included). */
import * as Effect from "effect/Effect"
import * as Ref from "effect/Ref"
import { Tokens, Usage, type LanguageModel } from "@deep-research/core"

/** A model that adds the usage of every call to `spent`. */
export const counting = (model: LanguageModel.Service, spent: Ref.Ref<Usage.Usage>): LanguageModel.Service => ({
  ...model,
  generate: (request) =>
    Effect.tap(model.generate(request), (completion) =>
      Ref.update(spent, (usage) => Usage.add(usage, completion.usage))
    )
})

/** Characters a prompt may take in a model's context window, leaving room for the answer (core's estimate). */
export const promptBudgetChars = (model: LanguageModel.Service, outputTokens: number): number =>
  Math.max(4_000, Math.floor(Tokens.charactersFor(model.contextWindow - outputTokens) * 0.9))
