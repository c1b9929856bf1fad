/**
 * Reading a markdown report: its inline citations (`[1]`, `[1, 3]`, `[2-4]`, `[1](url)`, `【1】`), its numbered
 * source list, and its sentences. Fenced code is skipped everywhere. The claim check (`ClaimVerification`) finds a
 * report's cited sentences with it, in the pipeline and in `evaluate`, whose citation checks read reports with it too.
 * Also the language tag of the language a report records (`Research.Report.language`), for documents made of it.
 */

import * as Language from "./internal/text/language.js"
import { unsupportedMarks as marks } from "./internal/text/verificationNotices.js"

/** The marks the citation check puts after a sentence its sources do not back, in every language it writes. */
export const unsupportedMarks: ReadonlyArray<string> = marks

/** A line of the report, numbered from 1. */
export interface Line {
  readonly line: number
  readonly text: string
}

/** An entry of the report's numbered source list. */
export interface SourceEntry extends Line {
  readonly number: number
  readonly url: string | undefined
  readonly title: string
}

/** One inline citation of a source number. */
export interface Mention extends Line {
  readonly number: number
}

/** A sentence of the body that cites something. */
export interface CitedSentence extends Line {
  readonly sentence: string
  readonly numbers: ReadonlyArray<number>
}

/** A report split into its body and its source list. */
export interface ParsedReport {
  /** Lines outside code fences and outside the source list. */
  readonly body: ReadonlyArray<Line>
  readonly sources: ReadonlyArray<SourceEntry>
  readonly mentions: ReadonlyArray<Mention>
}

// "Sources", "References and further reading", "参考文献" ... : a short heading that starts with such a word. The
// list covers the headings core's synthesis writes in each report language (internal/text/language.ts in core).
const sourcesHeading =
  /^(?:\d+[.)]?\s*)?(?:sources|references|bibliography|works cited|cited sources|source list|citations|quellen|literatur|fuentes|referencias|fontes|referências|fonti|bronnen|источники|литература|джерела|πηγές|מקורות|المصادر|स्रोत|แหล่งที่มา|出典|출처|참고 문헌|参考文献|参考资料|参考来源|资料来源|信息来源|引用来源|來源|来源|引用|出处)(?=$|[\s:：(（&,、])[^\n]{0,40}$/i

const heading = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/

const numberedEntry = /^\s*(?:[-*+]\s+)?(?:\[(\d+)\]|(\d+)[.)])(?::)?\s+(.+)$/

const footnoteEntry = /^\s*\[(\d+)\]:?\s+(.*https?:\/\/.*)$/

// file: URLs are the citations of local corpus sources.
const markdownLink = /\[([^\]]*)\]\(((?:https?|file):\/\/[^)\s]+)\)/

const bareUrl = /(?:https?|file):\/\/[^\s<>()\]]+/

const citationGroup = /\[(\d{1,4}(?:\s*[-–,;]\s*\d{1,4})*)\](?!:)|【(\d{1,4}(?:\s*[-–,;，]\s*\d{1,4})*)】/g

/** The source numbers a citation group names; ranges are expanded up to 100 numbers. */
const numbersOf = (group: string): ReadonlyArray<number> =>
  group.split(/\s*[,;，]\s*/).flatMap((part) => {
    const range = /^(\d+)\s*[-–]\s*(\d+)$/.exec(part.trim())
    if (range !== null) {
      const from = Number(range[1])
      const to = Number(range[2])
      if (to < from || to - from > 100) return [from, to]
      return Array.from({ length: to - from + 1 }, (_, i) => from + i)
    }
    const value = Number(part.trim())
    return Number.isInteger(value) ? [value] : []
  })

/** Every source number cited in a piece of text, in order of appearance (with repeats). */
export const citedNumbers = (text: string): ReadonlyArray<number> =>
  [...text.matchAll(citationGroup)].flatMap((match) => numbersOf(match[1] ?? match[2] ?? ""))

