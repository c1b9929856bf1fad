/**
 * Research over local documents, offline: a folder of `.md`, `.txt`, `.html` and `.pdf` files is split into chunks
 * (by headings and paragraphs) and indexed for full-text search. Results point at `file:` URLs with a `#chunk-N`
 * fragment, which the corpus extractor reads back (a chunk, or the whole file without a fragment), never anything
 * outside the corpus folder. The chunks are cached in an index file keyed by path, modification time, size and
 * content hash, so indexing again reads only the files that changed.
 */
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import MiniSearch from "minisearch"
import * as crypto from "node:crypto"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { ContentExtractor, Errors, Resilience, SearchProvider, Source } from "@deep-research/core"
import * as AtomicFiles from "./internal/atomicFiles.js"
import { type Chunk, chunkText } from "./internal/chunkText.js"
import { htmlToText } from "./internal/htmlToText.js"
import { pdfToText } from "./internal/pdfText.js"

// =============================================================================
// Options and results
// =============================================================================

/** Options of a local corpus. */
export interface Options {
  /** The folder to index; every supported file below it is included, hidden files and folders excepted. */
  readonly root: string
  /** Name recorded on results; `local` by default. */
  readonly name?: string | undefined
  /** Where the index cache is kept: a file path, or `false` for none. Default: `.deep-research-index.json` in root. */
  readonly cacheFile?: string | false | undefined
  /** Target chunk size in characters; 1,500 by default. */
  readonly chunkSize?: number | undefined
  /** Characters a chunk repeats from the previous one of its section; 200 by default. */
  readonly chunkOverlap?: number | undefined
  /** Index PDF files; on by default. */
  readonly pdf?: boolean | undefined
  /** Files larger than this are skipped; 20 MB by default. */
  readonly maxFileBytes?: number | undefined
}

/** The defaults of a local corpus. */
export const defaults = {
  name: "local",
  cacheFileName: ".deep-research-index.json",
  chunkSize: 1_500,
  chunkOverlap: 200,
  maxFileBytes: 20 * 1024 * 1024
} as const

/**
 * The resilience policy the corpus gets by default (`Resilience.Settings.providers.local`): searching a local index
 * costs nothing, so no rate limit, and nothing is gained by retrying.
 */
export const policy: Resilience.PolicyOverrides = new Resilience.PolicyOverrides({
  requestsPerSecond: null,
  maxRetries: 0
})

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

/** A local corpus: its search provider and extractor, and a way to pick up changes in the folder. */
export interface Service {
  readonly root: string
  readonly search: SearchProvider.Service
  readonly extractor: ContentExtractor.Service
  /** Indexes the folder again (reading only what changed) and searches the new index from then on. */
  readonly refresh: Effect.Effect<IndexReport, Errors.InvalidInput>
  /** The report of the latest indexing pass. */
  readonly lastReport: Effect.Effect<IndexReport>
}

/** The local corpus in context (for `refresh`). */
export class LocalCorpus extends Context.Tag("@deep-research/providers/LocalCorpus")<LocalCorpus, Service>() {}

// =============================================================================
// Cache file
// =============================================================================

const CachedChunk = Schema.Struct({ heading: Schema.String, text: Schema.String })

const CachedFile = Schema.Struct({
  mtimeMs: Schema.Number,
  size: Schema.Number,
  hash: Schema.String,
  title: Schema.String,
  chunks: Schema.Array(CachedChunk)
})
type CachedFile = typeof CachedFile.Type

const cacheVersion = 1

const CacheFile = Schema.Struct({
  version: Schema.Literal(cacheVersion),
  chunkSize: Schema.Number,
  chunkOverlap: Schema.Number,
  pdf: Schema.Boolean,
  files: Schema.Record({ key: Schema.String, value: CachedFile })
})
type CacheFile = typeof CacheFile.Type

const decodeCache = Schema.decodeUnknownOption(Schema.parseJson(CacheFile))
const encodeCache = Schema.encodeSync(Schema.parseJson(CacheFile))

// =============================================================================
// Constructors
// =============================================================================

interface Settings {
  readonly root: string
  readonly name: string
  readonly cacheFile: string | undefined
  readonly chunkSize: number
  readonly chunkOverlap: number
  readonly pdf: boolean
  readonly maxFileBytes: number
}

