/**
 * A stored report as a document, read once from its markdown for every export format: its blocks (headings,
 * paragraphs, lists, quotes, code, tables) made of spans (text, links, citation numbers, the citation check's mark),
 * its numbered sources as the session recorded them, and the check's closing line and record. The PDF, DOCX and JSON
 * exports all render this, so that a citation, a mark or the check's line means the same in each.
 */
import { Citations, ReportText, type Research, type Session } from "@deep-research/core"

// =============================================================================
// Types
// =============================================================================

/** A piece of inline text. `Cite` is a citation group whose numbers all name a source of the list. */
export type Span =
  | { readonly _tag: "Text"; readonly text: string; readonly strong: boolean; readonly emphasis: boolean }
  | { readonly _tag: "Code"; readonly text: string }
  | { readonly _tag: "Link"; readonly text: string; readonly url: string }
  | { readonly _tag: "Cite"; readonly numbers: ReadonlyArray<number> }
  | { readonly _tag: "Mark"; readonly text: string }

/** A run of inline text, with the markdown it was read from. */
export interface Inline {
  readonly markdown: string
  readonly spans: ReadonlyArray<Span>
}

/** A block of the report's body. */
export type Block =
  | { readonly _tag: "Heading"; readonly level: number; readonly inline: Inline }
  | { readonly _tag: "Paragraph"; readonly inline: Inline }
  | {
      readonly _tag: "List"
      readonly ordered: boolean
      readonly start: number
      readonly items: ReadonlyArray<Inline>
    }
  | { readonly _tag: "Quote"; readonly paragraphs: ReadonlyArray<Inline> }
  | { readonly _tag: "Code"; readonly text: string }
  | {
      readonly _tag: "Table"
      readonly head: ReadonlyArray<Inline>
      readonly rows: ReadonlyArray<ReadonlyArray<Inline>>
    }
  | { readonly _tag: "Rule" }

/** A numbered source of the report, with what is known of its work. */
export interface SourceEntry {
  readonly number: number
  readonly title: string
  readonly url: string
  /** The URL when it is one a reader can open (http or https). */
  readonly link: string | undefined
  readonly authors: ReadonlyArray<string>
  readonly year: number | undefined
  readonly venue: string | undefined
  readonly doi: string | undefined
  readonly preprint: boolean
  readonly provider: string | undefined
  readonly publishedDate: string | undefined
}

/** What the citation check did for this report: checked, turned off, or nothing recorded (an older report). */
export type CheckStatus = "checked" | "off" | "not_recorded"

/** The report as the exports render it. */
export interface ReportDocument {
  readonly sessionId: string
  readonly query: string
  readonly createdAt: number
  readonly title: string
  readonly language: string
  readonly blocks: ReadonlyArray<Block>
  readonly sources: ReadonlyArray<SourceEntry>
  readonly check: {
    readonly status: CheckStatus
    /** The report's closing line, as it says what the check did (without its emphasis). */
    readonly line: string | undefined
    readonly verification: Research.Verification | undefined
  }
}

// =============================================================================
// Inline text
// =============================================================================

/** The URL when it is one a reader can open. */
export const openable = (url: string): string | undefined => {
  try {
    const parsed = new URL(url)
    return parsed.protocol === "http:" || parsed.protocol === "https:" ? parsed.href : undefined
  } catch {
    return undefined
  }
}

const marks = new Set(ReportText.unsupportedMarks)

