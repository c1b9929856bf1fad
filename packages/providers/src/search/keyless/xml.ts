/**
 * Reading the XML the keyless APIs answer with (arXiv's Atom feed, PubMed's `PubmedArticleSet`) through linkedom's
 * `DOMParser`, already a dependency for HTML: elements by their qualified name (`arxiv:doi`), their text with
 * whitespace collapsed, and attributes. A body that is no XML document, or one cut short, is reported, not guessed at.
 */
import { DOMParser } from "linkedom"

/** The part of a parsed element this module reads. */
export interface Node {
  readonly textContent: string | null
  readonly getAttribute: (name: string) => string | null
  readonly getElementsByTagName: (name: string) => ArrayLike<Node>
}

/**
 * The root element of an XML text, or `undefined` when the text is not XML with that root or was cut short (the parser
 * is lenient: a document that does not end with its root's closing tag is taken as cut).
 */
export const parse = (text: string, root: string): Node | undefined => {
  const trimmed = text.trim()
  if (!trimmed.startsWith("<") || !trimmed.endsWith(`</${root}>`)) return undefined
  const document = new DOMParser().parseFromString(text, "text/xml")
  const element = document.documentElement
  return element !== null && element.tagName === root ? element : undefined
}

/** The elements of a name inside a node, in document order. */
export const all = (node: Node, name: string): ReadonlyArray<Node> => Array.from(node.getElementsByTagName(name))

/** The first element of a name inside a node. */
export const first = (node: Node, name: string): Node | undefined => all(node, name)[0]

/** An element's text, whitespace collapsed; empty when there is none. */
export const text = (node: Node | undefined): string => (node?.textContent ?? "").replace(/\s+/g, " ").trim()

/** The text of the first element of a name, or `undefined` when it is absent or empty. */
export const textOf = (node: Node, name: string): string | undefined => {
  const value = text(first(node, name))
  return value === "" ? undefined : value
}

/** An attribute, or `undefined` when absent or empty. */
export const attribute = (node: Node, name: string): string | undefined => {
  const value = node.getAttribute(name)
  return value === null || value.trim() === "" ? undefined : value.trim()
}
