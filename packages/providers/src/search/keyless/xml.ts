/**
 * Reading the XML the keyless APIs answer with (arXiv's Atom feed, PubMed's `PubmedArticleSet`) without holding the
 * event loop: htmlparser2's streaming parser (linkedom's own, already installed) is fed a slice at a time, yielding to
 * the event loop between slices, into a small tree of plain elements; a document nested deeper than `maxDepth` is
 * refused as soon as the parser reaches that depth. A DOM parser would take a whole document in one synchronous call,
 * 4 s for 100,000 levels and 0.3 to 0.7 s for 2 MB of PubMed records here (BENCHMARKS.md, "Keyless XML"). Entities
 * declared in a DOCTYPE are not expanded. A body that is no XML document, or one cut short, is reported, not guessed at.
 */
import type { Errors } from "@deep-research/core"
import * as Effect from "effect/Effect"
import { Parser } from "htmlparser2"
import { unusable } from "./http.js"

/** The part of a parsed element this module reads. */
export interface Node {
  readonly name: string
  readonly textContent: string
  readonly getAttribute: (name: string) => string | null
  readonly getElementsByTagName: (name: string) => ReadonlyArray<Node>
  /** The element's own child elements. */
  readonly children: ReadonlyArray<Node>
}

class Element implements Node {
  readonly children: Array<Element> = []
  private readonly parts: Array<Element | string> = []
  constructor(
    readonly name: string,
    private readonly attributes: Readonly<Record<string, string>>
  ) {}
  append(part: Element | string): void {
    this.parts.push(part)
    if (typeof part !== "string") this.children.push(part)
  }
  get textContent(): string {
    return this.parts.map((part) => (typeof part === "string" ? part : part.textContent)).join("")
  }
  getAttribute(name: string): string | null {
    return Object.hasOwn(this.attributes, name) ? (this.attributes[name] ?? null) : null
  }
  getElementsByTagName(name: string): ReadonlyArray<Node> {
    const found: Array<Node> = []
    const stack: Array<Element> = [...this.children].reverse()
    while (stack.length > 0) {
      const next = stack.pop()
      if (next === undefined) break
      if (next.name === name) found.push(next)
      for (let i = next.children.length - 1; i >= 0; i--) {
        const child = next.children[i]
        if (child !== undefined) stack.push(child)
      }
    }
    return found
  }
}

/** The deepest nesting read; the keyless APIs' documents go about ten levels deep. */
export const maxDepth = 64

/** Characters parsed between two yields to the event loop. */
export const sliceCharacters = 32 * 1024

/** Why a document was not read. */
type Refusal = { readonly kind: "depth" } | { readonly kind: "not-xml" } | { readonly kind: "cut" }

/** A parse in progress: the tree so far, and whether it must stop. */
interface Build {
  readonly parser: Parser
  readonly result: () => Element | Refusal
}

/** Records read as each closes and let go (`parseEach`): their names, and what takes each. */
interface Records {
  readonly names: ReadonlySet<string>
  readonly take: (record: Element) => void
}

const build = (root: string, records?: Records): Build => {
  const top = new Element("#document", {})
  const stack: Array<Element> = [top]
  let refusal: Refusal | undefined
  let closed = false
  const parser = new Parser(
    {
      onopentag(name, attributes) {
        if (refusal !== undefined) return
        if (stack.length > maxDepth) {
          refusal = { kind: "depth" }
          // The parser's own stack of open elements grows by shifting an array: stop it here, not a slice later.
          parser.pause()
          return
        }
        const element = new Element(name, attributes)
        // A record (a child of the root, when records are read one by one) is kept out of the tree: taken when it
        // closes, it is garbage right after, so a large answer is never one large tree in memory.
        if (!(stack.length === 2 && records?.names.has(name) === true)) stack[stack.length - 1]?.append(element)
        stack.push(element)
      },
      ontext(text) {
        if (refusal === undefined && stack.length > 1) stack[stack.length - 1]?.append(text)
      },
      onclosetag(name, isImplied) {
        if (refusal !== undefined || stack.length <= 1) return
        const element = stack.pop()
        if (stack.length === 2 && element !== undefined && records?.names.has(element.name) === true) {
          records.take(element)
        }
        if (stack.length === 1) closed = name === root && !isImplied
      }
    },
    { xmlMode: true, decodeEntities: true }
  )
  return {
    parser,
    result: () => {
      if (refusal !== undefined) return refusal
      const element = top.children[0]
      if (element === undefined || element.name !== root || top.children.length !== 1) return { kind: "not-xml" }
      return closed ? element : { kind: "cut" }
    }
  }
}

