/**
 * The report as a PDF, written by pdfkit with an embedded DejaVu font (no browser, nothing fetched): headings,
 * paragraphs, lists, quotes, code and tables; each citation number a link to its entry in the source list (a named
 * destination `source-N`), each source's title a link to its URL, the check's marks in red, and the check's closing
 * line after the list. A report the font cannot render is refused (`internal/pdfFonts`).
 */
import { ReportText } from "@deep-research/core"
import * as Effect from "effect/Effect"
import { createRequire } from "node:module"
import * as PdfFonts from "./internal/pdfFonts.js"
import * as ReportDocument from "./ReportDocument.js"

type Doc = PDFKit.PDFDocument

// pdfkit is a CommonJS module typed as `export =`, which this package's settings import through `require` only.
const PDFDocument: typeof import("pdfkit") = createRequire(import.meta.url)("pdfkit")

const colors = { text: "#1d2430", link: "#1b5fc1", mark: "#8a1010", muted: "#556070" } as const

// pdfkit carries a `continued` piece's link and target over to the next piece unless that one names its own: null
// names none (its types allow undefined only, which would carry them over).
const noTarget: Record<string, null> = { goTo: null, destination: null }

interface Piece {
  readonly text: string
  readonly font: string
  readonly color: string
  readonly link?: string | undefined
  readonly goTo?: string | undefined
  readonly destination?: string | undefined
  readonly size?: number | undefined
}

const fontOf = (strong: boolean, emphasis: boolean) =>
  strong && emphasis ? "boldItalic" : strong ? "bold" : emphasis ? "italic" : "regular"

const piecesOf = (spans: ReadonlyArray<ReportDocument.Span>, base: { strong?: boolean; emphasis?: boolean } = {}) =>
  spans.flatMap((span): ReadonlyArray<Piece> => {
    switch (span._tag) {
      case "Text":
        return [
          {
            text: span.text,
            font: fontOf(span.strong || base.strong === true, span.emphasis || base.emphasis === true),
            color: colors.text
          }
        ]
      case "Code":
        return [{ text: span.text, font: "mono", color: colors.text }]
      case "Link":
        return [{ text: span.text, font: fontOf(base.strong === true, false), color: colors.link, link: span.url }]
      case "Mark":
        return [{ text: span.text, font: "boldItalic", color: colors.mark }]
      case "Cite":
        return [
          { text: "[", font: "regular", color: colors.text },
          ...span.numbers.flatMap((n, i) => [
            ...(i === 0 ? [] : [{ text: ", ", font: "regular", color: colors.text }]),
            { text: String(n), font: "regular", color: colors.link, goTo: `source-${n}` }
          ]),
          { text: "]", font: "regular", color: colors.text }
        ]
    }
  })

/** Writes pieces as one paragraph at `x`, `width` wide. */
const write = (doc: Doc, pieces: ReadonlyArray<Piece>, x: number, width: number, size: number, gap: number) => {
  const shown = pieces.filter((p) => p.text !== "")
  if (shown.length === 0) return
  doc.x = x
  shown.forEach((piece, i) => {
    doc
      .font(piece.font)
      .fontSize(piece.size ?? size)
      .fillColor(piece.color)
      .text(PdfFonts.printable(piece.text), {
        ...noTarget,
        width,
        continued: i < shown.length - 1,
        link: piece.link ?? null,
        underline: piece.link !== undefined,
        ...(piece.goTo === undefined ? {} : { goTo: piece.goTo }),
        ...(piece.destination === undefined ? {} : { destination: piece.destination }),
        paragraphGap: gap,
        lineGap: 2
      })
  })
  doc.x = x
}

