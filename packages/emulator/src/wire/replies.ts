/**
 * The emulator's reply builders: answers in each vendor's documented shape (OpenAI chat completions and responses,
 * Anthropic messages, Tavily, Exa, Perplexity, Semantic Scholar, plain pages) for tests to script, with usage and
 * ids as the vendors give them. Public through `@deep-research/emulator`'s `Emulator`. The model vendors' builders
 * are in `modelReplies.ts`, the search vendors' and the web's in `searchReplies.ts`; this module gathers them with
 * the fault and raw event-stream replies, which every vendor shares.
 */
import type { Fault, Reply } from "./types.js"

export { json, type UsageInput } from "./replyParts.js"
export * from "./modelReplies.js"
export * from "./searchReplies.js"

/** A fault to play in the endpoint's vendor shape. */
export const fault = (value: Fault): Reply => ({ kind: "fault", fault: value })

/** Raw event-stream text. */
export const sse = (text: string): Reply => ({ kind: "sse", text })
