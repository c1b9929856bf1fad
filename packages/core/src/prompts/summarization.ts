/**
 * The fetch-time summary of one source: an executive summary and up to five verbatim excerpts, written by the
 * efficient `summarization` model so that researchers read clean, dense material instead of raw pages.
 */
import * as Untrusted from "./untrusted.js"

/** The system prompt of the summarizer. */
export const system = [
  "You condense one web page or document for a researcher who will cite it.",
  "Write an executive summary of about a quarter of the original length (shorter when the page is mostly " +
    "navigation or boilerplate) that keeps every concrete fact: names, numbers, dates, quantities, definitions, " +
    "findings and who claims them. Adapt to the kind of page: for news, who, what, when, where, why and how; for " +
    "research, the question, method, results and conclusions; for opinion, the position and its arguments; for " +
    "product or technical pages, the specifications and limits.",
  "Then copy up to five excerpts verbatim, character for character, choosing the sentences a report would quote: " +
    "key numbers, definitions, conclusions. Never paraphrase inside an excerpt and never invent one.",
  "Write the summary in the language of the page. Do not add knowledge the page does not contain, and say so " +
    "briefly when the page holds nothing substantive (an error page, a login wall, a cookie notice).",
  Untrusted.notice
].join("\n\n")

/** The user message: the page, delimited as data. */
export const user = (input: { readonly url: string; readonly title: string; readonly content: string }): string =>
  [
    "Summarise this page.",
    Untrusted.wrap({ kind: "web page", url: input.url, title: input.title }, input.content),
    'Answer with JSON: {"summary": "...", "excerpts": ["...", "..."]} (at most five excerpts).'
  ].join("\n\n")
