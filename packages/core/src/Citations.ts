/**
 * Citation post-processing of a report. The report model cites the numbered sources it was given as `[n]` (also
 * `[1, 2]`, `[1][2]`, `[1-3]`); afterwards the numbers are renumbered to run 1..N in order of first appearance, every
 * citation pointing at no retrieved source is removed and counted, and the numbered source list is built from the
 * session's sources, never from what the model wrote.
 */
import { Citation } from "./Research.js"
import { describeWork, type Source } from "./Source.js"

/** The outcome of renumbering. */
export interface Renumbered {
  /** The text with citations renumbered 1..N and dangling ones removed. */
  readonly markdown: string
  /** The original numbers of the cited sources, in their new order: `order[0]` is now `[1]`. */
  readonly order: ReadonlyArray<number>
  /** How many citation references pointed at no known source and were removed. */
  readonly dropped: number
}

// One bracket: a number or a range, then more of them separated by commas (ASCII or CJK) or semicolons. Full-width
// brackets are accepted because models writing CJK text use them.
const bracket = String.raw`[\[【]\s*\d+(?:\s*[-–—]\s*\d+)?(?:\s*[,，、;]\s*\d+(?:\s*[-–—]\s*\d+)?)*\s*[\]】]`
// A run of adjacent brackets (`[1][2]`, `[1] [2]`) is one citation group. A bracket right after `]` is a reference-style
// link (`[text][1]`), and one followed by `(` or `:` is a link or a link definition, not a citation.
const citationRun = new RegExp(String.raw`(?<!\])(?:${bracket})(?:[ \t]?${bracket})*(?![(:])`, "g")

