/**
 * How the local corpus reads its folder: the files listed (hidden entries and links left out), each one's kind told by
 * its extension and its bytes, its readable text split into chunks (or taken from the cache when it did not change),
 * and all chunks put in one full-text index, with a report of what the pass read, rebuilt, removed and skipped.
 */
import { Errors } from "@deep-research/core"
import * as Effect from "effect/Effect"
import MiniSearch from "minisearch"
import * as crypto from "node:crypto"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { type Chunk, chunkText } from "./chunkText.js"
import { type CachedFile, loadCache, saveCache } from "./corpusCache.js"
import { htmlToText } from "../extract/htmlToText.js"
import { pdfToText } from "../extract/pdfText.js"

/** The options of a corpus with the defaults filled in, and the root resolved. */
export interface Settings {
  readonly root: string
  readonly name: string
  readonly cacheFile: string | undefined
  readonly chunkSize: number
  readonly chunkOverlap: number
  readonly pdf: boolean
  readonly maxFileBytes: number
  /** What a file's title and chunks pass before they are indexed or cached (secrets out); none leaves them. */
  readonly scrub?: ((text: string) => string) | undefined
}

/** One chunk in the index, by id `path#n`. */
export interface IndexedChunk {
  readonly id: string
  readonly file: string
  readonly n: number
  readonly url: string
  readonly title: string
  readonly heading: string
  readonly text: string
}

/** What one indexing pass did, by path relative to the root. */
export interface IndexReport {
  readonly files: number
  readonly chunks: number
  /** Files whose bytes were read (new, or changed in time or size). */
  readonly read: ReadonlyArray<string>
  /** Files whose chunks were rebuilt (new, or changed content). */
  readonly reindexed: ReadonlyArray<string>
  /** Files in the cache that no longer exist. */
  readonly removed: ReadonlyArray<string>
  readonly skipped: ReadonlyArray<{ readonly path: string; readonly reason: string }>
}

/** What one indexing pass built: the files as cached, their chunks, the search index over them, and the report. */
export interface State {
  readonly files: ReadonlyMap<string, CachedFile>
  readonly chunks: ReadonlyMap<string, IndexedChunk>
  readonly search: MiniSearch<IndexedChunk>
  readonly report: IndexReport
}

/** The kinds of documents the corpus reads. */
export type Kind = "markdown" | "text" | "html" | "pdf"

/** A file's kind by its extension; PDFs only when PDF reading is on. */
export const kindOf = (file: string, pdf: boolean): Kind | undefined => {
  switch (path.extname(file).toLowerCase()) {
    case ".md":
    case ".markdown":
      return "markdown"
    case ".txt":
      return "text"
    case ".html":
    case ".htm":
      return "html"
    case ".pdf":
      return pdf ? "pdf" : undefined
    default:
      return undefined
  }
}

/**
 * Relative paths (with forward slashes) of the regular files below the root, hidden entries excluded, and the
 * entries that cannot be files of the corpus (symbolic links, other special files) with the reason.
 */
const listFiles = async (
  settings: Settings
): Promise<{ readonly files: ReadonlyArray<string>; readonly passed: ReadonlyArray<Skipped> }> => {
  const found: Array<string> = []
  const passed: Array<Skipped> = []
  const relativeOf = (full: string) => path.relative(settings.root, full).split(path.sep).join("/")
  const walk = async (dir: string): Promise<void> => {
    const entries = await fs.readdir(dir, { withFileTypes: true })
    for (const entry of entries) {
      if (entry.name.startsWith(".") || entry.name === "node_modules") continue
      const full = path.join(dir, entry.name)
      if (entry.isDirectory()) await walk(full)
      else if (entry.isFile()) found.push(relativeOf(full))
      else if (entry.isSymbolicLink()) passed.push({ path: relativeOf(full), reason: "a symbolic link (not followed)" })
      else passed.push({ path: relativeOf(full), reason: "not a regular file" })
    }
  }
  await walk(settings.root)
  return { files: found.sort(), passed }
}

