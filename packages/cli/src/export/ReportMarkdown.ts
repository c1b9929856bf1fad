/**
 * The report as Markdown to hand on: the stored text, with every citation number a link to its entry in the source
 * list (each entry an anchor, its title a link to the source), the check's marks and closing line as written. Raw
 * `<a id>` anchors are what CommonMark renderers (GitHub's, pandoc's, editors') keep as link targets.
 */
import { ReportText } from "@deep-research/core"
import * as ReportDocument from "./ReportDocument.js"

// Code is left as it is: `items[2]` in a snippet is an index, not a citation.
const codePattern = /(```[\s\S]*?(?:```|$)|~~~[\s\S]*?(?:~~~|$)|`[^`\n]+`)/
const citation = /\[(\d+(?:\s*[,;–-]\s*\d+)*)\](?![(:])|【(\d+(?:\s*[,，;–-]\s*\d+)*)】/g

/** Citation groups as links to the source list's entries; a group naming an unknown number stays as written. */
export const linkCitations = (markdown: string, known: ReadonlySet<number>): string =>
  markdown
    .split(codePattern)
    .map((part, i) =>
      i % 2 === 1
        ? part
        : part.replace(citation, (whole, ascii: string | undefined, wide: string | undefined) => {
            const numbers = [...new Set(ReportText.citedNumbers(`[${ascii ?? wide ?? ""}]`))]
            if (numbers.length === 0 || !numbers.every((n) => known.has(n))) return whole
            return `[${numbers.map((n) => `[${n}](#source-${n})`).join(", ")}]`
          })
    )
    .join("")

const escapeLabel = (text: string): string => text.replace(/[[\]]/g, "").replace(/\s+/g, " ").trim()

/** The source list: each entry an anchor, its title a link to the source, its work after it. */
export const sourceList = (sources: ReadonlyArray<ReportDocument.SourceEntry>, heading: string): string =>
  sources.length === 0
    ? ""
    : [
        `## ${heading}`,
        "",
        ...sources.map((s) => {
          const title = escapeLabel(s.title) || s.url
          const link = s.link === undefined ? `${title} (${s.url})` : `[${title}](${s.link.replace(/\)/g, "%29")})`
          const work = ReportDocument.describe(s)
          return `${s.number}. <a id="source-${s.number}"></a>${link}${work === "" ? "" : ` — ${work}`}`
        })
      ].join("\n")

/** The report of a session as Markdown with working citation links. */
export const render = (document: ReportDocument.ReportDocument, markdown: string): string => {
  const known = new Set(document.sources.map((s) => s.number))
  const body = ReportDocument.withoutSourceList(markdown)
  const withoutLine =
    body === markdown && document.check.line !== undefined
      ? body.trimEnd().slice(0, body.trimEnd().lastIndexOf("\n") + 1)
      : body
  const parts = [
    linkCitations(withoutLine.trimEnd(), known),
    sourceList(document.sources, ReportDocument.sourcesHeadingOf(markdown)),
    document.check.line === undefined ? "" : `*${document.check.line}*`
  ]
  return `${parts.filter((part) => part !== "").join("\n\n")}\n`
}
