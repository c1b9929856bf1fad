/**
 * A researcher's source ledger: every source it was shown, numbered from 1 in the order it first saw them, with what
 * it last read of each. Fetched texts are placed here (a duplicate, a known source of earlier rounds shown again, a
 * fuller page of a source already held, or a new source), their fetch-time summaries settled, and a turn's results
 * rendered as the numbered blocks the model reads.
 */
import * as Novelty from "../../Novelty.js"
import * as Untrusted from "../../prompts/untrusted.js"
import { qualityOfUrl } from "./sourceQuality.js"
import { type Novelty as NoveltyTag, Source, type SourceSummary, type Work } from "../../Source.js"

/** A source as the ledger holds it: its number, what was last read of it, and where it came from. */
export interface Entry {
  readonly number: number
  readonly id: string
  /** New in this unit, or a source of earlier rounds found again (`known`). */
  readonly isNew: boolean
  readonly known: Source | undefined
  readonly url: string
  title: string
  readonly provider: string
  readonly publishedDate: string | undefined
  readonly work: Work | undefined
  /** What the researcher is shown: the fetch-time summary, or the raw text. */
  content: string
  summary: SourceSummary | undefined
  rawLength: number
  readonly novelty: NoveltyTag
  readonly relatedTo: number | undefined
  readonly retrievedAt: number
}

/** A text fetched by a search or an extraction. */
export interface Candidate {
  readonly url: string
  readonly title: string
  readonly raw: string
  readonly provider: string
  readonly publishedDate: string | undefined
  /** The bibliographic facts a scholarly search gave. */
  readonly work?: Work | undefined
}

/** A raw text placed in the ledger, waiting for its fetch-time summary. */
export interface Pending {
  readonly entry: Entry
  readonly url: string
  readonly title: string
  readonly raw: string
}

/** A fetch-time summary, or the raw text when there is none. */
export interface Summarised {
  readonly content: string
  readonly summary: SourceSummary | undefined
}

/** One line of a tool result. */
export type Line =
  | { readonly _tag: "Source"; readonly number: number; readonly origin: "new" | "known" | "page" | "library" }
  | { readonly _tag: "Duplicate"; readonly number: number; readonly reason: Novelty.DuplicateReason }
  | { readonly _tag: "Note"; readonly text: string }

/** A source as the researcher saw it, under its number. */
export interface SeenSource {
  /** The citation number the researcher was shown, from 1. */
  readonly number: number
  /** The source: a new one of this unit, or a known one found again. */
  readonly source: Source
  readonly isNew: boolean
  readonly novelty: NoveltyTag
  /** What the researcher last read of it (a full page it extracted can replace a known source's summary). */
  readonly content: string
}

/** The ledger of one research unit. */
export interface Ledger {
  /** Places one fetched text; a text to summarise is added to `pending`. */
  readonly place: (candidate: Candidate, kind: "search" | "extract", pending: Array<Pending>) => Line
  /** Records the summaries of the pending texts (in their order); returns the new entries, each once. */
  readonly settle: (pending: ReadonlyArray<Pending>, summaries: ReadonlyArray<Summarised>) => ReadonlyArray<Entry>
  /** A tool result's text from its lines. */
  readonly render: (lines: ReadonlyArray<Line>) => string
  /** Sets when the current turn's results came back: the retrieval time of the sources it adds. */
  readonly fetchedAt: (millis: number) => void
  /** Every source shown, in number order. */
  readonly seen: () => ReadonlyArray<SeenSource>
  /** Numbers the library's sources first, before any search, as the lines that show them. */
  readonly preload: (library: ReadonlyArray<Source>) => ReadonlyArray<Line>
}

/** A summary with its excerpts, as the researcher reads it. */
export const formatSummary = (summary: SourceSummary): string =>
  summary.excerpts.length === 0
    ? summary.summary
    : `${summary.summary}\n\nKey excerpts:\n${summary.excerpts.map((excerpt) => `- "${excerpt}"`).join("\n")}`

const tagOf = (entry: Entry): string =>
  entry.novelty === "new"
    ? "NEW"
    : entry.novelty === "related"
      ? `RELATED${entry.relatedTo === undefined ? "" : ` to [${entry.relatedTo}]`}`
      : `DUPLICATE${entry.relatedTo === undefined ? "" : ` of [${entry.relatedTo}]`}`

