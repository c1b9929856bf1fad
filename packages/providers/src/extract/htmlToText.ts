/**
 * HTML to markdown-like text: the main content is found with Readability over a linkedom document (no browser, no
 * jsdom) and written out with turndown, so headings, lists and links survive as markdown.
 */
import { Readability } from "@mozilla/readability"
import { parseHTML } from "linkedom"
import TurndownService from "turndown"

/** The readable part of an HTML page. */
export interface ReadableText {
  readonly title: string
  readonly content: string
}

const turndown = new TurndownService({
  headingStyle: "atx",
  codeBlockStyle: "fenced",
  bulletListMarker: "-",
  emDelimiter: "_"
})
// Media and forms carry no text worth reading; scripts and styles must never reach a prompt.
turndown.remove(["script", "style", "noscript", "iframe", "object", "embed", "form", "button", "svg", "canvas"])

const collapseBlankLines = (text: string): string =>
  text
    .replace(/\r\n?/g, "\n")
    .replace(/[ \t]+\n/g, "\n")
    .replace(/\n{3,}/g, "\n\n")
    .trim()

const absolutize = (value: string, base: string | undefined): string => {
  if (base === undefined) return value
  try {
    return new URL(value, base).href
  } catch {
    return value
  }
}

const parse = (html: string, url: string | undefined) => {
  const { document } = parseHTML(html)
  for (const link of document.querySelectorAll("a[href]")) {
    const href = link.getAttribute("href")
    if (href !== null) link.setAttribute("href", absolutize(href, url))
  }
  for (const image of document.querySelectorAll("img[src]")) {
    const src = image.getAttribute("src")
    if (src !== null) image.setAttribute("src", absolutize(src, url))
  }
  return document
}

/**
 * The main content of an HTML document as markdown-like text. Relative links are resolved against `url` when given.
 * Falls back to the whole body when Readability finds no article.
 */
export const htmlToText = (html: string, url?: string | undefined): ReadableText => {
  const document = parse(html, url)
  const documentTitle = (document.querySelector("title")?.textContent ?? "").trim()
  const article = new Readability(document, { charThreshold: 200 }).parse()
  const articleHtml = article?.content ?? ""
  const markdown = articleHtml.trim() === "" ? "" : collapseBlankLines(turndown.turndown(articleHtml))
  if (markdown !== "") {
    const title = (article?.title ?? "").trim()
    return { title: title !== "" ? title : documentTitle, content: markdown }
  }
  // Readability mutates the document it reads, so the fallback body comes from a fresh parse.
  const body = parse(html, url).querySelector("body")
  const content = body === null ? "" : collapseBlankLines(turndown.turndown(body.innerHTML))
  return { title: documentTitle, content }
}
