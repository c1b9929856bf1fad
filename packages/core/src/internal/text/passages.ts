/**
 * Passages of a session's stored sources and their ranking for a question (Okapi BM25), for follow-up answers. One
 * session holds at most a few hundred sources, so the index is built in memory for each question: no store, no cache.
 */

/** A piece of one source's stored text. */
export interface Passage<S> {
  readonly source: S
  /** The passage's place among its source's passages, from 0. */
  readonly index: number
  readonly text: string
}

/** A passage and its score for a question; only passages sharing a term with it score above 0. */
export interface Ranked<S> {
  readonly passage: Passage<S>
  readonly score: number
}

/** Characters a passage holds at most (a paragraph longer than that is cut at sentence ends). */
export const passageChars = 700

const stopwords = new Set(
  (
    "a an and are as at be been but by can did do does for from had has have how i if in into is it its of on or " +
    "our so than that the their them then there these they this those to was we were what when where which who " +
    "why will with would you your about also any more most not no only other such than very was were say says said"
  ).split(" ")
)

/** The terms of a text: lower-cased words and numbers, stopwords and one-letter words left out. */
export const terms = (text: string): ReadonlyArray<string> =>
  (text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).filter((word) => word.length > 1 && !stopwords.has(word))

/** Sentence ends, keeping the punctuation with its sentence. */
const sentencesOf = (paragraph: string): ReadonlyArray<string> =>
  paragraph.match(/[^.!?。]+[.!?。]*\s*/g) ?? [paragraph]

/** A text cut into passages of at most `passageChars`, at paragraph ends, else sentence ends, else anywhere. */
export const split = (text: string): ReadonlyArray<string> => {
  const pieces: Array<string> = []
  for (const paragraph of text.split(/\n\s*\n/)) {
    const trimmed = paragraph.trim()
    if (trimmed === "") continue
    if (trimmed.length <= passageChars) {
      pieces.push(trimmed)
      continue
    }
    for (const sentence of sentencesOf(trimmed)) {
      for (let at = 0; at < sentence.length; at += passageChars) pieces.push(sentence.slice(at, at + passageChars))
    }
  }
  // Short neighbours are joined, so that a passage holds enough words to be ranked.
  const passages: Array<string> = []
  for (const piece of pieces) {
    const last = passages.at(-1)
    if (last !== undefined && last.length + piece.length + 1 <= passageChars)
      passages[passages.length - 1] = `${last}\n${piece}`
    else passages.push(piece.trim())
  }
  return passages.filter((passage) => passage !== "")
}

/** The passages of each source's text (`textOf`), in source order. */
export const passagesOf = <S>(sources: ReadonlyArray<S>, textOf: (source: S) => string): ReadonlyArray<Passage<S>> =>
  sources.flatMap((source) => split(textOf(source)).map((text, index) => ({ source, index, text })))

/**
 * The passages ranked for `question` by BM25 (k1 1.2, b 0.75), best first; those sharing no term with it are left out.
 * `weight` adds terms to a passage's own (its source's title).
 */
export const rank = <S>(
  passages: ReadonlyArray<Passage<S>>,
  question: string,
  extra?: (passage: Passage<S>) => string
): ReadonlyArray<Ranked<S>> => {
  const asked = [...new Set(terms(question))]
  if (asked.length === 0 || passages.length === 0) return []
  const documents = passages.map((passage) => {
    const counts = new Map<string, number>()
    const words = terms(extra === undefined ? passage.text : `${extra(passage)}\n${passage.text}`)
    for (const word of words) counts.set(word, (counts.get(word) ?? 0) + 1)
    return { passage, counts, length: words.length }
  })
  const averageLength = documents.reduce((n, d) => n + d.length, 0) / documents.length || 1
  const k1 = 1.2
  const b = 0.75
  const idf = new Map(
    asked.map((term) => {
      const df = documents.filter((d) => d.counts.has(term)).length
      return [term, Math.log(1 + (documents.length - df + 0.5) / (df + 0.5))] as const
    })
  )
  return documents
    .map(({ counts, length, passage }) => ({
      passage,
      score: asked.reduce((sum, term) => {
        const frequency = counts.get(term) ?? 0
        if (frequency === 0) return sum
        const norm = frequency + k1 * (1 - b + (b * length) / averageLength)
        return sum + (idf.get(term) ?? 0) * ((frequency * (k1 + 1)) / norm)
      }, 0)
    }))
    .filter((ranked) => ranked.score > 0)
    .sort((x, y) => y.score - x.score)
}