interface IndexedChunk {
  readonly id: string
  readonly file: string
  readonly n: number
  readonly url: string
  readonly title: string
  readonly heading: string
  readonly text: string
}

interface State {
  readonly files: ReadonlyMap<string, CachedFile>
  readonly chunks: ReadonlyMap<string, IndexedChunk>
  readonly search: MiniSearch<IndexedChunk>
  readonly report: IndexReport
}

/** Indexes the folder (using the cache) and returns the corpus. Fails when the folder does not exist. */
export const make = (options: Options): Effect.Effect<Service, Errors.InvalidInput> =>
  Effect.gen(function* () {
    const root = yield* Effect.tryPromise({
      try: () => fs.realpath(path.resolve(options.root)),
      catch: () => new Errors.InvalidInput({ reason: `the corpus folder ${options.root} does not exist` })
    })
    const isFolder = yield* Effect.promise(() => fs.stat(root).then((s) => s.isDirectory()))
    if (!isFolder) return yield* new Errors.InvalidInput({ reason: `the corpus path ${options.root} is not a folder` })
    const settings: Settings = {
      root,
      name: options.name ?? defaults.name,
      cacheFile:
        options.cacheFile === false
          ? undefined
          : path.resolve(options.cacheFile ?? path.join(root, defaults.cacheFileName)),
      chunkSize: options.chunkSize ?? defaults.chunkSize,
      chunkOverlap: options.chunkOverlap ?? defaults.chunkOverlap,
      pdf: options.pdf ?? true,
      maxFileBytes: options.maxFileBytes ?? defaults.maxFileBytes
    }
    const state = yield* Ref.make(yield* buildState(settings))
    return {
      root,
      search: makeSearch(settings, state),
      extractor: makeExtractor(settings, state),
      refresh: Effect.gen(function* () {
        const next = yield* buildState(settings)
        yield* Ref.set(state, next)
        return next.report
      }),
      lastReport: Effect.map(Ref.get(state), (s) => s.report)
    }
  })

/** The corpus as the `SearchProvider`, the `ContentExtractor` and the `LocalCorpus` in context. */
export const layer = (
  options: Options
): Layer.Layer<SearchProvider.SearchProvider | ContentExtractor.ContentExtractor | LocalCorpus, Errors.InvalidInput> =>
  Layer.unwrapEffect(
    Effect.map(make(options), (corpus) =>
      Layer.mergeAll(
        Layer.succeed(SearchProvider.SearchProvider, corpus.search),
        Layer.succeed(ContentExtractor.ContentExtractor, corpus.extractor),
        Layer.succeed(LocalCorpus, corpus)
      )
    )
  )

// =============================================================================
// Indexing
// =============================================================================

type Kind = "markdown" | "text" | "html" | "pdf"