/** A file skipped, and why. */
interface Skipped {
  readonly path: string
  readonly reason: string
}

/**
 * Whether bytes are text: valid UTF-8 with no NUL and almost no control characters in their first 64 KB. A file is
 * indexed by what it holds, not by its name alone: a text file without an extension is read, random bytes named
 * `.txt` are not.
 */
export const looksLikeText = (bytes: Uint8Array): boolean => {
  const head = bytes.subarray(0, 65_536)
  if (head.includes(0)) return false
  let text: string
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(head.length < bytes.length ? trimPartial(head) : head)
  } catch {
    return false
  }
  const controls = text.match(/[\u0001-\u0008\u000e-\u001f\u007f]/g)?.length ?? 0
  return controls <= text.length / 100
}

/** Bytes cut at 64 KB may end inside a character: the partial one is left out. */
const trimPartial = (bytes: Uint8Array): Uint8Array => {
  let end = bytes.length
  for (let back = 1; back <= 3 && end - back >= 0; back++) {
    const byte = bytes[end - back] ?? 0
    if ((byte & 0xc0) === 0xc0) return bytes.subarray(0, end - back)
    if ((byte & 0x80) === 0) break
  }
  return bytes.subarray(0, end)
}

const firstHeading = (text: string): string | undefined => /^#\s+(.+)$/m.exec(text.slice(0, 4000))?.[1]?.trim()

/** The readable text and title of a file's bytes. */
export const readableText = async (
  kind: Kind,
  bytes: Uint8Array,
  relative: string
): Promise<{ title: string; text: string }> => {
  const fallbackTitle = path.basename(relative)
  switch (kind) {
    case "pdf": {
      const pdf = await pdfToText(bytes)
      return { title: pdf.title !== "" ? pdf.title : fallbackTitle, text: pdf.content }
    }
    case "html": {
      const page = htmlToText(new TextDecoder().decode(bytes))
      return { title: page.title !== "" ? page.title : fallbackTitle, text: page.content }
    }
    case "markdown":
    case "text": {
      const text = new TextDecoder().decode(bytes)
      return { title: firstHeading(text) ?? fallbackTitle, text }
    }
  }
}

const fileUrl = (settings: Settings, relative: string): string =>
  pathToFileURL(path.join(settings.root, ...relative.split("/"))).href

type FileOutcome =
  | { readonly kind: "unchanged"; readonly file: CachedFile }
  | { readonly kind: "touched"; readonly file: CachedFile }
  | { readonly kind: "indexed"; readonly file: CachedFile }
  | { readonly kind: "skipped"; readonly reason: string }

const indexFile = (settings: Settings, relative: string, cached: CachedFile | undefined): Promise<FileOutcome> =>
  (async (): Promise<FileOutcome> => {
    const full = path.join(settings.root, ...relative.split("/"))
    const named = kindOf(relative, settings.pdf)
    if (named === undefined && path.extname(relative).toLowerCase() === ".pdf") {
      return { kind: "skipped", reason: "a PDF, and PDF reading is off" }
    }
    const stat = await fs.stat(full)
    if (stat.size > settings.maxFileBytes) {
      return { kind: "skipped", reason: `larger than ${settings.maxFileBytes} bytes` }
    }
    if (stat.size === 0) return { kind: "skipped", reason: "empty" }
    if (cached !== undefined && cached.mtimeMs === stat.mtimeMs && cached.size === stat.size) {
      return { kind: "unchanged", file: cached }
    }
    const bytes = await fs.readFile(full)
    // What a file holds decides: text without a known extension is read as text, binary content is refused.
    const textual = named === "pdf" || looksLikeText(bytes)
    if (!textual) return { kind: "skipped", reason: "binary content, not text" }
    const kind: Kind = named ?? "text"
    const hash = crypto.createHash("sha256").update(bytes).digest("hex")
    if (cached !== undefined && cached.hash === hash) {
      return { kind: "touched", file: { ...cached, mtimeMs: stat.mtimeMs, size: stat.size } }
    }
    const { text, title } = await readableText(kind, bytes, relative)
    const chunks: ReadonlyArray<Chunk> = chunkText(text, { size: settings.chunkSize, overlap: settings.chunkOverlap })
    return {
      kind: "indexed",
      file: { mtimeMs: stat.mtimeMs, size: stat.size, hash, title, chunks: chunks.map((c) => ({ ...c })) }
    }
  })().catch((error: unknown) => ({
    kind: "skipped",
    reason: error instanceof Error ? error.message : String(error)
  }))

