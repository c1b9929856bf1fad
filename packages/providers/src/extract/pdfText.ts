/**
 * PDF to text with pdfjs (legacy build, which runs on Node 20). It runs in-process: pdfjs falls back to its "fake
 * worker" on the same thread, no canvas or font loading is needed to read text, and `isEvalSupported` is off because
 * the document is untrusted.
 */

/** The text of a PDF document, and its title when the document states one. */
export interface PdfText {
  readonly title: string
  readonly content: string
  readonly pages: number
}

const pageText = (items: ReadonlyArray<object>): string => {
  let text = ""
  for (const item of items) {
    // marked-content items carry no text
    if (!("str" in item) || typeof item.str !== "string") continue
    text += item.str
    text += "hasEOL" in item && item.hasEOL === true ? "\n" : item.str !== "" ? " " : ""
  }
  return text
    .replace(/[ \t]+\n/g, "\n")
    .replace(/[ \t]{2,}/g, " ")
    .trim()
}

/** Reads the text of every page, pages separated by blank lines. Rejects on a document pdfjs cannot open. */
export const pdfToText = async (data: Uint8Array): Promise<PdfText> => {
  const pdfjs = await import("pdfjs-dist/legacy/build/pdf.mjs")
  // pdfjs takes ownership of (detaches) the buffer it is given, so it gets a copy.
  const task = pdfjs.getDocument({
    data: new Uint8Array(data),
    isEvalSupported: false,
    useWorkerFetch: false,
    disableFontFace: true,
    useSystemFonts: false,
    verbosity: 0
  })
  const document = await task.promise
  try {
    const pages: Array<string> = []
    for (let n = 1; n <= document.numPages; n++) {
      const page = await document.getPage(n)
      const content = await page.getTextContent()
      pages.push(pageText(content.items))
      page.cleanup()
    }
    const metadata = await document.getMetadata().catch(() => undefined)
    const info: unknown = metadata?.info
    const title =
      typeof info === "object" && info !== null && "Title" in info && typeof info.Title === "string" ? info.Title : ""
    return { title: title.trim(), content: pages.filter((p) => p !== "").join("\n\n"), pages: document.numPages }
  } finally {
    await task.destroy()
  }
}
