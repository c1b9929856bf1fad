/**
 * The check of a report's cited sentences against the sources they cite: one prompt for a batch of sentences, each
 * labelled as a whole and per cited source, from the sources' stored text only. Used by the pipeline's `verification`
 * phase and by `evaluate`, so that both read the same question the same way.
 */
import * as Untrusted from "./untrusted.js"

/** Marks the prompt, so that a simulated model (the emulator) knows which call this is. */
export const opening = "You check whether sentences of a research report are backed by the sources they cite."

/** The system prompt of the check. */
export const system = [
  opening,
  "Read only the given source texts; do not use outside knowledge. For each sentence give one label for the " +
    "sentence as a whole (all its cited sources together) and one label for each source it cites:",
  "- supported: the source states it, including its numbers, dates and qualifiers.",
  "- partially_supported: the source backs part of it, or a weaker or less specific version of it.",
  "- unsupported: the source does not say this (silence is not support; a source on the topic that does not state " +
    "the claim does not support it).",
  "- contradicted: the source says something incompatible with it.",
  "A source text may be a summary with excerpts of the page rather than the whole page: judge what it states.",
  Untrusted.notice
].join("\n\n")

/** One sentence to check, and the numbers of the sources it cites. */
export interface ClaimBlock {
  readonly id: number
  readonly text: string
  readonly cites: ReadonlyArray<number>
}

/** One source shown, by the number sentences cite it under. */
export interface SourceBlock {
  readonly number: number
  readonly title: string
  readonly url: string
  readonly text: string
}

/** The user message: the sources (as data), then the sentences. */
export const user = (claims: ReadonlyArray<ClaimBlock>, sources: ReadonlyArray<SourceBlock>): string =>
  [
    "## Sources",
    ...sources.map((source) =>
      Untrusted.wrap(
        { kind: "cited source", label: String(source.number), url: source.url, title: source.title },
        source.text
      )
    ),
    "## Sentences",
    ...claims.map(
      (claim) =>
        `<sentence id="${claim.id}" cites="${claim.cites.join(", ")}">${claim.text.replace(/</g, "‹")}</sentence>`
    ),
    'Answer with JSON: {"verdicts": [{"claim": <sentence id>, "label": "...", "explanation": "one sentence", ' +
      '"citations": [{"source": <number>, "label": "..."}]}]}, one verdict per sentence, one citation entry per ' +
      "source the sentence cites."
  ].join("\n\n")