const block = (doc: Doc, item: ReportDocument.Block, left: number, width: number) => {
  const inline = (spans: ReadonlyArray<ReportDocument.Span>, indent = 0, gap = 8, size = 11) =>
    write(doc, piecesOf(spans), left + indent, width - indent, size, gap)
  switch (item._tag) {
    case "Heading": {
      const size = [20, 16, 13.5, 12, 11, 11][item.level - 1] ?? 11
      doc.moveDown(item.level <= 2 ? 0.6 : 0.3)
      return write(doc, piecesOf(item.inline.spans, { strong: true }), left, width, size, 6)
    }
    case "Paragraph":
      return inline(item.inline.spans)
    case "List":
      item.items.forEach((entry, i) => {
        const bullet = item.ordered ? `${item.start + i}. ` : "• "
        write(
          doc,
          [{ text: bullet, font: "regular", color: colors.text }, ...piecesOf(entry.spans)],
          left + 14,
          width - 14,
          11,
          4
        )
      })
      return doc.moveDown(0.4)
    case "Quote":
      return item.paragraphs.forEach((p) =>
        write(doc, piecesOf(p.spans, { emphasis: true }), left + 18, width - 18, 11, 6)
      )
    case "Code":
      return write(doc, [{ text: item.text, font: "mono", color: colors.text }], left + 8, width - 8, 9, 8)
    case "Table":
      for (const [r, row] of [item.head, ...item.rows].entries()) {
        write(
          doc,
          row.flatMap((cell, c) => [
            ...(c === 0 ? [] : [{ text: "  |  ", font: "regular", color: colors.muted }]),
            ...piecesOf(cell.spans, { strong: r === 0 })
          ]),
          left,
          width,
          10,
          r === 0 ? 4 : 2
        )
      }
      return doc.moveDown(0.4)
    case "Rule": {
      doc.moveDown(0.3)
      doc
        .moveTo(left, doc.y)
        .lineTo(left + width, doc.y)
        .strokeColor("#ccd0d8")
        .stroke()
      return doc.moveDown(0.5)
    }
  }
}

const host = (url: string) => {
  try {
    return new URL(url).hostname
  } catch {
    return ""
  }
}

/** Every piece of text the PDF would show, to tell whether its font can. */
export const textOf = (document: ReportDocument.ReportDocument, heading: string): string =>
  [
    document.title,
    heading,
    document.check.line ?? "",
    ...document.sources.map((s) => `${s.title} ${ReportDocument.describe(s)}`),
    ...document.blocks.map((b) =>
      b._tag === "Code" || b._tag === "Rule"
        ? ""
        : b._tag === "List"
          ? b.items.map((i) => i.markdown).join(" ")
          : b._tag === "Quote"
            ? b.paragraphs.map((p) => p.markdown).join(" ")
            : b._tag === "Table"
              ? [b.head, ...b.rows]
                  .flat()
                  .map((c) => c.markdown)
                  .join(" ")
              : b.inline.markdown
    )
  ].join("\n")

/** Why the report cannot be a PDF, in one sentence; undefined when it can. */
export const refusal = (document: ReportDocument.ReportDocument, heading: string): string | undefined =>
  PdfFonts.refusal(textOf(document, heading))

/** The PDF of a report; check `refusal` first. `compress: false` leaves its page streams readable (for tests). */
export const render = (
  document: ReportDocument.ReportDocument,
  heading: string,
  options?: { readonly compress?: boolean }
): Effect.Effect<Uint8Array> =>
  Effect.async<Uint8Array>((resume) => {
    const tag = ReportText.languageTag(document.language)
    const doc = new PDFDocument({
      size: "A4",
      margins: { top: 56, bottom: 56, left: 60, right: 60 },
      compress: options?.compress ?? true,
      ...(tag === undefined ? {} : { lang: tag }),
      displayTitle: true,
      info: { Title: document.title, Subject: document.query, Creator: "deep-research" }
    })
    const chunks: Array<Uint8Array> = []
    doc.on("data", (chunk: Uint8Array) => chunks.push(chunk))
    doc.on("end", () => resume(Effect.succeed(Buffer.concat(chunks))))
    for (const [name, path] of Object.entries(PdfFonts.files)) doc.registerFont(name, path)
    const left = doc.page.margins.left
    const width = doc.page.width - left - doc.page.margins.right
    for (const item of document.blocks) block(doc, item, left, width)
    if (document.sources.length > 0) {
      block(doc, { _tag: "Heading", level: 2, inline: ReportDocument.inline(heading, new Set()) }, left, width)
      for (const source of document.sources) {
        const work = ReportDocument.describe(source)
        write(
          doc,
          [
            { text: `${source.number}. `, font: "regular", color: colors.text, destination: `source-${source.number}` },
            source.link === undefined
              ? { text: `${source.title} (${source.url})`, font: "regular", color: colors.text }
              : { text: source.title, font: "regular", color: colors.link, link: source.link },
            ...(work === "" ? [] : [{ text: ` — ${work}`, font: "italic", color: colors.muted }]),
            { text: ` ${host(source.url)}`, font: "regular", color: colors.muted, size: 9 }
          ],
          left,
          width,
          10,
          4
        )
      }
    }
    if (document.check.line !== undefined) {
      block(doc, { _tag: "Rule" }, left, width)
      write(doc, [{ text: document.check.line, font: "italic", color: colors.muted }], left, width, 10, 4)
    }
    doc.end()
  })