const stripEmphasis = (text: string): string => text.replace(/[*_`]+/g, "").trim()

const parseEntry = (line: number, text: string, number: number, rest: string): SourceEntry => {
  const link = markdownLink.exec(rest)
  const url = link?.[2] ?? bareUrl.exec(rest)?.[0]?.replace(/[.,;:'"]+$/, "")
  const linkText = link?.[1]
  const withoutUrl = (link === null ? (url === undefined ? rest : rest.replace(url, "")) : rest.replace(link[0], ""))
    .replace(/[<>]/g, "")
    .replace(/^[\s\-–—:|,.]+|[\s\-–—:|,.]+$/g, "")
  const title = stripEmphasis(
    linkText !== undefined && linkText.trim() !== "" && !/^(?:https?|file):\/\//.test(linkText)
      ? linkText
      : withoutUrl !== ""
        ? withoutUrl
        : (url ?? rest)
  ).replace(/^["“”']+|["“”']+$/g, "")
  return { line, text, number, url, title }
}

/** Splits a report into body lines, source list entries and inline citations. */
export const parse = (markdown: string): ParsedReport => {
  const lines = markdown.split(/\r?\n/)
  const inCode = new Set<number>()
  let fence: string | undefined
  lines.forEach((text, i) => {
    const marker = /^\s*(```+|~~~+)/.exec(text)?.[1]
    if (fence !== undefined) {
      inCode.add(i)
      if (marker !== undefined && marker[0] === fence[0] && marker.length >= fence.length) fence = undefined
    } else if (marker !== undefined) {
      inCode.add(i)
      fence = marker
    }
  })
  // The source list is the section under the last "Sources"-like heading (or bold line), up to the next heading of
  // the same or a higher level.
  let listStart = -1
  let listEnd = lines.length
  let listLevel = 7
  lines.forEach((text, i) => {
    if (inCode.has(i)) return
    const h = heading.exec(text)
    const title = h === null ? (/^\s*\*\*(.+)\*\*\s*$/.exec(text)?.[1] ?? undefined) : h[2]
    if (title !== undefined && sourcesHeading.test(stripEmphasis(title))) {
      listStart = i
      listLevel = h === null ? 7 : (h[1]?.length ?? 7)
      listEnd = lines.length
    } else if (h !== null && listStart >= 0 && i > listStart && listEnd === lines.length) {
      if ((h[1]?.length ?? 7) <= listLevel) listEnd = i
    }
  })
  const sources: Array<SourceEntry> = []
  const inList = new Set<number>()
  lines.forEach((text, i) => {
    if (inCode.has(i)) return
    if (listStart >= 0) {
      if (i <= listStart || i >= listEnd) return
      inList.add(i)
      const entry = numberedEntry.exec(text)
      if (entry !== null) sources.push(parseEntry(i + 1, text, Number(entry[1] ?? entry[2]), entry[3] ?? ""))
    } else {
      const entry = footnoteEntry.exec(text)
      if (entry !== null) {
        inList.add(i)
        sources.push(parseEntry(i + 1, text, Number(entry[1]), entry[2] ?? ""))
      }
    }
  })
  if (listStart >= 0) inList.add(listStart)
  const body = lines.flatMap((text, i) => (inCode.has(i) || inList.has(i) ? [] : [{ line: i + 1, text }]))
  const mentions = body.flatMap((line) => citedNumbers(line.text).map((number) => ({ ...line, number })))
  return { body, sources, mentions }
}

// After a terminator and any citations that follow it, unless more citations come next.
const sentenceBoundary =
  /(?<=[.!?。！？](?:\s*(?:\[[\d\s,;–-]+\]|【[\d\s,;，–-]+】))*)(?:\s+|(?<=[。！？\]】]))(?!\s*(?:\[\d|【\d))/

const abbreviation =
  /(?:\b(?:e\.g|i\.e|etc|vs|cf|al|approx|ca|Mr|Mrs|Ms|Dr|Prof|St|Inc|Ltd|Co|Corp|Fig|No|Vol|pp|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)|(?:^|[\s(])(?:[A-Za-z]\.)*[A-Za-z])\.$/

/** Joins pieces split after an abbreviation ("e.g.", "U.S.") or before a lowercase word back into one sentence. */
const joinAbbreviations = (pieces: ReadonlyArray<string>): ReadonlyArray<string> =>
  pieces.reduce<Array<string>>((sentences, piece) => {
    const previous = sentences.at(-1)
    if (previous !== undefined && (abbreviation.test(previous) || /^[a-z]/.test(piece))) {
      sentences[sentences.length - 1] = `${previous} ${piece}`
    } else {
      sentences.push(piece)
    }
    return sentences
  }, [])

/** The sentences of the body that cite at least one source, headings left out. */
export const citedSentences = (report: ParsedReport): ReadonlyArray<CitedSentence> =>
  report.body.flatMap((line) => {
    if (heading.test(line.text)) return []
    const content = line.text.replace(/^\s*(?:[-*+]|\d+[.)]|>)\s+/, "")
    // A citation after the full stop belongs to the sentence before it.
    return joinAbbreviations(
      content
        .split(sentenceBoundary)
        .map((sentence) => sentence.trim())
        .filter((sentence) => sentence !== "")
    ).flatMap((sentence) => {
      const numbers = [...new Set(citedNumbers(sentence))]
      return numbers.length === 0 ? [] : [{ ...line, sentence, numbers }]
    })
  })

/**
 * The BCP 47 tag of the language a report records (`Arabic`, `中文`, `de`: `ar`, `zh`, `de`); undefined for a name that
 * is neither a language the report writer knows nor shaped as a tag.
 */
export const languageTag = (language: string): string | undefined =>
  Language.fromName(language)?.code ??
  (/^[A-Za-z]{2,3}(?:-[A-Za-z0-9]{1,8})*$/.test(language.trim()) ? language.trim() : undefined)
