/**
 * The report as a Word document (DOCX), written by the `docx` package: headings, paragraphs, lists, quotes, code and
 * tables; each citation number an internal link to its source's bookmark (`source-N`) in the source list, each
 * source's title a hyperlink to its URL, the check's marks shaded red, the check's closing line after the list.
 * Word carries every script as it is; a paragraph in a right-to-left script is laid out right to left.
 */
import {
  Bookmark,
  Document,
  ExternalHyperlink,
  HeadingLevel,
  InternalHyperlink,
  Packer,
  Paragraph,
  ShadingType,
  Table,
  TableCell,
  TableRow,
  TextRun,
  WidthType
} from "docx"
import { ReportText } from "@deep-research/core"
import * as Effect from "effect/Effect"
import * as ReportDocument from "./ReportDocument.js"

type Run = TextRun | ExternalHyperlink | InternalHyperlink | Bookmark

// Right to left only where it is: Word reads a run or paragraph without the setting as left to right.
const direction = (rightToLeft: boolean) => (rightToLeft ? { rightToLeft: true } : {})
const bidirectional = (rightToLeft: boolean) => (rightToLeft ? { bidirectional: true } : {})

const rtl = /[\p{Script=Arabic}\p{Script=Hebrew}\p{Script=Syriac}\p{Script=Thaana}\p{Script=Nko}]/u

/**
 * The report's language as Word's proofing takes it, under the kind of text it is written in: Word reads East Asian
 * and right-to-left text under settings of their own, and the rest (Latin, Cyrillic, Greek, ...) under the first.
 */
const languageOf = (document: ReportDocument.ReportDocument) => {
  const tag = ReportText.languageTag(document.language)
  if (tag === undefined) return {}
  const primary = tag.split("-")[0]?.toLowerCase() ?? ""
  const kind = ["zh", "ja", "ko"].includes(primary)
    ? "eastAsia"
    : ["ar", "he", "fa", "ur", "yi"].includes(primary)
      ? "bidirectional"
      : "value"
  return { language: { [kind]: tag } }
}

const headings = [
  HeadingLevel.HEADING_1,
  HeadingLevel.HEADING_2,
  HeadingLevel.HEADING_3,
  HeadingLevel.HEADING_4,
  HeadingLevel.HEADING_5,
  HeadingLevel.HEADING_6
] as const

const runsOf = (spans: ReadonlyArray<ReportDocument.Span>, rightToLeft: boolean): Array<Run> =>
  spans.flatMap((span): Array<Run> => {
    switch (span._tag) {
      case "Text":
        return [new TextRun({ text: span.text, bold: span.strong, italics: span.emphasis, ...direction(rightToLeft) })]
      case "Code":
        return [new TextRun({ text: span.text, font: "Consolas" })]
      case "Link":
        return [
          new ExternalHyperlink({
            link: span.url,
            children: [new TextRun({ text: span.text, style: "Hyperlink", ...direction(rightToLeft) })]
          })
        ]
      case "Mark":
        return [
          new TextRun({
            text: span.text,
            bold: true,
            italics: true,
            color: "8A1010",
            shading: { type: ShadingType.CLEAR, fill: "FFE0E0", color: "auto" },
            ...direction(rightToLeft)
          })
        ]
      case "Cite":
        return [
          new TextRun({ text: "[", ...direction(rightToLeft) }),
          ...span.numbers.flatMap((n, i) => [
            ...(i === 0 ? [] : [new TextRun({ text: ", ", ...direction(rightToLeft) })]),
            new InternalHyperlink({
              anchor: `source-${n}`,
              children: [new TextRun({ text: String(n), style: "Hyperlink" })]
            })
          ]),
          new TextRun({ text: "]", ...direction(rightToLeft) })
        ]
    }
  })

const paragraph = (
  inline: ReportDocument.Inline,
  options: { readonly heading?: (typeof headings)[number]; readonly prefix?: string; readonly indent?: number } = {}
): Paragraph => {
  const rightToLeft = rtl.test(inline.markdown)
  return new Paragraph({
    children: [
      ...(options.prefix === undefined ? [] : [new TextRun({ text: options.prefix, ...direction(rightToLeft) })]),
      ...runsOf(inline.spans, rightToLeft)
    ],
    ...bidirectional(rightToLeft),
    ...(options.heading === undefined ? {} : { heading: options.heading }),
    ...(options.indent === undefined ? {} : { indent: { start: options.indent, hanging: 360 } }),
    spacing: { after: 120 }
  })
}

