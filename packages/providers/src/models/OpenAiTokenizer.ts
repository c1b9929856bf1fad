/**
 * OpenAI's published o200k encoding (the GPT-4o, GPT-4.1, GPT-4.5, GPT-5, o-series and gpt-oss models), through
 * `gpt-tokenizer`: exact input counts for those models, where core has only its script-aware estimate. The encoding's
 * table is loaded on first use, not with the module: it takes a few hundred milliseconds and about 20 MB, which a run
 * without a budget, or on another vendor's model, never needs.
 */
import { type LanguageModel, Tokens } from "@deep-research/core"
import * as Effect from "effect/Effect"

/** The model families that use o200k, by name (a served model under another name is estimated instead). */
const o200kModels = /(^|[^a-z0-9])(gpt-4o|chatgpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|gpt-oss|o1|o3|o4)([^a-z0-9]|$)/i

/** Whether the model named counts its tokens in o200k. */
export const usesO200k = (model: string): boolean => o200kModels.test(model)

// Special tokens written in a text (a web page may hold `<|endoftext|>`) are counted as the text they are, as OpenAI
// treats them in a message.
const noSpecialTokens = { disallowedSpecial: new Set<string>() }

let loading: Promise<Tokens.TextCounter> | undefined

/** The counter of o200k tokens, loaded once per process. */
export const counter: Effect.Effect<Tokens.TextCounter> = Effect.promise(() => {
  loading ??= import("gpt-tokenizer/encoding/o200k_base").then(
    (encoding): Tokens.TextCounter =>
      (text) =>
        text.length === 0 ? 0 : encoding.countTokens(text, noSpecialTokens)
  )
  return loading
})

/** The o200k tokens of a text. */
export const countText = (text: string): Effect.Effect<number> => Effect.map(counter, (count) => count(text))

let requestCounter: ((request: LanguageModel.GenerateRequest) => number) | undefined

/** The input tokens of a request in o200k, with the vendor's overhead around each message. */
export const countRequest = (request: LanguageModel.GenerateRequest): Effect.Effect<number> =>
  Effect.map(counter, (count) => {
    requestCounter ??= Tokens.requestTokensWith(count)
    return requestCounter(request)
  })