const token =
  /`([^`]+)`|\[([^\]]+)\]\(([^)\s]+)\)|\*\*(.+?)\*\*|__(.+?)__|\*([^*\s][^*]*)\*|(?<!\w)_([^_\s][^_]*)_(?!\w)|\[(\d+(?:\s*[,;–-]\s*\d+)*)\](?![(:])|【(\d+(?:\s*[,，;–-]\s*\d+)*)】/g

const parseSpans = (
  text: string,
  known: ReadonlySet<number>,
  style: { readonly strong: boolean; readonly emphasis: boolean }
): Array<Span> => {
  const spans: Array<Span> = []
  const plain = (value: string) => {
    if (value === "") return
    const last = spans.at(-1)
    if (last?._tag === "Text" && last.strong === style.strong && last.emphasis === style.emphasis) {
      spans[spans.length - 1] = { ...last, text: last.text + value }
    } else spans.push({ _tag: "Text", text: value, ...style })
  }
  let at = 0
  for (const match of text.matchAll(token)) {
    plain(text.slice(at, match.index))
    at = match.index + match[0].length
    const [whole, code, label, href, bold1, bold2, em1, em2, cite1, cite2] = match
    if (code !== undefined) spans.push({ _tag: "Code", text: code })
    else if (label !== undefined && href !== undefined) {
      const url = openable(href)
      if (url === undefined) plain(label)
      else spans.push({ _tag: "Link", text: label, url })
    } else if (bold1 !== undefined || bold2 !== undefined) {
      spans.push(...parseSpans(bold1 ?? bold2 ?? "", known, { ...style, strong: true }))
    } else if (em1 !== undefined && marks.has(em1)) spans.push({ _tag: "Mark", text: em1 })
    else if (em1 !== undefined || em2 !== undefined) {
      spans.push(...parseSpans(em1 ?? em2 ?? "", known, { ...style, emphasis: true }))
    } else {
      const numbers = [...new Set(ReportText.citedNumbers(`[${cite1 ?? cite2 ?? ""}]`))]
      if (numbers.length > 0 && numbers.every((n) => known.has(n))) spans.push({ _tag: "Cite", numbers })
      else plain(whole)
    }
  }
  plain(text.slice(at))
  return spans
}

/** Inline markdown as spans; a citation naming a number the source list lacks stays text. */
export const inline = (markdown: string, known: ReadonlySet<number>): Inline => ({
  markdown,
  spans: parseSpans(markdown, known, { strong: false, emphasis: false })
})

// Letters of the scripts written right to left.
const rightToLeftLetter = /[\p{Script=Arabic}\p{Script=Hebrew}\p{Script=Syriac}\p{Script=Thaana}\p{Script=Nko}]/gu

/** Whether a text reads right to left: most of its letters are of a script written so (Arabic, Hebrew, ...). */
export const isRightToLeft = (text: string): boolean => {
  const letters = text.match(/\p{L}/gu)?.length ?? 0
  const rightToLeft = text.match(rightToLeftLetter)?.length ?? 0
  return rightToLeft * 2 > letters && letters > 0
}

/** The text of spans as a reader sees it, citations as `[1, 2]`. */
export const plainText = (spans: ReadonlyArray<Span>): string =>
  spans.map((span) => (span._tag === "Cite" ? `[${span.numbers.join(", ")}]` : span.text)).join("")

// =============================================================================
// Blocks
// =============================================================================

/** Whether a line is a row of a Markdown table, or the rule under its header; a row's cells; a list item's number and text. */
export const isTableRow = (line: string): boolean => /^\s*\|.*\|\s*$/.test(line)
export const isTableRule = (line: string): boolean => /^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$/.test(line)
export const cells = (line: string): Array<string> =>
  line
    .trim()
    .replace(/^\||\|$/g, "")
    .split("|")
    .map((cell) => cell.trim())
export const listItem = /^\s*(?:[-*+]|(\d+)[.)])\s+(.*)$/
const blockStart = /^(#{1,6}\s|>|```|~~~|\s*(?:[-*+]|\d+[.)])\s+|\s*(?:-{3,}|\*{3,})\s*$)/

/** The blocks of a markdown body. */
export const blocksOf = (markdown: string, known: ReadonlySet<number>): ReadonlyArray<Block> => {
  const lines = markdown.replace(/\r\n?/g, "\n").split("\n")
  const out: Array<Block> = []
  let i = 0
  const at = (n: number) => lines[n] ?? ""
  while (i < lines.length) {
    const line = at(i)
    const heading = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line)
    if (line.trim() === "") i++
    else if (heading !== null) {
      out.push({ _tag: "Heading", level: (heading[1] ?? "#").length, inline: inline(heading[2] ?? "", known) })
      i++
    } else if (/^\s*(```|~~~)/.test(line)) {
      const fence = /^\s*(```|~~~)/.exec(line)?.[1] ?? "```"
      const code: Array<string> = []
      i++
      while (i < lines.length && !at(i).trim().startsWith(fence)) code.push(at(i++))
      i++
      out.push({ _tag: "Code", text: code.join("\n") })
    } else if (/^\s*(?:-{3,}|\*{3,})\s*$/.test(line)) {
      out.push({ _tag: "Rule" })
      i++
    } else if (line.startsWith(">")) {
      const quoted: Array<string> = []
      while (i < lines.length && at(i).startsWith(">")) quoted.push(at(i++).replace(/^>\s?/, ""))
      const paragraphs = quoted
        .join("\n")
        .split(/\n\s*\n/)
        .map((p) => p.replace(/\s*\n\s*/g, " ").trim())
      out.push({ _tag: "Quote", paragraphs: paragraphs.filter((p) => p !== "").map((p) => inline(p, known)) })
    } else if (isTableRow(line) && isTableRule(at(i + 1))) {
      const head = cells(line).map((c) => inline(c, known))
      i += 2
      const rows: Array<Array<Inline>> = []
      while (i < lines.length && isTableRow(at(i))) rows.push(cells(at(i++)).map((c) => inline(c, known)))
      out.push({ _tag: "Table", head, rows })
    } else if (listItem.test(line)) {
      const first = listItem.exec(line)
      const ordered = first?.[1] !== undefined
      const items: Array<Inline> = []
      for (let match = first; match !== null && (match[1] !== undefined) === ordered; match = listItem.exec(at(i))) {
        let text = match[2] ?? ""
        i++
        while (i < lines.length && /^\s{2,}\S/.test(at(i)) && !listItem.test(at(i))) text += ` ${at(i++).trim()}`
        items.push(inline(text, known))
      }
      out.push({ _tag: "List", ordered, start: ordered ? Number(first?.[1] ?? 1) : 1, items })
    } else {
      const paragraph: Array<string> = []
      while (i < lines.length && at(i).trim() !== "" && (paragraph.length === 0 || !blockStart.test(at(i)))) {
        paragraph.push(at(i++).trim())
      }
      out.push({ _tag: "Paragraph", inline: inline(paragraph.join(" "), known) })
    }
  }
  return out
}

