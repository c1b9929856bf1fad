/**
 * The simulated model's answer to a follow-up question about a finished report: the passages it was shown (each under
 * its source's number) stand for what the sources say, so it answers with the first sentence of the passages that
 * share the most words with the question, cited by their numbers; with no passage sharing a word, it says the sources
 * do not cover the question.
 */
import { type Conversation, sentence } from "./conversation.js"

/** Whether the conversation asks a follow-up question about a finished report. */
export const isFollowUp = (conversation: Conversation): boolean =>
  conversation.system.includes("You answer a follow-up question about a finished research report")

const words = (text: string): ReadonlySet<string> =>
  new Set((text.toLowerCase().match(/[\p{L}\p{N}]{4,}/gu) ?? []).filter((word) => !/^\d+$/.test(word)))

const passagePattern = /<untrusted_data kind="source passage" label="(\d+)"[^>]*>\n([\s\S]*?)\n<\/untrusted_data>/g

/** The answer object `{covered, answer, direction}` of a follow-up conversation. */
export const followUpAnswer = (conversation: Conversation) => {
  const asked = conversation.turns
    .filter((turn) => turn.role === "user")
    .map((turn) => turn.text)
    .join("\n")
  const question = /The follow-up question: ([^\n]*)/.exec(asked)?.[1] ?? ""
  const wanted = words(question)
  const passages = [...asked.matchAll(passagePattern)].map((match) => {
    const text = match[2] ?? ""
    const shared = [...words(text)].filter((word) => wanted.has(word)).length
    return { number: Number(match[1]), text, shared }
  })
  const relevant = passages
    .filter((passage) => passage.shared > 0)
    .sort((a, b) => b.shared - a.shared)
    .slice(0, 2)
  if (relevant.length === 0) {
    return {
      covered: false,
      answer: "The stored sources do not address this question.",
      direction: sentence(question, "The question as asked")
    }
  }
  const answer = relevant
    .map(
      (passage) =>
        `${sentence(passage.text.split(/(?<=[.!?])\s/)[0] ?? "", "The source says so").replace(/[.!?]$/, "")} [${passage.number}].`
    )
    .join(" ")
  return { covered: true, answer, direction: "" }
}
