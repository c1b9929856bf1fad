/**
 * The shape a user asks of the report: a target length in words (or a named size), an outline of section titles and
 * writing instructions (`ResearchConfig.reportWords`, `reportOutline`, `reportInstructions`). What counts as a word,
 * how close to the target a report must land, and when a report is written section by section are decided here, so
 * that the writer, the CLI, the tests and the benchmark agree on them.
 */
import * as Citations from "./Citations.js"

// =============================================================================
// Sizes
// =============================================================================

/** Named sizes and the words each stands for. */
export const namedSizes = {
  brief: 500,
  standard: 1_500,
  long: 4_000,
  extended: 8_000
} as const

/** A named size. */
export type NamedSize = keyof typeof namedSizes

/**
 * How far from its target a report's length may land, as a share of the target: a report or section outside it gets
 * one second pass, told its length and the target (never padded by the product).
 */
export const tolerance = 0.2

/** Above this many words the report is planned and written section by section. */
export const sectionedAbove = 1_500

/** An outline of at least this many sections is written section by section, whatever the length. */
export const sectionedOutlineAt = 5

/** The share of the words the introduction and the conclusion each take in a report written by sections. */
export const framingShare = 0.1

/** Output tokens a written word takes at most, in the languages the tokenizers are least kind to; a section's limit. */
export const tokensPerWord = 2

// =============================================================================
// Parsing what a user gives
// =============================================================================

/** A `--words` value: a whole number of words, or a named size; undefined when it is neither. */
export const parseWords = (text: string): number | undefined => {
  const given = text.trim().toLowerCase()
  if (given in namedSizes) return namedSizes[given as NamedSize]
  return /^\d{1,6}$/.test(given) ? Number(given) : undefined
}

/**
 * An outline given inline: titles separated by `;` or by lines (a Markdown list or headings are read as their titles).
 * Empty titles are left out.
 */
export const parseOutline = (text: string): ReadonlyArray<string> =>
  text
    .split(text.includes("\n") ? /\r?\n/ : ";")
    .map((line) =>
      line
        .replace(/^\s{0,3}(?:#{1,6}\s+|[-*+]\s+|\d+[.)]\s+)/, "")
        .replace(/\s+/g, " ")
        .trim()
    )
    .filter((title) => title !== "")

// =============================================================================
// Counting
// =============================================================================

// Scripts written without spaces between words: each character counts as a word.
const unspacedCharacter = /[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]/g

/**
 * The words of a report's text: its prose, headings and tables, without citation marks or a source list. A character of Chinese, Japanese or Korean counts as one word.
 */
export const countWords = (markdown: string): number => {
  const body = Citations.stripSourceList(markdown)
    .replace(/\[\d+(?:\s*[,;–-]\s*\d+)*\]/g, " ")
    .replace(/[#*_>`|]+/g, " ")
  const unspaced = body.match(unspacedCharacter)?.length ?? 0
  const spaced = body
    .replace(unspacedCharacter, " ")
    .split(/\s+/)
    .filter((word) => /[\p{L}\p{N}]/u.test(word)).length
  return spaced + unspaced
}

/** Whether `words` lands within the tolerance of `target`. */
export const withinTolerance = (words: number, target: number): boolean =>
  Math.abs(words - target) <= target * tolerance

/** Whether a report of this shape is planned and written section by section. */
export const isSectioned = (shape: {
  readonly reportWords?: number | undefined
  readonly reportOutline?: ReadonlyArray<string> | undefined
}): boolean => (shape.reportWords ?? 0) > sectionedAbove || (shape.reportOutline?.length ?? 0) >= sectionedOutlineAt

/** Output tokens to reserve for a report of `words`: its words with the slack of a second pass on a part of it. */
export const reportTokensFor = (words: number): number => Math.ceil(words * tokensPerWord * 1.25)

/**
 * Tokens the budget keeps back for a report of this shape, when it asks for more than the default reserve: the
 * report's output (`reportTokensFor`), read again by the introduction and conclusion, and the plan's call.
 */
export const reserveTokensFor = (shape: {
  readonly reportWords?: number | undefined
  readonly reportOutline?: ReadonlyArray<string> | undefined
}): number | undefined =>
  shape.reportWords === undefined
    ? undefined
    : 2 * reportTokensFor(shape.reportWords) + (isSectioned(shape) ? 4_000 : 0)
