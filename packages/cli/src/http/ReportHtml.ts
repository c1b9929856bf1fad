/**
 * A report as HTML: the Markdown the report model writes (headings, paragraphs, lists, quotes, code, tables, emphasis,
 * links) with every `[n]` citation a link to the numbered source list, which is rebuilt from the report's citations.
 * Everything from the report is escaped; only http(s) links become links. Report text is model output over web
 * content, so it is never trusted as HTML.
 */
import { ReportText, type Research, Source } from "@deep-research/core"
import * as ReportDocument from "../export/ReportDocument.js"

const escapeHtml = (text: string): string =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;")

const safeUrl = (url: string): string | undefined => {
  try {
    const parsed = new URL(url)
    return parsed.protocol === "http:" || parsed.protocol === "https:" ? parsed.href : undefined
  } catch {
    return undefined
  }
}

const citationLinks = (escaped: string, known: ReadonlySet<number>): string =>
  escaped.replace(/\[(\d+(?:\s*[,–-]\s*\d+)*)\](?!\()/g, (whole, list: string) => {
    const numbers = list.split(/\s*,\s*/)
    if (!numbers.every((n) => known.has(Number(n)))) return whole
    return `[${numbers.map((n) => `<a class="cite" href="#source-${n}">${n}</a>`).join(", ")}]`
  })

// The citation check's mark after a sentence its sources do not back, as the emphasis renders it: shown as a mark.
const unsupported = ReportText.unsupportedMarks.map((mark) => `<em>${escapeHtml(mark)}</em>`)

const markedUnsupported = (html: string): string =>
  unsupported.reduce(
    (out, em) => out.split(em).join(`<mark class="unsupported">${em.slice("<em>".length, -"</em>".length)}</mark>`),
    html
  )

/** Inline Markdown: code spans first (their content is literal), then links, emphasis and citations. */
export const inline = (text: string, known: ReadonlySet<number>): string =>
  text
    .split(/(`[^`]+`)/)
    .map((part, i) => {
      if (i % 2 === 1) return `<code>${escapeHtml(part.slice(1, -1))}</code>`
      let out = escapeHtml(part)
      out = out.replace(/\[([^\]]+)\]\(([^)\s]+)\)/g, (whole, label: string, href: string) => {
        const url = safeUrl(href.replace(/&amp;/g, "&"))
        return url === undefined ? label : `<a href="${escapeHtml(url)}" rel="noopener noreferrer">${label}</a>`
      })
      out = out.replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>").replace(/__([^_]+)__/g, "<strong>$1</strong>")
      out = out
        .replace(/(^|[^*\w])\*([^*\s][^*]*)\*/g, "$1<em>$2</em>")
        .replace(/(^|\W)_([^_\s][^_]*)_(?=\W|$)/g, "$1<em>$2</em>")
      return citationLinks(markedUnsupported(out), known)
    })
    .join("")

const { cells, isTableRow, isTableRule, listItem } = ReportDocument
const blockStart = /^(#{1,6}\s|>|```|\s*(?:[-*+]|\d+[.)])\s+|\s*(?:-{3,}|\*{3,})\s*$)/

/** Block-level Markdown to HTML. */
export const blocks = (markdown: string, known: ReadonlySet<number>): string => {
  const lines = markdown.replace(/\r\n?/g, "\n").split("\n")
  const out: Array<string> = []
  let i = 0
  while (i < lines.length) {
    const line = lines[i] ?? ""
    if (line.trim() === "") {
      i++
      continue
    }
    const heading = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line)
    if (heading !== null) {
      const level = (heading[1] ?? "#").length
      out.push(`<h${level}>${inline(heading[2] ?? "", known)}</h${level}>`)
      i++
      continue
    }
    if (line.startsWith("```")) {
      const code: Array<string> = []
      i++
      while (i < lines.length && !(lines[i] ?? "").startsWith("```")) code.push(lines[i++] ?? "")
      i++
      out.push(`<pre><code>${escapeHtml(code.join("\n"))}</code></pre>`)
      continue
    }
    if (/^\s*(?:-{3,}|\*{3,})\s*$/.test(line)) {
      out.push("<hr>")
      i++
      continue
    }
    if (line.startsWith(">")) {
      const quoted: Array<string> = []
      while (i < lines.length && (lines[i] ?? "").startsWith(">")) quoted.push((lines[i++] ?? "").replace(/^>\s?/, ""))
      out.push(`<blockquote>${blocks(quoted.join("\n"), known)}</blockquote>`)
      continue
    }
    if (isTableRow(line) && isTableRule(lines[i + 1] ?? "")) {
      const head = cells(line)
      i += 2
      const rows: Array<Array<string>> = []
      while (i < lines.length && isTableRow(lines[i] ?? "")) rows.push(cells(lines[i++] ?? ""))
      out.push(
        `<div class="table"><table><thead><tr>${head.map((c) => `<th>${inline(c, known)}</th>`).join("")}</tr></thead>` +
          `<tbody>${rows.map((r) => `<tr>${r.map((c) => `<td>${inline(c, known)}</td>`).join("")}</tr>`).join("")}</tbody></table></div>`
      )
      continue
    }
    const item = listItem.exec(line)
    if (item !== null) {
      const ordered = item[1] !== undefined
      const items: Array<string> = []
      while (i < lines.length) {
        const match = listItem.exec(lines[i] ?? "")
        if (match === null || (match[1] !== undefined) !== ordered) break
        let text = match[2] ?? ""
        i++
        // Continuation lines of the item (indented, not a new item).
        while (i < lines.length && /^\s{2,}\S/.test(lines[i] ?? "") && listItem.exec(lines[i] ?? "") === null) {
          text += ` ${(lines[i++] ?? "").trim()}`
        }
        items.push(`<li>${inline(text, known)}</li>`)
      }
      const start = ordered && item[1] !== "1" ? ` start="${Number(item[1])}"` : ""
      out.push(ordered ? `<ol${start}>${items.join("")}</ol>` : `<ul>${items.join("")}</ul>`)
      continue
    }
    const paragraph: Array<string> = []
    while (
      i < lines.length &&
      (lines[i] ?? "").trim() !== "" &&
      (paragraph.length === 0 || !blockStart.test(lines[i] ?? ""))
    ) {
      paragraph.push((lines[i++] ?? "").trim())
    }
    out.push(`<p>${inline(paragraph.join(" "), known)}</p>`)
  }
  return out.join("\n")
}

