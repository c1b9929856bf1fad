/**
 * The follow-up prompt: a question about a finished research session, answered only from passages of the sources the
 * session stored, each passage shown under the session's own citation number.
 */
import type { Language } from "../internal/text/language.js"
import { reportInstruction } from "../internal/text/language.js"
import * as Untrusted from "./untrusted.js"

/** Marks the prompt, so that a simulated model (the emulator) knows which call this is. */
export const opening = "You answer a follow-up question about a finished research report from its stored sources."

/** The system prompt. */
export const system = (language: Language): string =>
  [
    opening,
    "Use only the numbered passages given: they are excerpts of the sources the research read. Do not use outside " +
      "knowledge. Cite every sentence that states something from a passage with the passage's number in square " +
      "brackets, e.g. [3] or [2, 5]; use only the numbers shown. Several passages may share a number: they are parts " +
      "of one source.",
    "Set `covered` to true when the passages answer the question. When they do not (they are silent on it, or " +
      "answer only a part), set `covered` to false, say plainly in `answer` what the sources do say on it (cited) and " +
      "what they do not, and give in `direction` one sentence naming what further research would answer it; " +
      "otherwise leave `direction` empty.",
    "Write `answer` in markdown, concisely, with no heading and no source list.",
    reportInstruction(language),
    Untrusted.notice
  ].join("\n\n")

/** One passage shown, under its source's citation number. */
export interface PassageBlock {
  readonly number: number
  readonly title: string
  readonly url: string
  readonly text: string
}

/** The user message: the research question and the report's title for context, the passages, then the question. */
export const user = (options: {
  readonly researchQuestion: string
  readonly reportTitle: string
  readonly passages: ReadonlyArray<PassageBlock>
  readonly question: string
}): string =>
  [
    `The research question was: ${options.researchQuestion}`,
    `Its report is titled: ${options.reportTitle}`,
    "Passages of its sources:",
    ...options.passages.map((passage) =>
      Untrusted.wrap(
        { kind: "source passage", label: String(passage.number), url: passage.url, title: passage.title },
        passage.text
      )
    ),
    `The follow-up question: ${options.question}`
  ].join("\n\n")
