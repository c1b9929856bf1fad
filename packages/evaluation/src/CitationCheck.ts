/**
 * Citation checks that need no model: citations that point nowhere, sources never cited, duplicate sources, listed
 * sources the session never retrieved, and quoted passages that do not occur in the source they cite. Every finding
 * carries the report line it comes from.
 */
import * as Schema from "effect/Schema"
import { Novelty, ReportText, type Session, type Source } from "@deep-research/core"
import { urlKey } from "./internal/urls.js"

// =============================================================================
// Schemas
// =============================================================================

/** A report line that fails a check, and why. */
export class Finding extends Schema.Class<Finding>("@deep-research/evaluation/CitationCheck/Finding")({
  /** 1-based line number in the report's markdown. */
  line: Schema.Int,
  text: Schema.String,
  detail: Schema.String
}) {}

/** How many findings each check made. */
export class Counts extends Schema.Class<Counts>("@deep-research/evaluation/CitationCheck/Counts")({
  danglingCitations: Schema.Int,
  uncitedSources: Schema.Int,
  duplicateSources: Schema.Int,
  unretrievedSources: Schema.Int,
  unsupportedQuotes: Schema.Int
}) {}

/** The outcome of every citation check on one report. */
export class CitationReport extends Schema.Class<CitationReport>(
  "@deep-research/evaluation/CitationCheck/CitationReport"
)({
  /** Inline citations in the body, repeats included. */
  inlineCitations: Schema.Int,
  /** Distinct source numbers cited in the body. */
  citedSources: Schema.Int,
  /** Entries of the report's source list. */
  listedSources: Schema.Int,
  /** Sources the session retrieved. */
  retrievedSources: Schema.Int,
  /** Quoted passages next to a citation that were looked up in their source. */
  quotesChecked: Schema.Int,
  counts: Counts,
  /** Inline citations of a number the source list does not have. */
  danglingCitations: Schema.Array(Finding),
  /** List entries no inline citation points at. */
  uncitedSources: Schema.Array(Finding),
  /** List entries with the same normalised URL or title as an earlier entry. */
  duplicateSources: Schema.Array(Finding),
  /** List entries (and links in the body) whose URL the session never retrieved, and list entries with no URL. */
  unretrievedSources: Schema.Array(Finding),
  /** Quoted passages not found in the text of the source they cite. */
  unsupportedQuotes: Schema.Array(Finding)
}) {
  /** Findings over all checks. */
  get issueCount(): number {
    const c = this.counts
    return c.danglingCitations + c.uncitedSources + c.duplicateSources + c.unretrievedSources + c.unsupportedQuotes
  }
}

/** What the checks read: the report's markdown and the sources the session retrieved. */
export interface Input {
  readonly markdown: string
  readonly sources: ReadonlyArray<Source.Source>
}

/** Tuning of the checks. */
export interface Options {
  /** Quotes shorter than this many words (or twice as many CJK characters) are not checked; 8 by default. */
  readonly minQuoteWords?: number | undefined
  /** Titles shorter than this (normalised) are not compared for duplicates; 20 by default, as in research. */
  readonly minTitleLength?: number | undefined
}

// =============================================================================
// Quotes
// =============================================================================

const quotePattern = /"([^"\n]+)"|“([^”\n]+)”|「([^」\n]+)」|『([^』\n]+)』/g

/** Text reduced for quote matching: straight quotes and dashes, lowercase, single spaces. */
export const normalizeForQuote = (text: string): string =>
  text
    .normalize("NFKC")
    .replace(/[‘’‚‛′]/g, "'")
    .replace(/[“”„‟″«»「」『』]/g, '"')
    .replace(/[‐‑‒–—―]/g, "-")
    .replace(/\s+/g, " ")
    .toLowerCase()
    .trim()