// =============================================================================
// The document
// =============================================================================

const italicLine = /^\*([^*\s].*)\*$/

/**
 * The report without the source list that ends it: as `Citations.stripSourceList` finds it by its heading, or, for a
 * heading that list does not know (المصادر, מקורות, Джерела, ...), the last heading whose section opens with the
 * list's first entry, `1. [title](url)`, as the list is written for every report.
 */
export const withoutSourceList = (markdown: string): string => {
  const stripped = Citations.stripSourceList(markdown)
  if (stripped !== markdown) return stripped
  const lines = markdown.split("\n")
  for (let i = lines.length - 1; i >= 0; i--) {
    if (!/^\s{0,3}#{1,6}\s+\S/.test(lines[i] ?? "")) continue
    const next = lines.slice(i + 1).find((line) => line.trim() !== "") ?? ""
    return /^1\.\s+\[/.test(next) ? lines.slice(0, i).join("\n").trimEnd() : markdown
  }
  return markdown
}

/** The body without its source list, and the check's closing line (which follows the list, or ends the body). */
const split = (markdown: string, recorded: boolean): { readonly body: string; readonly line: string | undefined } => {
  const stripped = withoutSourceList(markdown)
  const lastOf = (text: string) => text.trimEnd().split("\n").at(-1)?.trim() ?? ""
  if (stripped !== markdown) {
    const last = lastOf(markdown)
    return { body: stripped, line: italicLine.test(last) && !/^\d+[.)]\s/.test(last) ? last : undefined }
  }
  const last = lastOf(stripped)
  if (!recorded || !italicLine.test(last)) return { body: stripped, line: undefined }
  return { body: stripped.trimEnd().slice(0, -last.length).trimEnd(), line: last }
}

/** The heading the report gave its source list, or "Sources". */
export const sourcesHeadingOf = (markdown: string): string => {
  const body = withoutSourceList(markdown)
  if (body === markdown) return "Sources"
  const heading = markdown.slice(body.length).trimStart().split("\n")[0] ?? ""
  return (
    heading
      .replace(/^\s*#{1,6}\s+|^\s*\*\*|\*\*\s*:?\s*$/g, "")
      .replace(/\s*#*\s*$/, "")
      .trim() || "Sources"
  )
}

const sourceOf = (citation: Research.Citation, session: Session.Session): SourceEntry => {
  const source = session.sources.find((s) => s.id === citation.sourceId)
  const work = citation.work ?? source?.work
  return {
    number: citation.number,
    title: citation.title.trim() === "" ? citation.url : citation.title.trim(),
    url: citation.url,
    link: openable(citation.url),
    authors: work?.authors ?? [],
    year: work?.year,
    venue: work?.venue,
    doi: work?.doi,
    preprint: work?.preprint === true,
    provider: source?.provider,
    publishedDate: source?.publishedDate
  }
}

/** The session's report as a document; undefined when the session has no report yet. */
export const fromSession = (session: Session.Session): ReportDocument | undefined => {
  const report = session.report
  if (report === undefined) return undefined
  const status: CheckStatus =
    session.verification !== undefined ? "checked" : session.config.verify ? "not_recorded" : "off"
  const { body, line } = split(report.markdown, status !== "not_recorded")
  const known = new Set(report.citations.map((c) => c.number))
  return {
    sessionId: session.id,
    query: session.query,
    createdAt: session.createdAt,
    title: report.title,
    language: report.language,
    blocks: blocksOf(body, known),
    sources: report.citations.map((c) => sourceOf(c, session)),
    check: { status, line: line?.replace(italicLine, "$1"), verification: session.verification }
  }
}

/** What a work says in one line: `A. Author, B. Author (2020), Venue, preprint`. */
export const describe = (source: SourceEntry): string => {
  const authors =
    source.authors.length > 3 ? `${source.authors.slice(0, 3).join(", ")} et al.` : source.authors.join(", ")
  const year = source.year === undefined ? "" : authors === "" ? String(source.year) : `(${source.year})`
  return [[authors, year].filter((p) => p !== "").join(" "), source.venue ?? "", source.preprint ? "preprint" : ""]
    .filter((p) => p !== "")
    .join(", ")
}