const hostOf = (url: string): string => {
  try {
    return new URL(url).hostname
  } catch {
    return ""
  }
}

/** The numbered source list, each entry the target of its citations; a scholarly one names its work. */
export const sourceList = (citations: ReadonlyArray<Research.Citation>, heading = "Sources"): string =>
  citations.length === 0
    ? ""
    : `<section class="sources"><h2 id="sources">${escapeHtml(heading)}</h2><ol>${citations
        .map((c) => {
          const url = safeUrl(c.url)
          const title = escapeHtml(c.title.trim() === "" ? c.url : c.title)
          const link = url === undefined ? title : `<a href="${escapeHtml(url)}" rel="noopener noreferrer">${title}</a>`
          const work = c.work === undefined ? "" : Source.describeWork(c.work)
          const named = work === "" ? "" : ` <span class="work">— ${escapeHtml(work)}</span>`
          return `<li id="source-${c.number}" value="${c.number}">${link}${named} <span class="host">${escapeHtml(hostOf(c.url))}</span></li>`
        })
        .join("")}</ol></section>`

/**
 * The report's closing line when it follows the source list: the citation check's (how many cited sentences were
 * checked and changed, or that they were not checked). The source list is rebuilt, so the line is taken from after it.
 */
export const closingLine = (markdown: string): string | undefined => {
  const body = ReportDocument.withoutSourceList(markdown)
  if (body === markdown) return undefined
  const last = markdown.trimEnd().split("\n").at(-1)?.trim() ?? ""
  return /^\*[^*\s].*\*$/.test(last) && !/^\d+[.)]\s/.test(last) ? last : undefined
}

/**
 * The `lang` of the report's language and, for a report whose text is mostly in a script written right to left,
 * `dir="rtl"`, so that a browser lays out, hyphenates and reads aloud an Arabic or Hebrew report as such.
 */
const languageAttributes = (report: Research.Report): { readonly lang: string; readonly dir: string } => {
  const tag = ReportText.languageTag(report.language)
  return {
    lang: tag === undefined ? "" : ` lang="${escapeHtml(tag)}"`,
    dir: ReportDocument.isRightToLeft(ReportDocument.withoutSourceList(report.markdown)) ? ' dir="rtl"' : ""
  }
}

/** The report's body as an HTML fragment: the text, the source list, then the citation check's closing line. */
export const fragment = (report: Research.Report): string => {
  const known = new Set(report.citations.map((c) => c.number))
  const closing = closingLine(report.markdown)
  const check = closing === undefined ? "" : `\n<p class="check">${inline(closing, known)}</p>`
  const { lang, dir } = languageAttributes(report)
  return `<article class="report"${lang}${dir}>${blocks(ReportDocument.withoutSourceList(report.markdown), known)}\n${sourceList(report.citations, ReportDocument.sourcesHeadingOf(report.markdown))}${check}</article>`
}

const style = `body{font:16px/1.6 system-ui,sans-serif;max-width:46rem;margin:0 auto;padding:1rem;color:#1d2430}
a{color:#1b5fc1}.cite{text-decoration:none;font-size:.85em}table{border-collapse:collapse}.table{overflow-x:auto}
td,th{border:1px solid #ccd;padding:.3rem .5rem}blockquote{margin:0;padding:.2rem 1rem;border-inline-start:4px solid #ccd;color:#445}
pre{overflow-x:auto;background:#f3f4f7;padding:.6rem}.host{color:#667;font-size:.85em}:target{background:#fff3bf}
mark.unsupported{background:#ffe0e0;color:#8a1010;padding:0 .2em;border-radius:3px}.check{border-top:1px solid #ccd;padding-top:.6rem}`

/** The report as a standalone page. */
export const page = (report: Research.Report): string => {
  const { lang, dir } = languageAttributes(report)
  return (
    `<!doctype html><html${lang}${dir}><head><meta charset="utf-8">` +
    `<meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(report.title)}</title>` +
    `<style>${style}</style></head><body>${fragment(report)}</body></html>`
  )
}