// A page's title is web text too: it appears only inside the block's attributes, never in our own lines.
const renderEntry = (entry: Entry, origin: "new" | "known" | "page" | "library"): string => {
  const heading =
    origin === "known"
      ? `[${entry.number}] DUPLICATE (known from earlier research)`
      : origin === "library"
        ? `[${entry.number}] FROM THE LIBRARY (session ${entry.known?.origin?.sessionId ?? "unknown"})`
        : origin === "page"
          ? `[${entry.number}] FULL PAGE`
          : `[${entry.number}] ${tagOf(entry)}`
  return `${heading}\n${Untrusted.wrap(
    {
      kind: entry.summary === undefined ? "page text" : "page summary",
      label: `[${entry.number}]`,
      url: entry.url,
      title: entry.title
    },
    entry.content
  )}`
}

const renderDuplicate = (number: number, reason: Novelty.DuplicateReason): string =>
  `[${number}] already shown; the same ${
    reason === "content" ? "text" : reason === "title" ? "title" : "page"
  } came back again.`

// =============================================================================
// The ledger's book
// =============================================================================

/** What the ledger's functions share: the entries in number order, looked up by id and URL, and the index. */
interface Book {
  readonly directiveId: string
  readonly index: Novelty.Index
  readonly knownById: Map<string, Source>
  readonly entries: Array<Entry>
  readonly entryById: Map<string, Entry>
  readonly entryByUrl: Map<string, Entry>
  newCount: number
  fetchedAt: number
}

const addEntry = (book: Book, fields: Omit<Entry, "number" | "retrievedAt"> & { readonly retrievedAt?: number }) => {
  const entry: Entry = { ...fields, number: book.entries.length + 1, retrievedAt: fields.retrievedAt ?? book.fetchedAt }
  book.entries.push(entry)
  book.entryById.set(entry.id, entry)
  book.entryByUrl.set(Novelty.normalizeUrl(entry.url), entry)
  return entry
}

const entryOfKnown = (book: Book, source: Source): Entry =>
  book.entryById.get(source.id) ??
  addEntry(book, {
    id: source.id,
    isNew: false,
    known: source,
    url: source.url,
    title: source.title,
    provider: source.provider,
    publishedDate: source.publishedDate,
    work: source.work,
    content: source.content,
    summary: source.summary,
    rawLength: source.rawLength,
    novelty: "duplicate",
    relatedTo: undefined,
    retrievedAt: source.retrievedAt
  })

// A fuller page of a source already held replaces what was read of it.
const fullerPage = (entry: Entry, candidate: Candidate, pending: Array<Pending>): Line => {
  pending.push({ entry, url: candidate.url, title: candidate.title || entry.title, raw: candidate.raw })
  return { _tag: "Source", number: entry.number, origin: "page" }
}

/** A text the index took for a duplicate: of one of the unit's own sources, or of a known one shown again. */
const placeDuplicate = (
  book: Book,
  candidate: Candidate,
  kind: "search" | "extract",
  verdict: { readonly of: string; readonly reason: Novelty.DuplicateReason },
  pending: Array<Pending>
): Line => {
  // Own sources are found by URL before, so here they can only match by title or text.
  const own = book.entryById.get(verdict.of)
  if (own !== undefined) return { _tag: "Duplicate", number: own.number, reason: verdict.reason }
  const known = book.knownById.get(verdict.of)
  if (known === undefined) return { _tag: "Note", text: `A duplicate of a source already held: ${candidate.url}` }
  const entry = entryOfKnown(book, known)
  if (kind === "extract" && verdict.reason === "url" && candidate.raw.length > entry.rawLength) {
    return fullerPage(entry, candidate, pending)
  }
  return { _tag: "Source", number: entry.number, origin: "known" }
}