const kindOf = (file: string, pdf: boolean): Kind | undefined => {
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
const readableText = async (
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

const loadCache = (settings: Settings): Effect.Effect<CacheFile["files"]> =>
  Effect.gen(function* () {
    if (settings.cacheFile === undefined) return {}
    const cacheFile = settings.cacheFile
    const text = yield* Effect.option(Effect.tryPromise(() => fs.readFile(cacheFile, "utf8")))
    if (text._tag === "None") return {}
    const cache = decodeCache(text.value)
    // a cache built with other chunk settings (or unreadable) is ignored and rebuilt
    if (
      cache._tag === "None" ||
      cache.value.chunkSize !== settings.chunkSize ||
      cache.value.chunkOverlap !== settings.chunkOverlap ||
      cache.value.pdf !== settings.pdf
    ) {
      return {}
    }
    return cache.value.files
  })

const saveCache = (settings: Settings, files: ReadonlyMap<string, CachedFile>): Effect.Effect<void> => {
  const cacheFile = settings.cacheFile
  if (cacheFile === undefined) return Effect.void
  const json = encodeCache({
    version: cacheVersion,
    chunkSize: settings.chunkSize,
    chunkOverlap: settings.chunkOverlap,
    pdf: settings.pdf,
    files: Object.fromEntries(files)
  })
  return Effect.gen(function* () {
    const atomic = AtomicFiles.make(yield* FileSystem.FileSystem, yield* Path.Path, process.pid)
    yield* atomic.makeDirectories(path.dirname(cacheFile))
    yield* atomic.writeAtomically(cacheFile, json)
  }).pipe(
    Effect.provide(Layer.merge(NodeFileSystem.layer, NodePath.layer)),
    // The index still works without its cache (a read-only store, say); the next start just reads everything.
    Effect.catchAllCause((cause) =>
      Effect.logWarning(`Could not write the corpus index cache ${cacheFile}`, Cause.squash(cause))
    )
  )
}

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

const buildState = (settings: Settings): Effect.Effect<State, Errors.InvalidInput> =>
  Effect.gen(function* () {
    const cache = yield* loadCache(settings)
    const listing = yield* Effect.tryPromise({
      try: () => listFiles(settings),
      catch: (error) =>
        new Errors.InvalidInput({ reason: `the corpus folder ${settings.root} could not be listed: ${String(error)}` })
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
    relatives.forEach((relative, i) => {
      const outcome = outcomes[i]
      if (outcome === undefined) return
      if (outcome.kind === "skipped") {
        skipped.push({ path: relative, reason: outcome.reason })
        return
      }
      if (outcome.kind !== "unchanged") read.push(relative)
      if (outcome.kind === "indexed") reindexed.push(relative)
      files.set(relative, outcome.file)
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
    if (read.length > 0 || removed.length > 0 || Object.keys(cache).length !== files.size) {
      yield* saveCache(settings, files)
    }
    return {
      files,
      chunks,
      search,
      report: { files: files.size, chunks: chunks.size, read, reindexed, removed, skipped }
    }
  })

// =============================================================================
// Search
// =============================================================================

/** The passage of about `length` characters that holds the most distinct query terms. */
const snippetOf = (text: string, terms: ReadonlyArray<string>, length = 300): string => {
  const flat = text.replace(/\s+/g, " ").trim()
  if (flat.length <= length) return flat
  const lower = flat.toLowerCase()
  const needles = [...new Set(terms.map((t) => t.toLowerCase()))].filter((t) => t !== "")
  const occurrences = needles.flatMap((needle) => {
    const found: Array<number> = []
    for (let at = lower.indexOf(needle); at >= 0 && found.length < 50; at = lower.indexOf(needle, at + 1)) {
      found.push(at)
    }
    return found
  })
  let bestStart = 0
  let bestCount = -1
  for (const at of occurrences) {
    const start = Math.max(0, at - 60)
    const window = lower.slice(start, start + length)
    const count = needles.filter((needle) => window.includes(needle)).length
    if (count > bestCount) {
      bestCount = count
      bestStart = start
    }
  }
  let start = bestStart
  if (start > 0) {
    const space = flat.indexOf(" ", start)
    if (space >= 0 && space - start < 20) start = space + 1
  }
  const end = Math.min(flat.length, start + length)
  return `${start > 0 ? "…" : ""}${flat.slice(start, end).trim()}${end < flat.length ? "…" : ""}`
}

/**
 * A chunk's title: the document's, its heading, and its number, so that chunks of one long section stay distinct
 * sources (research deduplicates sources whose titles match).
 */
const chunkTitle = (chunk: { readonly title: string; readonly heading: string; readonly n: number }): string =>
  `${chunk.heading !== "" && chunk.heading !== chunk.title ? `${chunk.title} › ${chunk.heading}` : chunk.title} (part ${chunk.n})`

const makeSearch = (settings: Settings, state: Ref.Ref<State>): SearchProvider.Service => ({
  name: settings.name,
  search: Effect.fn("LocalCorpus.search")(function* (query: string, options: SearchProvider.SearchOptions) {
    const current = yield* Ref.get(state)
    const hits = current.search.search(query).slice(0, Math.max(0, options.maxResults))
    const top = hits[0]?.score ?? 1
    return hits.flatMap((hit) => {
      const chunk = current.chunks.get(String(hit.id))
      if (chunk === undefined) return []
      const title = chunkTitle(chunk)
      return [
        new Source.SearchResult({
          url: chunk.url,
          title,
          snippet: snippetOf(chunk.text, hit.terms),
          ...(options.includeRawContent === true ? { rawContent: chunk.text } : {}),
          score: hit.score / top,
          provider: settings.name
        })
      ]
    })
  })
})

// =============================================================================
// Extraction
// =============================================================================

const isInside = (root: string, candidate: string): boolean => {
  const relative = path.relative(root, candidate)
  return relative !== "" && !relative.startsWith("..") && !path.isAbsolute(relative)
}

const extractOne = (settings: Settings, state: Ref.Ref<State>, url: string): Effect.Effect<Source.ExtractResult> =>
  Effect.gen(function* () {
    const fail = (reason: string) => new Source.ExtractFailure({ url, reason })
    let parsed: URL
    try {
      parsed = new URL(url)
    } catch {
      return fail("not a valid URL")
    }
    if (parsed.protocol !== "file:") return fail("not a file of the local corpus")
    const requested = yield* Effect.option(Effect.try(() => path.resolve(fileURLToPath(parsed))))
    if (requested._tag === "None") return fail("not a local file URL")
    // symbolic links are followed before the check, so none can lead out of the corpus
    const real = yield* Effect.option(Effect.tryPromise(() => fs.realpath(requested.value)))
    const resolved = real._tag === "Some" ? real.value : requested.value
    if (!isInside(settings.root, resolved)) return fail("outside the corpus folder")
    if (real._tag === "None") return fail("no such file in the corpus")
    const relative = path.relative(settings.root, resolved).split(path.sep).join("/")
    const kind = kindOf(relative, settings.pdf)
    if (kind === undefined) return fail("not a document of the corpus (md, txt, html, pdf)")
    const current = yield* Ref.get(state)
    const fragment = /^#chunk-(\d+)$/.exec(parsed.hash)
    if (fragment !== null) {
      const chunk = current.chunks.get(`${relative}#${fragment[1]}`)
      if (chunk === undefined) return fail(`no chunk ${fragment[1]} in ${relative}; the corpus may have changed`)
      return new Source.ExtractedPage({
        url,
        title: chunkTitle(chunk),
        content: chunk.text,
        contentType: "text/markdown"
      })
    }
    const whole = yield* Effect.either(
      Effect.tryPromise(async () => readableText(kind, await fs.readFile(resolved), relative))
    )
    if (whole._tag === "Left") return fail(`could not read ${relative}`)
    return new Source.ExtractedPage({
      url,
      title: whole.right.title,
      content: whole.right.text,
      contentType: kind === "pdf" ? "application/pdf" : kind === "html" ? "text/html" : "text/markdown"
    })
  })

const makeExtractor = (settings: Settings, state: Ref.Ref<State>): ContentExtractor.Service => ({
  name: settings.name,
  extract: Effect.fn("LocalCorpus.extract")(function* (urls: ReadonlyArray<string>) {
    return yield* Effect.forEach(urls, (url) => extractOne(settings, state, url), { concurrency: 4 })
  })
})

/**
 * An extractor that reads `file:` URLs with the corpus and hands every other URL to `fallback` (the HTTP extractor,
 * say), answering in the order of the URLs; for runs that search the corpus and the web together.
 */
export const routingExtractor = (
  corpus: ContentExtractor.Service,
  fallback: ContentExtractor.Service
): ContentExtractor.Service => ({
  name: `${corpus.name}+${fallback.name}`,
  extract: Effect.fn("LocalCorpus.routingExtractor")(function* (urls: ReadonlyArray<string>) {
    const isFile = (url: string) => /^file:/i.test(url.trim())
    const local = urls.filter(isFile)
    const remote = urls.filter((url) => !isFile(url))
    const [fromCorpus, fromFallback] = yield* Effect.all(
      [
        local.length > 0 ? corpus.extract(local) : Effect.succeed([]),
        remote.length > 0 ? fallback.extract(remote) : Effect.succeed([])
      ],
      { concurrency: 2 }
    )
    let nextLocal = 0
    let nextRemote = 0
    return urls.map(
      (url): Source.ExtractResult =>
        (isFile(url) ? fromCorpus[nextLocal++] : fromFallback[nextRemote++]) ??
        new Source.ExtractFailure({ url, reason: "the extractor returned no result for this URL" })
    )
  })
})