const looksLikeXml = (text: string, root: string): boolean => {
  const trimmed = text.trim()
  return trimmed.startsWith("<") && trimmed.endsWith(`</${root}>`)
}

const isRefusal = (value: Element | Refusal): value is Refusal => !(value instanceof Element)

/**
 * The root element of an XML text, or `undefined` when the text is not XML with that root or was cut short; fails when
 * it nests deeper than `maxDepth`. The text is parsed a slice at a time, the event loop served between slices.
 */
export const parse = (
  text: string,
  root: string,
  provider: string
): Effect.Effect<Node | undefined, Errors.ProviderQuotaExhausted> => parseWith(text, root, provider, undefined)

/**
 * `parse` for an answer made of records (PubMed's articles, arXiv's entries): each child of the root named in `names`
 * is given to `f` as soon as it closes, and let go, so that a large answer is never a large tree held at once (whose
 * garbage collection, all in one turn, held the event loop over 100 ms for 2 MB of PubMed records). Returns what `f`
 * gave, in document order, and the root without those records; `undefined` as `parse`.
 */
export const parseEach = <B>(
  text: string,
  root: string,
  provider: string,
  names: ReadonlyArray<string>,
  f: (record: Node) => ReadonlyArray<B>
): Effect.Effect<
  { readonly root: Node; readonly items: ReadonlyArray<B> } | undefined,
  Errors.ProviderQuotaExhausted
> =>
  Effect.suspend(() => {
    const items: Array<B> = []
    const records: Records = { names: new Set(names), take: (record) => items.push(...f(record)) }
    return Effect.map(parseWith(text, root, provider, records), (node) =>
      node === undefined ? undefined : { root: node, items }
    )
  })

const parseWith = (
  text: string,
  root: string,
  provider: string,
  records: Records | undefined
): Effect.Effect<Node | undefined, Errors.ProviderQuotaExhausted> =>
  Effect.gen(function* () {
    if (!looksLikeXml(text, root)) return undefined
    const parsing = build(root, records)
    for (let offset = 0; offset < text.length; offset += sliceCharacters) {
      parsing.parser.write(text.slice(offset, offset + sliceCharacters))
      const sofar = parsing.result()
      if (isRefusal(sofar) && sofar.kind === "depth") break
      if (offset + sliceCharacters < text.length) yield* nextTurn
    }
    parsing.parser.end()
    const result = parsing.result()
    if (!isRefusal(result)) return result
    if (result.kind === "depth") {
      return yield* unusable(
        provider,
        `${provider}'s answer nests elements deeper than ${maxDepth} levels; it was not read`
      )
    }
    return undefined
  })

/**
 * The same for a short text (an error answer), in one call: no more than one slice is parsed, so the event loop is not
 * held longer than between two slices of `parse`. Longer texts, and those nested too deep, are `undefined`.
 */
export const parseShort = (text: string, root: string): Node | undefined => {
  if (text.length > sliceCharacters || !looksLikeXml(text, root)) return undefined
  const parsing = build(root)
  parsing.parser.end(text)
  const result = parsing.result()
  return isRefusal(result) ? undefined : result
}

/** Items handled between two yields to the event loop by `mapYielding`. */
export const itemsPerTurn = 10

/** `f` over `items`, the event loop served every `itemsPerTurn` items (records of a large answer, each read alone). */
export const mapYielding = <A, B>(items: ReadonlyArray<A>, f: (item: A) => ReadonlyArray<B>): Effect.Effect<Array<B>> =>
  Effect.gen(function* () {
    const out: Array<B> = []
    for (let i = 0; i < items.length; i++) {
      if (i > 0 && i % itemsPerTurn === 0) yield* nextTurn
      const item = items[i]
      if (item !== undefined) out.push(...f(item))
    }
    return out
  })

/** A turn of the event loop: timers, I/O and other fibers run before the parse goes on. */
export const nextTurn: Effect.Effect<void> = Effect.async<void>((resume) => {
  const handle = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(handle))
})

/** The elements of a name inside a node, in document order. */
export const all = (node: Node, name: string): ReadonlyArray<Node> => node.getElementsByTagName(name)

/** The first element of a name inside a node. */
export const first = (node: Node, name: string): Node | undefined => all(node, name)[0]

/** The node's own child elements of a name (not those deeper down). */
export const children = (node: Node, name: string): ReadonlyArray<Node> =>
  node.children.filter((child) => child.name === name)

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