const place = (book: Book, candidate: Candidate, kind: "search" | "extract", pending: Array<Pending>): Line => {
  const seen = book.entryByUrl.get(Novelty.normalizeUrl(candidate.url))
  if (seen !== undefined) {
    if (kind === "extract" && candidate.raw.length > seen.rawLength) return fullerPage(seen, candidate, pending)
    return { _tag: "Duplicate", number: seen.number, reason: "url" }
  }
  const id = `${book.directiveId}-s${book.newCount + 1}`
  const verdict = book.index.insert({ id, url: candidate.url, title: candidate.title, text: candidate.raw })
  if (verdict._tag === "Duplicate") return placeDuplicate(book, candidate, kind, verdict, pending)
  book.newCount++
  const nearest = verdict.nearest === undefined ? undefined : book.entryById.get(verdict.nearest)
  const entry = addEntry(book, {
    id,
    isNew: true,
    known: undefined,
    url: candidate.url,
    title: candidate.title,
    provider: candidate.provider,
    publishedDate: candidate.publishedDate,
    work: candidate.work,
    content: candidate.raw,
    summary: undefined,
    rawLength: candidate.raw.length,
    novelty: verdict.novelty,
    relatedTo: nearest?.number
  })
  pending.push({ entry, url: candidate.url, title: candidate.title, raw: candidate.raw })
  return { _tag: "Source", number: entry.number, origin: "new" }
}

const settle: Ledger["settle"] = (pending, summaries) => {
  pending.forEach((item, i) => {
    const result = summaries[i]
    if (result === undefined) return
    item.entry.content = result.content
    item.entry.summary = result.summary
    item.entry.rawLength = item.raw.length
    if (item.title !== "") item.entry.title = item.title
  })
  return pending
    .filter((item, i) => item.entry.isNew && pending.findIndex((p) => p.entry === item.entry) === i)
    .map((item) => item.entry)
}

const render = (book: Book, lines: ReadonlyArray<Line>): string =>
  lines
    .map((line) => {
      switch (line._tag) {
        case "Note":
          return line.text
        case "Duplicate":
          return renderDuplicate(line.number, line.reason)
        case "Source": {
          const entry = book.entries[line.number - 1]
          return entry === undefined ? "" : renderEntry(entry, line.origin)
        }
      }
    })
    .filter((text) => text !== "")
    .join("\n\n")

// Every field is typed and was checked where it came from (the summary is a decoded `SourceSummary`): a Source is
// not validated again.
const sourceOf = (book: Book, entry: Entry): Source =>
  entry.known ??
  new Source(
    {
      id: entry.id,
      url: entry.url,
      title: entry.title,
      content: entry.content,
      ...(entry.summary !== undefined ? { summary: entry.summary } : {}),
      provider: entry.provider,
      quality: qualityOfUrl(entry.url),
      ...(entry.publishedDate !== undefined ? { publishedDate: entry.publishedDate } : {}),
      retrievedAt: entry.retrievedAt,
      directiveId: book.directiveId,
      rawLength: entry.rawLength,
      ...(entry.work !== undefined ? { work: entry.work } : {})
    },
    true
  )

const seen = (book: Book): ReadonlyArray<SeenSource> =>
  book.entries.map((entry) => ({
    number: entry.number,
    isNew: entry.isNew,
    novelty: entry.novelty,
    content: entry.content,
    source: sourceOf(book, entry)
  }))

/** A ledger for one directive, over the sources of earlier rounds. */
export const make = (options: {
  readonly directiveId: string
  readonly knownSources: ReadonlyArray<Source>
  readonly novelty: Novelty.Options
  /** When the unit started: the retrieval time until a turn's results come back. */
  readonly now: number
}): Ledger => {
  const book: Book = {
    directiveId: options.directiveId,
    index: Novelty.make(options.novelty),
    knownById: new Map(),
    entries: [],
    entryById: new Map(),
    entryByUrl: new Map(),
    newCount: 0,
    fetchedAt: options.now
  }
  for (const source of options.knownSources) {
    book.knownById.set(source.id, source)
    book.index.add({ id: source.id, url: source.url, title: source.title, text: source.content })
  }
  return {
    place: (candidate, kind, pending) => place(book, candidate, kind, pending),
    settle,
    render: (lines) => render(book, lines),
    fetchedAt: (millis) => {
      book.fetchedAt = millis
    },
    seen: () => seen(book),
    preload: (library) =>
      library.map((source): Line => {
        if (!book.knownById.has(source.id)) {
          book.knownById.set(source.id, source)
          book.index.add({ id: source.id, url: source.url, title: source.title, text: source.content })
        }
        return { _tag: "Source", number: entryOfKnown(book, source).number, origin: "library" }
      })
  }
}
