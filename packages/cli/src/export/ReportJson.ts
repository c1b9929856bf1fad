/**
 * The report as data: its sections, each block's sentences, each sentence's citations (with the source each names)
 * and the citation check's verdict on it, the numbered sources with what is known of their works, and what the check
 * did. Its shape is the JSON Schema shipped beside the package (`schema/report-export.schema.json`), whose `$id` the
 * export's `$schema` names.
 */
import { Citations, ReportText, type Research, SourcePolicy } from "@deep-research/core"
import * as fs from "node:fs"
import * as ReportDocument from "./ReportDocument.js"

/** The `$id` of the export's JSON Schema, named by every export's `$schema`. */
export const schemaId = "urn:deep-research:report-export:1"

/** The JSON Schema of the export, as shipped in the package. */
export const schemaText = (): string =>
  fs.readFileSync(new URL("../../schema/report-export.schema.json", import.meta.url), "utf8")

// =============================================================================
// Sentences
// =============================================================================

// After a terminator and the citations that follow it, unless more citations come next (as `ReportText` splits).
const boundary =
  /(?<=[.!?。！？](?:\s*(?:\[[\d\s,;–-]+\]|【[\d\s,;，–-]+】))*)(?:\s+|(?<=[。！？\]】]))(?!\s*(?:\[\d|【\d))/

const abbreviation =
  /(?:\b(?:e\.g|i\.e|etc|vs|cf|al|approx|ca|Mr|Mrs|Ms|Dr|Prof|St|Inc|Ltd|Co|Corp|Fig|No|Vol|pp)|(?:^|[\s(])(?:[A-Za-z]\.)*[A-Za-z])\.$/

const markPattern = new RegExp(
  `\\s*\\*(?:${ReportText.unsupportedMarks.map((m) => m.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|")})\\*`,
  "g"
)

/** The sentences of a run of markdown, the check's mark kept with the sentence it follows. */
export const sentencesOf = (markdown: string): ReadonlyArray<string> =>
  markdown
    .split(boundary)
    .map((piece) => piece.trim())
    .filter((piece) => piece !== "")
    .reduce<Array<string>>((sentences, piece) => {
      const previous = sentences.at(-1)
      const onlyMark = piece.replace(markPattern, "").trim() === ""
      if (previous !== undefined && (onlyMark || abbreviation.test(previous) || /^[a-z]/.test(piece))) {
        sentences[sentences.length - 1] = `${previous} ${piece}`
      } else sentences.push(piece)
      return sentences
    }, [])

/** A sentence as the check and the report may both have written it: no citations, no mark, spaces collapsed. */
const normalized = (sentence: string): string =>
  Citations.remap(sentence.replace(markPattern, ""), () => undefined)
    .markdown.replace(/\s+/g, " ")
    .trim()

// =============================================================================
// Verdicts
// =============================================================================

/** The check's verdicts by the sentence they were given for, in report order. */
const verdictIndex = (verification: Research.Verification | undefined) => {
  const queues = new Map<string, Array<Research.SentenceVerdict>>()
  for (const verdict of verification?.verdicts ?? []) {
    const key = normalized(verdict.sentence)
    queues.set(key, [...(queues.get(key) ?? []), verdict])
  }
  return (sentence: string): Research.SentenceVerdict | undefined => queues.get(normalized(sentence))?.shift()
}

/**
 * The support of each kept citation. The check labelled citations by the numbers the report had before it removed
 * some and renumbered the rest; a sentence's kept citations map to its new numbers one to one when one was kept, or
 * when all that were kept share a label. Numbers learnt from those sentences settle the others.
 */
const supportOf = (
  pairs: ReadonlyArray<{ readonly verdict: Research.SentenceVerdict; readonly numbers: ReadonlyArray<number> }>
) => {
  const learnt = new Map<number, number>()
  const kept = (verdict: Research.SentenceVerdict) =>
    verdict.citations.filter((c) => !verdict.removed.includes(c.number))
  for (const { verdict, numbers } of pairs) {
    const old = kept(verdict)
    if (old.length === 1 && numbers.length === 1) learnt.set(numbers[0] ?? 0, old[0]?.number ?? 0)
  }
  return (verdict: Research.SentenceVerdict, number: number): Research.SupportLabel | undefined => {
    const old = kept(verdict)
    const labels = new Set(old.map((c) => c.label))
    if (labels.size === 1) return old[0]?.label
    const was = learnt.get(number)
    return old.find((c) => c.number === was)?.label
  }
}

// =============================================================================
// The export
// =============================================================================

type Unit =
  { readonly kind: string; readonly inline: ReportDocument.Inline } | { readonly kind: "code"; readonly text: string }

const unitsOf = (block: ReportDocument.Block): ReadonlyArray<Unit> => {
  switch (block._tag) {
    case "Paragraph":
      return [{ kind: "paragraph", inline: block.inline }]
    case "List":
      return block.items.map((item) => ({ kind: "list_item", inline: item }))
    case "Quote":
      return block.paragraphs.map((p) => ({ kind: "quote", inline: p }))
    case "Table":
      return [block.head, ...block.rows].flatMap((row) => row.map((cell) => ({ kind: "table_cell", inline: cell })))
    case "Code":
      return [{ kind: "code", text: block.text }]
    default:
      return []
  }
}

/** A sentence as read, before the check's support of each citation is settled. */
interface Draft {
  readonly text: string
  readonly markdown: string
  readonly numbers: ReadonlyArray<number>
  readonly verdict: Research.SentenceVerdict | undefined
  readonly marked: boolean
}

interface DraftSection {
  readonly heading: string | null
  readonly level: number
  readonly blocks: Array<{ readonly kind: string; readonly sentences: ReadonlyArray<Draft> }>
}

const draftOf = (
  markdown: string,
  known: ReadonlySet<number>,
  verdictFor: (sentence: string) => Research.SentenceVerdict | undefined
): Draft => {
  const spans = ReportDocument.inline(markdown, known).spans
  const text = spans
    .filter((s) => s._tag !== "Cite" && s._tag !== "Mark")
    .map((s) => ("text" in s ? s.text : ""))
    .join("")
  return {
    text: text
      .replace(/\s+([.,;:!?])/g, "$1")
      .replace(/\s+/g, " ")
      .trim(),
    markdown,
    numbers: [...new Set(spans.flatMap((s) => (s._tag === "Cite" ? s.numbers : [])))],
    verdict: verdictFor(markdown),
    marked: spans.some((s) => s._tag === "Mark")
  }
}

/** The document's sections, each block's sentences read and given the verdict the check recorded for them. */
const sectionsOf = (document: ReportDocument.ReportDocument): ReadonlyArray<DraftSection> => {
  const known = new Set(document.sources.map((s) => s.number))
  const verdictFor = verdictIndex(document.check.verification)
  const sections: Array<DraftSection> = []
  for (const block of document.blocks) {
    if (block._tag === "Heading") {
      sections.push({ heading: ReportDocument.plainText(block.inline.spans), level: block.level, blocks: [] })
      continue
    }
    for (const unit of unitsOf(block)) {
      if (sections.length === 0) sections.push({ heading: null, level: 0, blocks: [] })
      const sentences =
        "text" in unit
          ? [{ text: unit.text, markdown: unit.text, numbers: [], verdict: undefined, marked: false }]
          : sentencesOf(unit.inline.markdown).map((markdown) => draftOf(markdown, known, verdictFor))
      sections.at(-1)?.blocks.push({ kind: unit.kind, sentences })
    }
  }
  return sections
}

const verdictJson = (verdict: Research.SentenceVerdict) => ({
  status: verdict.status,
  label: verdict.label ?? null,
  marked: verdict.marked,
  removedCitations: verdict.removed.length,
  explanation: verdict.explanation
})

/** The year a source's publication date stands for, when it stands for one year (`2023-05-02`, `2023`). */
const yearOfDate = (s: ReportDocument.SourceEntry): number | undefined => {
  const span = SourcePolicy.spanOf({ url: s.url, provider: s.provider ?? "", publishedDate: s.publishedDate })
  const year = span?.first.slice(0, 4)
  return year !== undefined && span?.last.startsWith(year) === true ? Number(year) : undefined
}

const sourceJson = (s: ReportDocument.SourceEntry) => ({
  number: s.number,
  title: s.title,
  url: s.url,
  authors: s.authors,
  // The work's year where the backend gave one, else the year of the page's publication date.
  year: s.year ?? yearOfDate(s) ?? null,
  venue: s.venue ?? null,
  doi: s.doi ?? null,
  preprint: s.preprint,
  publishedDate: s.publishedDate ?? null,
  provider: s.provider ?? null
})

const checkJson = (check: ReportDocument.ReportDocument["check"]) => ({
  status: check.status,
  line: check.line ?? null,
  counts:
    check.verification === undefined
      ? null
      : {
          sentences: check.verification.sentences,
          checked: check.verification.checked,
          changed: check.verification.changed,
          removedCitations: check.verification.removedCitations,
          marked: check.verification.marked,
          incomplete: check.verification.incomplete ?? null
        }
})

/** The export of a report document, as a JSON value the schema describes. */
export const render = (document: ReportDocument.ReportDocument): unknown => {
  const byNumber = new Map(document.sources.map((s) => [s.number, s] as const))
  const sections = sectionsOf(document)
  const support = supportOf(
    sections.flatMap((section) =>
      section.blocks.flatMap((block) =>
        block.sentences.flatMap((d) => (d.verdict === undefined ? [] : [{ verdict: d.verdict, numbers: d.numbers }]))
      )
    )
  )
  const sentence = (d: Draft) => ({
    text: d.text,
    markdown: d.markdown,
    citations: d.numbers.map((number) => {
      const source = byNumber.get(number)
      const label = d.verdict === undefined ? undefined : support(d.verdict, number)
      return { number, title: source?.title ?? "", url: source?.url ?? "", support: label ?? null }
    }),
    marked: d.marked,
    check: d.verdict === undefined ? null : verdictJson(d.verdict)
  })
  return {
    $schema: schemaId,
    session: { id: document.sessionId, query: document.query, createdAt: new Date(document.createdAt).toISOString() },
    title: document.title,
    language: document.language,
    sections: sections.map((s) => ({
      heading: s.heading,
      level: s.level,
      blocks: s.blocks.map((b) => ({ kind: b.kind, sentences: b.sentences.map(sentence) }))
    })),
    sources: document.sources.map(sourceJson),
    check: checkJson(document.check)
  }
}