const blockOf = (block: ReportDocument.Block): Array<Paragraph | Table> => {
  switch (block._tag) {
    case "Heading":
      return [paragraph(block.inline, { heading: headings[block.level - 1] ?? HeadingLevel.HEADING_6 })]
    case "Paragraph":
      return [paragraph(block.inline)]
    case "List":
      return block.items.map((item, i) =>
        paragraph(item, { prefix: block.ordered ? `${block.start + i}.\t` : "•\t", indent: 720 })
      )
    case "Quote":
      return block.paragraphs.map((p) => paragraph(p, { indent: 720 }))
    case "Code":
      return block.text.split("\n").map(
        (line) =>
          new Paragraph({
            children: [new TextRun({ text: line, font: "Consolas", size: 18 })],
            shading: { type: ShadingType.CLEAR, fill: "F3F4F7", color: "auto" },
            spacing: { after: 0 }
          })
      )
    case "Table":
      return [
        new Table({
          width: { size: 100, type: WidthType.PERCENTAGE },
          rows: [block.head, ...block.rows].map(
            (row, r) =>
              new TableRow({
                tableHeader: r === 0,
                children: row.map(
                  (cell) =>
                    new TableCell({
                      children: [
                        new Paragraph({
                          children: runsOf(
                            r === 0
                              ? cell.spans.map((s) => (s._tag === "Text" ? { ...s, strong: true } : s))
                              : cell.spans,
                            rtl.test(cell.markdown)
                          )
                        })
                      ]
                    })
                )
              })
          )
        })
      ]
    case "Rule":
      return [
        new Paragraph({ children: [], border: { bottom: { style: "single", size: 6, color: "CCD0D8", space: 1 } } })
      ]
  }
}

const sourceEntry = (source: ReportDocument.SourceEntry): Paragraph => {
  const work = ReportDocument.describe(source)
  const rightToLeft = rtl.test(source.title)
  return new Paragraph({
    children: [
      new Bookmark({ id: `source-${source.number}`, children: [new TextRun({ text: `${source.number}.\t` })] }),
      source.link === undefined
        ? new TextRun({ text: `${source.title} (${source.url})`, ...direction(rightToLeft) })
        : new ExternalHyperlink({
            link: source.link,
            children: [new TextRun({ text: source.title, style: "Hyperlink", ...direction(rightToLeft) })]
          }),
      ...(work === "" ? [] : [new TextRun({ text: ` — ${work}`, italics: true, color: "556070" })])
    ],
    ...bidirectional(rightToLeft),
    indent: { start: 720, hanging: 720 },
    spacing: { after: 80 }
  })
}

/** The DOCX of a report, under its source list's heading. */
export const render = (document: ReportDocument.ReportDocument, heading: string): Effect.Effect<Uint8Array> => {
  const body = document.blocks.flatMap(blockOf)
  const sources =
    document.sources.length === 0
      ? []
      : [
          paragraph(ReportDocument.inline(heading, new Set()), { heading: HeadingLevel.HEADING_2 }),
          ...document.sources.map(sourceEntry)
        ]
  const check =
    document.check.line === undefined
      ? []
      : [
          blockOf({ _tag: "Rule" }),
          [
            new Paragraph({
              children: [new TextRun({ text: document.check.line, italics: true, color: "556070" })],
              ...bidirectional(rtl.test(document.check.line))
            })
          ]
        ].flat()
  const docx = new Document({
    creator: "deep-research",
    title: document.title,
    description: document.query,
    styles: { default: { document: { run: { font: "Calibri", size: 22, ...languageOf(document) } } } },
    sections: [{ children: [...body, ...sources, ...check] }]
  })
  return Effect.promise(() => Packer.toBuffer(docx)).pipe(Effect.map((buffer) => new Uint8Array(buffer)))
}