const newSearchIndex = (): MiniSearch<IndexedChunk> =>
  new MiniSearch<IndexedChunk>({
    fields: ["title", "heading", "text"],
    storeFields: [],
    searchOptions: {
      boost: { title: 2, heading: 1.5 },
      prefix: (term) => term.length > 3,
      fuzzy: (term) => (term.length > 5 ? 0.2 : false),
      combineWith: "OR"
    }
  })

/**
 * A file as indexed: its title and chunks through the settings' scrubber. The same file when nothing changed, so that
 * a cache written before (or with other secrets) is written again only when it held one.
 */
const scrubbedFile = (settings: Settings, file: CachedFile): CachedFile => {
  const scrub = settings.scrub
  if (scrub === undefined) return file
  const title = scrub(file.title)
  const chunks = file.chunks.map((chunk) => {
    const heading = scrub(chunk.heading)
    const text = scrub(chunk.text)
    return heading === chunk.heading && text === chunk.text ? chunk : { heading, text }
  })
  return title === file.title && chunks.every((chunk, i) => chunk === file.chunks[i])
    ? file
    : { ...file, title, chunks }
}

/** Indexes the folder, reading only the files the cache does not hold as they are; saves the cache if it changed. */
export const buildState = (settings: Settings): Effect.Effect<State, Errors.ResearchInvalidInput> =>
  Effect.gen(function* () {
    const cache = yield* loadCache(settings)
    const listing = yield* Effect.tryPromise({
      try: () => listFiles(settings),
      catch: (error) =>
        new Errors.ResearchInvalidInput({
          reason: `the corpus folder ${settings.root} could not be listed: ${String(error)}`
        })
    })
    const relatives = listing.files
    const outcomes = yield* Effect.forEach(
      relatives,
      (relative) => Effect.promise(() => indexFile(settings, relative, cache[relative])),
      { concurrency: 8 }
    )
    const files = new Map<string, CachedFile>()
    const read: Array<string> = []
    const reindexed: Array<string> = []
    const skipped: Array<{ path: string; reason: string }> = [...listing.passed]
    let scrubbedCached = false
    relatives.forEach((relative, i) => {
      const outcome = outcomes[i]
      if (outcome === undefined) return
      if (outcome.kind === "skipped") {
        skipped.push({ path: relative, reason: outcome.reason })
        return
      }
      if (outcome.kind !== "unchanged") read.push(relative)
      if (outcome.kind === "indexed") reindexed.push(relative)
      const file = scrubbedFile(settings, outcome.file)
      if (file !== outcome.file && outcome.kind !== "indexed") scrubbedCached = true
      files.set(relative, file)
    })
    const present = new Set(relatives)
    const removed = Object.keys(cache)
      .filter((relative) => !present.has(relative))
      .sort()
    const chunks = new Map<string, IndexedChunk>()
    for (const [relative, file] of files) {
      const url = fileUrl(settings, relative)
      file.chunks.forEach((chunk, i) => {
        const n = i + 1
        const id = `${relative}#${n}`
        chunks.set(id, { id, file: relative, n, url: `${url}#chunk-${n}`, title: file.title, ...chunk })
      })
    }
    const search = newSearchIndex()
    search.addAll([...chunks.values()])
    if (read.length > 0 || removed.length > 0 || scrubbedCached || Object.keys(cache).length !== files.size) {
      yield* saveCache(settings, files)
    }
    return {
      files,
      chunks,
      search,
      report: { files: files.size, chunks: chunks.size, read, reindexed, removed, skipped }
    }
  })