const wordCount = (text: string): number => {
  const cjk = (text.match(/[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/gu) ?? []).length
  const words = text.replace(/[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/gu, " ")
  return words.split(/\s+/).filter((w) => /[\p{L}\p{N}]/u.test(w)).length + Math.floor(cjk / 2)
}

/** Whether the quote occurs in the text; an ellipsis in the quote lets its parts occur apart, in order. */
export const quoteOccursIn = (quote: string, text: string): boolean => {
  const haystack = normalizeForQuote(text)
  const parts = normalizeForQuote(quote)
    .split(/\s*(?:\.\.\.|…|\[\.\.\.\]|\[…\])\s*/)
    .map((part) => part.replace(/^[\s.,;:'"-]+|[\s.,;:'"-]+$/g, ""))
    .filter((part) => part !== "")
  let from = 0
  for (const part of parts) {
    const at = haystack.indexOf(part, from)
    if (at < 0) return false
    from = at + part.length
  }
  return parts.length > 0
}

interface QuoteNearCitation {
  readonly quote: string
  readonly numbers: ReadonlyArray<number>
}

/**
 * Quoted passages of a line with the citations next to them: those right after the closing quote (within the same
 * sentence), else those right before the opening quote.
 */
const quotesWithCitations = (text: string): ReadonlyArray<QuoteNearCitation> =>
  [...text.matchAll(quotePattern)].flatMap((match) => {
    const quote = match[1] ?? match[2] ?? match[3] ?? match[4] ?? ""
    const end = (match.index ?? 0) + match[0].length
    const after = text.slice(end, end + 60)
    const following = /^[^"“「『.!?。！？]*?((?:\s*(?:\[[\d\s,;–-]+\]|【[\d\s,;，–-]+】))+)/.exec(after)?.[1]
    const before = text.slice(Math.max(0, (match.index ?? 0) - 40), match.index ?? 0)
    const preceding = /((?:(?:\[[\d\s,;–-]+\]|【[\d\s,;，–-]+】)\s*)+)[^\]】.!?。！？]{0,12}$/.exec(before)?.[1]
    const numbers = ReportText.citedNumbers(following ?? preceding ?? "")
    return numbers.length === 0 ? [] : [{ quote, numbers }]
  })

/** Everything the session knows of a source's text: what the researcher saw, the summary and its excerpts. */
export const sourceText = (source: Source.Source): string =>
  [source.content, source.summary?.summary ?? "", ...(source.summary?.excerpts ?? [])].join("\n")

// =============================================================================
// Checks
// =============================================================================

/** Runs every check on a report against the sources its session retrieved. */
export const check = (input: Input, options?: Options): CitationReport => {
  const minQuoteWords = options?.minQuoteWords ?? 8
  const minTitleLength = options?.minTitleLength ?? 20
  const report = ReportText.parse(input.markdown)
  const byNumber = new Map<number, ReportText.SourceEntry>()
  for (const entry of report.sources) if (!byNumber.has(entry.number)) byNumber.set(entry.number, entry)
  const retrieved = new Map<string, Source.Source>()
  for (const source of input.sources) {
    const key = urlKey(source.url)
    if (!retrieved.has(key)) retrieved.set(key, source)
  }
  const finding = (line: ReportText.Line, detail: string) => new Finding({ line: line.line, text: line.text, detail })

  const danglingCitations = report.mentions
    .filter((mention) => !byNumber.has(mention.number))
    .map((mention) => finding(mention, `[${mention.number}] is not in the source list`))

  const cited = new Set(report.mentions.map((mention) => mention.number))
  const uncitedSources = report.sources
    .filter((entry) => !cited.has(entry.number))
    .map((entry) => finding(entry, `source ${entry.number} is never cited`))

  const seenUrls = new Map<string, number>()
  const seenTitles = new Map<string, number>()
  const duplicateSources = report.sources.flatMap((entry) => {
    const url = entry.url === undefined ? undefined : urlKey(entry.url)
    const title = Novelty.normalizeTitle(entry.title)
    const sameUrl = url === undefined ? undefined : seenUrls.get(url)
    const sameTitle = title.length >= minTitleLength ? seenTitles.get(title) : undefined
    if (url !== undefined && sameUrl === undefined) seenUrls.set(url, entry.number)
    if (title.length >= minTitleLength && sameTitle === undefined) seenTitles.set(title, entry.number)
    if (sameUrl !== undefined) return [finding(entry, `source ${entry.number} has the same URL as source ${sameUrl}`)]
    if (sameTitle !== undefined) {
      return [finding(entry, `source ${entry.number} has the same title as source ${sameTitle}`)]
    }
    return []
  })

  const listedUnretrieved = report.sources.flatMap((entry) => {
    if (entry.url === undefined) return [finding(entry, `source ${entry.number} has no URL`)]
    if (retrieved.has(urlKey(entry.url))) return []
    return [finding(entry, `${entry.url} was never retrieved in this session`)]
  })
  // Links in the body cite too, whether or not the list repeats them.
  const inlineUnretrieved = report.body.flatMap((line) =>
    [...new Set([...line.text.matchAll(/https?:\/\/[^\s<>()\]]+/g)].map((m) => m[0].replace(/[.,;:'"]+$/, "")))]
      .filter((url) => !retrieved.has(urlKey(url)))
      .map((url) => finding(line, `inline link ${url} was never retrieved in this session`))
  )
  const unretrievedSources = [...listedUnretrieved, ...inlineUnretrieved]

  let quotesChecked = 0
  const unsupportedQuotes = report.body.flatMap((line) =>
    quotesWithCitations(line.text).flatMap(({ numbers, quote }) => {
      if (wordCount(quote) < minQuoteWords) return []
      quotesChecked += 1
      const texts = numbers.flatMap((number) => {
        const url = byNumber.get(number)?.url
        const source = url === undefined ? undefined : retrieved.get(urlKey(url))
        return source === undefined ? [] : [sourceText(source)]
      })
      const cites = numbers.map((n) => `[${n}]`).join("")
      if (texts.length === 0) return [finding(line, `the quote cites ${cites}, and no retrieved source matches`)]
      if (texts.some((text) => quoteOccursIn(quote, text))) return []
      return [finding(line, `"${quote.slice(0, 80)}" does not occur in ${cites}`)]
    })
  )

  return new CitationReport({
    inlineCitations: report.mentions.length,
    citedSources: cited.size,
    listedSources: report.sources.length,
    retrievedSources: input.sources.length,
    quotesChecked,
    counts: new Counts({
      danglingCitations: danglingCitations.length,
      uncitedSources: uncitedSources.length,
      duplicateSources: duplicateSources.length,
      unretrievedSources: unretrievedSources.length,
      unsupportedQuotes: unsupportedQuotes.length
    }),
    danglingCitations,
    uncitedSources,
    duplicateSources,
    unretrievedSources,
    unsupportedQuotes
  })
}

/** Runs every check on a session's report; a session without a report has nothing to check. */
export const checkSession = (session: Session.Session, options?: Options): CitationReport =>
  check({ markdown: session.report?.markdown ?? "", sources: session.sources }, options)
