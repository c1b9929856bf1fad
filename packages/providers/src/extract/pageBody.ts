/**
 * How the HTTP extractor reads a fetched body into a page: by its declared type or, without one, by sniffing; HTML
 * and plain text decoded in their charset, PDFs through `pdfText.ts`; a page with no readable text fails.
 */
import * as Effect from "effect/Effect"
import { Errors, Source } from "@deep-research/core"
import { contentKinds, FetchFailed, type Kind, type Settings } from "./extractorSettings.js"
import { htmlToText } from "./htmlToText.js"
import { pdfToText } from "./pdfText.js"

const sniffKind = (body: Buffer): Kind | undefined => {
  const head = body.subarray(0, 1024).toString("latin1")
  if (head.startsWith("%PDF-")) return "pdf"
  if (/<!doctype html|<html[\s>]/i.test(head)) return "html"
  if (body.includes(0)) return undefined
  return "text"
}

const sniffHtmlCharset = (body: Buffer): string | undefined =>
  /<meta[^>]+charset\s*=\s*["']?([\w-]+)/i.exec(body.subarray(0, 2048).toString("latin1"))?.[1]

const decodeText = (body: Buffer, charset: string | undefined): string => {
  try {
    return new TextDecoder(charset ?? "utf-8").decode(body)
  } catch {
    return new TextDecoder("utf-8").decode(body)
  }
}

const titleOfText = (text: string, url: URL): string => {
  const heading = /^#\s+(.+)$/m.exec(text.slice(0, 2000))?.[1]?.trim()
  if (heading !== undefined && heading !== "") return heading
  const segment = decodeURIComponent(
    url.pathname
      .split("/")
      .filter((s) => s !== "")
      .pop() ?? ""
  )
  return segment !== "" ? segment : url.hostname
}

/** The page a body holds, or why it could not be read. */
export const readBody = (
  requested: string,
  url: URL,
  mime: string | undefined,
  charset: string | undefined,
  body: Buffer,
  settings: Settings
): Effect.Effect<Source.ExtractedPage, Errors.UrlBlocked | FetchFailed> =>
  Effect.gen(function* () {
    const kind = mime !== undefined ? contentKinds.get(mime) : sniffKind(body)
    if (kind === undefined || (kind === "pdf" && !settings.pdf)) {
      return yield* new Errors.UrlBlocked({ url: requested, reason: "the content is not text, HTML or PDF" })
    }
    const contentType = mime ?? (kind === "html" ? "text/html" : kind === "pdf" ? "application/pdf" : "text/plain")
    const read: { title: string; content: string } =
      kind === "pdf"
        ? yield* Effect.tryPromise({
            try: () => pdfToText(body),
            catch: () => new FetchFailed({ url: requested, reason: "the PDF could not be read" })
          })
        : kind === "html"
          ? htmlToText(decodeText(body, charset ?? sniffHtmlCharset(body)), url.href)
          : (() => {
              const text = decodeText(body, charset).trim()
              return { title: titleOfText(text, url), content: text }
            })()
    if (read.content.trim() === "") {
      return yield* new FetchFailed({ url: requested, reason: "the page has no readable text" })
    }
    return new Source.ExtractedPage({
      url: requested,
      title: read.title !== "" ? read.title : titleOfText("", url),
      content: read.content,
      contentType
    })
  })
