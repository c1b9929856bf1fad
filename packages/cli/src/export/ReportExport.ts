/**
 * A stored session's report in the format a reader hands on: Markdown, HTML, PDF, DOCX or JSON, each with its
 * citations linked to the source list, the sources' URLs linked, the citation check's marks shown and its closing line
 * kept. The `export` command and the HTTP API's export route both render through here.
 */
import type { Session } from "@deep-research/core"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as ReportHtml from "../http/ReportHtml.js"
import * as ReportDocument from "./ReportDocument.js"
import * as ReportDocx from "./ReportDocx.js"
import * as ReportJson from "./ReportJson.js"
import * as ReportMarkdown from "./ReportMarkdown.js"
import * as ReportPdf from "./ReportPdf.js"

/** The formats, as `--format` and `?format=` name them. */
export const formats = ["md", "html", "pdf", "docx", "json"] as const
export type Format = (typeof formats)[number]

/** Whether a name is a format. */
export const isFormat = (name: string): name is Format => formats.some((format) => format === name)

/** What each format is sent as. */
export const contentTypes: Readonly<Record<Format, string>> = {
  md: "text/markdown; charset=utf-8",
  html: "text/html; charset=utf-8",
  pdf: "application/pdf",
  docx: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
  json: "application/json; charset=utf-8"
}

/** Formats that are text, written to standard output unless a file is named. */
export const isText = (format: Format): boolean => format !== "pdf" && format !== "docx"

/** The export cannot be made: the session has no report yet, or its script cannot be rendered in this format. */
export class ExportRefused extends Data.TaggedError("ExportRefused")<{ readonly message: string }> {}

/** An export: its bytes and how to send or save them. */
export interface Exported {
  readonly body: Uint8Array
  readonly contentType: string
  /** The file name it is saved under by default: `deep-research-<id>.<format>`. */
  readonly filename: string
}

/** The file an export of a session is saved as by default. */
export const filenameOf = (sessionId: string, format: Format): string => `deep-research-${sessionId}.${format}`

const encoder = new TextEncoder()

/** The source list's heading as the report wrote it. */
const headingOf = (markdown: string): string => ReportDocument.sourcesHeadingOf(markdown)

const bytesOf = (
  session: Session.Session,
  document: ReportDocument.ReportDocument,
  format: Format
): Effect.Effect<Uint8Array, ExportRefused> => {
  const markdown = session.report?.markdown ?? ""
  switch (format) {
    case "md":
      return Effect.succeed(encoder.encode(ReportMarkdown.render(document, markdown)))
    case "html":
      return Effect.succeed(encoder.encode(session.report === undefined ? "" : ReportHtml.page(session.report)))
    case "json":
      return Effect.succeed(encoder.encode(`${JSON.stringify(ReportJson.render(document), null, 2)}\n`))
    case "docx":
      return ReportDocx.render(document, headingOf(markdown))
    case "pdf": {
      const refusal = ReportPdf.refusal(document, headingOf(markdown))
      return refusal === undefined
        ? ReportPdf.render(document, headingOf(markdown))
        : Effect.fail(new ExportRefused({ message: refusal }))
    }
  }
}

/** The session's report in `format`; refused when it has no report yet, or when the format cannot render it. */
export const render = (session: Session.Session, format: Format): Effect.Effect<Exported, ExportRefused> => {
  const document = ReportDocument.fromSession(session)
  if (document === undefined) {
    return Effect.fail(
      new ExportRefused({ message: `Session ${session.id} has no report yet (it is ${session.status}).` })
    )
  }
  return Effect.map(bytesOf(session, document, format), (body) => ({
    body,
    contentType: contentTypes[format],
    filename: filenameOf(session.id, format)
  }))
}

/** The JSON Schema of the JSON export (draft 2020-12). */
export const jsonSchema = (): string => ReportJson.schemaText()

/** The `$id` of that schema, which every JSON export names as its `$schema`. */
export const jsonSchemaId = ReportJson.schemaId