// Fenced code blocks (closed, or running to the end) and inline code spans, captured so that `split` keeps them.
const codePattern = /(```[\s\S]*?(?:```|$)|~~~[\s\S]*?(?:~~~|$)|`[^`\n]+`)/

/** Ranges longer than this are not expanded (a model writing `[1-400]` is not citing 400 sources). */
const maxRange = 50

const numbersOf = (run: string): ReadonlyArray<number> => {
  const numbers: Array<number> = []
  for (const part of run.matchAll(/(\d+)(?:\s*[-–—]\s*(\d+))?/g)) {
    const start = Number(part[1])
    const end = part[2] === undefined ? start : Number(part[2])
    if (end >= start && end - start <= maxRange) {
      for (let n = start; n <= end; n++) numbers.push(n)
    } else {
      numbers.push(start, end)
    }
  }
  return numbers
}

/** The outcome of mapping citation numbers. */
export interface Remapped {
  readonly markdown: string
  /** How many citation references mapped to nothing and were removed. */
  readonly dropped: number
}

/**
 * Rewrites every citation group of `markdown` through `map` (old number to new, or undefined to remove it), in order
 * of appearance. Each group is written back as one sorted `[a, b]`; a group left empty disappears together with the
 * blank before it.
 */
export const remap = (markdown: string, map: (n: number) => number | undefined): Remapped => {
  let dropped = 0
  const rewrite = (text: string) =>
    text.replace(citationRun, (run) => {
      const kept = new Set<number>()
      for (const n of numbersOf(run)) {
        const next = map(n)
        if (next === undefined) dropped++
        else kept.add(next)
      }
      if (kept.size === 0) return "\u0000"
      return `[${[...kept].sort((a, b) => a - b).join(", ")}]`
    })
  // Code is left as it is: `items[2]` in a snippet is an index, not a citation. Odd parts of the split are code.
  const replaced = markdown
    .split(codePattern)
    .map((part, i) => (i % 2 === 1 ? part : rewrite(part)))
    .join("")
  // A removed group takes the blank before it with it ("a claim [9]." becomes "a claim.").
  return { markdown: replaced.replace(/[ \t]*\u0000/g, ""), dropped }
}

/**
 * Renumbers the citations of `markdown` to run 1..N in order of first appearance. `isKnown(n)` says whether `[n]`
 * points at a source the session retrieved; the others are removed and counted.
 */
export const renumber = (markdown: string, isKnown: (n: number) => boolean): Renumbered => {
  const assigned = new Map<number, number>()
  const order: Array<number> = []
  const remapped = remap(markdown, (n) => {
    if (!isKnown(n)) return undefined
    let next = assigned.get(n)
    if (next === undefined) {
      next = order.length + 1
      assigned.set(n, next)
      order.push(n)
    }
    return next
  })
  return { markdown: remapped.markdown, order, dropped: remapped.dropped }
}

const sourceHeadings = [
  "sources",
  "references",
  "bibliography",
  "works cited",
  "citations",
  "source list",
  "sources cited",
  "参考来源",
  "参考文献",
  "参考资料",
  "资料来源",
  "來源",
  "来源",
  "引用",
  "出典",
  "参考",
  "출처",
  "참고 문헌",
  "источники",
  "литература",
  "fuentes",
  "referencias",
  "quellen",
  "literatur",
  "fontes",
  "referências",
  "fonti",
  "bronnen"
]

const headingText = (line: string): string | undefined => {
  const heading = /^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$/.exec(line)
  const bold = /^\s{0,3}\*\*(.+?)\*\*\s*:?\s*$/.exec(line)
  const text = heading?.[1] ?? bold?.[1]
  return text
    ?.replace(/[*_:：]/g, "")
    .trim()
    .toLowerCase()
}

/**
 * Removes a source list the model wrote at the end of the report (a last section headed Sources, References, 参考文献,
 * ...): the list is rebuilt from the session's sources, so that no invented entry survives.
 */
export const stripSourceList = (markdown: string): string => {
  const lines = markdown.split("\n")
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i] ?? ""
    const text = headingText(line)
    if (text === undefined) continue
    if (sourceHeadings.includes(text)) return lines.slice(0, i).join("\n").trimEnd()
    // Only the last section can be the model's source list.
    if (/^\s{0,3}#{1,6}\s/.test(line)) return markdown
  }
  return markdown
}

const escapeTitle = (title: string): string => title.replace(/[[\]]/g, "").replace(/\s+/g, " ").trim()

/** The numbered source list of a report, as markdown under the given heading; a scholarly entry names its work. */
export const sourceList = (citations: ReadonlyArray<Citation>, heading: string): string =>
  citations.length === 0
    ? ""
    : [
        `## ${heading}`,
        "",
        ...citations.map((c) => {
          const link = `${c.number}. [${escapeTitle(c.title) || c.url}](${c.url.replace(/\)/g, "%29")})`
          const work = c.work === undefined ? "" : describeWork(c.work)
          const from = c.fromSession === undefined ? "" : ` (from session ${c.fromSession})`
          return `${work === "" ? link : `${link} — ${work}`}${from}`
        })
      ].join("\n")

/** A finished report body with its citations. */
export interface Finalized {
  readonly markdown: string
  readonly citations: ReadonlyArray<Citation>
  readonly dropped: number
}

/**
 * Finalizes a report: drops the model's own source list, renumbers the citations against `sources` (where `[n]` in
 * the model's text means `sources[n - 1]`), removes dangling ones and appends the numbered source list.
 */
export const finalize = (markdown: string, sources: ReadonlyArray<Source>, heading: string): Finalized => {
  const body = stripSourceList(markdown.trim())
  const renumbered = renumber(body, (n) => n >= 1 && n <= sources.length)
  const citations = renumbered.order.flatMap((n, i) => {
    const source = sources[n - 1]
    return source === undefined
      ? []
      : [
          new Citation({
            number: i + 1,
            sourceId: source.id,
            url: source.url,
            title: source.title,
            ...(source.work !== undefined ? { work: source.work } : {}),
            ...(source.origin !== undefined ? { fromSession: source.origin.sessionId } : {})
          })
        ]
  })
  const list = sourceList(citations, heading)
  return {
    markdown: list === "" ? renumbered.markdown : `${renumbered.markdown}\n\n${list}\n`,
    citations,
    dropped: renumbered.dropped
  }
}
