/**
 * What every reply builder of the emulator shares: ids and timestamps as the vendors write them, a token estimate
 * for scripted texts, OpenAI's usage block (Perplexity answers with it too) and the JSON reply itself. Below the
 * model and search reply builders so both take them from one place, with one id counter.
 */
import type { Reply } from "./types.js"

/** Token counts of a scripted answer; output defaults to the text's length / 4, input to 10. */
export interface UsageInput {
  readonly input?: number | undefined
  readonly output?: number | undefined
  readonly cached?: number | undefined
  readonly reasoning?: number | undefined
}

let idCounter = 0
/** An id in the vendors' style: the prefix, then a counter shared by every builder. */
export const nextId = (prefix: string): string => `${prefix}${(++idCounter).toString(36).padStart(8, "0")}`
/** The time in seconds, as the vendors' `created` fields give it. */
export const now = (): number => Math.floor(Date.now() / 1000)
/** A token count for a text no usage was scripted for. */
export const estimate = (text: string): number => Math.max(1, Math.ceil(text.length / 4))

/** A reply with a JSON body. */
export const json = (
  body: unknown,
  options?: { readonly status?: number; readonly headers?: Record<string, string> }
): Reply => ({
  kind: "json",
  status: options?.status ?? 200,
  headers: options?.headers ?? {},
  body
})

/** OpenAI's usage block, which Perplexity's answers carry too. */
export const openaiUsage = (usage: UsageInput | undefined, outputText: string) => {
  const input = usage?.input ?? 10
  const output = usage?.output ?? estimate(outputText)
  return {
    prompt_tokens: input,
    completion_tokens: output,
    total_tokens: input + output,
    prompt_tokens_details: { cached_tokens: usage?.cached ?? 0, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: usage?.reasoning ?? 0,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0
    }
  }
}
