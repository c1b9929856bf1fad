/**
 * The simulated answer to a claim check (core's `ClaimVerification`): each sentence is labelled against each source it
 * cites by how many of its words the source's text holds, so that a simulated report's sentences copied from their
 * sources are supported and its general remarks are not, as a real checker would find.
 */
import type { Conversation } from "./conversation.js"

/** Whether the conversation is a claim check. */
export const isClaimCheck = (conversation: Conversation): boolean =>
  conversation.system.includes("sentences of a research report are backed by the sources they cite")

const words = (text: string): ReadonlyArray<string> =>
  (text.toLowerCase().match(/[\p{L}\p{N}]{4,}/gu) ?? []).filter((word) => !/^\d+$/.test(word))

const labelOf = (sentence: string, source: string | undefined): string => {
  if (source === undefined) return "unsupported"
  const wanted = [...new Set(words(sentence.replace(/\[[\d,\s]+\]/g, "")))]
  if (wanted.length === 0) return "unsupported"
  const held = new Set(words(source))
  const share = wanted.filter((word) => held.has(word)).length / wanted.length
  return share >= 0.6 ? "supported" : share >= 0.35 ? "partially_supported" : "unsupported"
}

const rank = ["supported", "partially_supported", "unsupported"]

/** The verdicts for the sentences of a claim check, in the shape its prompt asks for. */
export const claimVerdicts = (conversation: Conversation): unknown => {
  const text = conversation.turns.find((turn) => turn.role === "user")?.text ?? ""
  const sources = new Map<number, string>()
  for (const match of text.matchAll(/<untrusted_data [^>]*label="(\d+)"[^>]*>\n?([\s\S]*?)<\/untrusted_data>/g)) {
    sources.set(Number(match[1]), match[2] ?? "")
  }
  const sentences = [...text.matchAll(/<sentence id="(\d+)" cites="([\d,\s]*)">([\s\S]*?)<\/sentence>/g)]
  return {
    verdicts: sentences.map((match) => {
      const sentence = match[3] ?? ""
      const citations = (match[2] ?? "")
        .split(",")
        .map((n) => Number(n.trim()))
        .filter((n) => Number.isInteger(n) && n > 0)
        .map((source) => ({ source, label: labelOf(sentence, sources.get(source)) }))
      const best = citations.map((c) => rank.indexOf(c.label)).reduce((a, b) => Math.min(a, b), rank.length - 1)
      return {
        claim: Number(match[1]),
        label: rank[best] ?? "unsupported",
        explanation: "compared word by word with the cited sources",
        citations
      }
    })
  }
}
