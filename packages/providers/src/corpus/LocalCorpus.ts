/**
 * Research over local documents, offline: a folder of `.md`, `.txt`, `.html` and `.pdf` files is split into chunks
 * (by headings and paragraphs) and indexed for full-text search. Results point at `file:` URLs with a `#chunk-N`
 * fragment, which the corpus extractor reads back (a chunk, or the whole file without a fragment), never anything
 * outside the corpus folder. The chunks are cached in an index file keyed by path, modification time, size and
 * content hash, so indexing again reads only the files that changed.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { ContentExtractor, Errors, Resilience, SearchProvider, Source } from "@deep-research/core"
import * as CorpusIndex from "./corpusIndex.js"

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
  /**
   * What a document's text passes before it is indexed, cached, searched or read (`Secrets.scrubber`): a key in a
   * user's file (a `.env` in the folder, say) stays out of the cache on disk, the results and every model's prompt.
   */
  readonly scrub?: ((text: string) => string) | undefined
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
export type IndexReport = CorpusIndex.IndexReport

/** A local corpus: its search provider and extractor, and a way to pick up changes in the folder. */
export interface Service {
  readonly root: string
  readonly search: SearchProvider.Service
  readonly extractor: ContentExtractor.Service
  /** Indexes the folder again (reading only what changed) and searches the new index from then on. */
  readonly refresh: Effect.Effect<IndexReport, Errors.ResearchInvalidInput>
  /** The report of the latest indexing pass. */
  readonly lastReport: Effect.Effect<IndexReport>
}

/** The local corpus in context (for `refresh`). */
export class LocalCorpus extends Context.Tag("@deep-research/providers/LocalCorpus")<LocalCorpus, Service>() {}

// =============================================================================
// Constructors
// =============================================================================

/** Indexes the folder (using the cache) and returns the corpus. Fails when the folder does not exist. */
export const make = (options: Options): Effect.Effect<Service, Errors.ResearchInvalidInput> =>
  Effect.gen(function* () {
    const root = yield* Effect.tryPromise({
      try: () => fs.realpath(path.resolve(options.root)),
      catch: () => new Errors.ResearchInvalidInput({ reason: `the corpus folder ${options.root} does not exist` })
    })
    const isFolder = yield* Effect.promise(() => fs.stat(root).then((s) => s.isDirectory()))
    if (!isFolder)
      return yield* new Errors.ResearchInvalidInput({ reason: `the corpus path ${options.root} is not a folder` })
    const settings: CorpusIndex.Settings = {
      root,
      name: options.name ?? defaults.name,
      cacheFile:
        options.cacheFile === false
          ? undefined
          : path.resolve(options.cacheFile ?? path.join(root, defaults.cacheFileName)),
      chunkSize: options.chunkSize ?? defaults.chunkSize,
      chunkOverlap: options.chunkOverlap ?? defaults.chunkOverlap,
      pdf: options.pdf ?? true,
      maxFileBytes: options.maxFileBytes ?? defaults.maxFileBytes,
      scrub: options.scrub
    }
    const state = yield* Ref.make(yield* CorpusIndex.buildState(settings))
    return {
      root,
      search: makeSearch(settings, state),
      extractor: makeExtractor(settings, state),
      refresh: Effect.gen(function* () {
        const next = yield* CorpusIndex.buildState(settings)
        yield* Ref.set(state, next)
        return next.report
      }),
      lastReport: Effect.map(Ref.get(state), (s) => s.report)
    }
  })

/** The corpus as the `SearchProvider`, the `ContentExtractor` and the `LocalCorpus` in context. */
export const layer = (
  options: Options
): Layer.Layer<
  SearchProvider.SearchProvider | ContentExtractor.ContentExtractor | LocalCorpus,
  Errors.ResearchInvalidInput
> =>
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

/**
 * Whether bytes are text: valid UTF-8 with no NUL and almost no control characters in their first 64 KB. A file is
 * indexed by what it holds, not by its name alone: a text file without an extension is read, random bytes named
 * `.txt` are not.
 */
export const looksLikeText: (bytes: Uint8Array) => boolean = CorpusIndex.looksLikeText

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

const makeSearch = (settings: CorpusIndex.Settings, state: Ref.Ref<CorpusIndex.State>): SearchProvider.Service => ({
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

const extractOne = (
  settings: CorpusIndex.Settings,
  state: Ref.Ref<CorpusIndex.State>,
  url: string
): Effect.Effect<Source.ExtractResult> =>
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
    const kind = CorpusIndex.kindOf(relative, settings.pdf)
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
      Effect.tryPromise(async () => CorpusIndex.readableText(kind, await fs.readFile(resolved), relative))
    )
    if (whole._tag === "Left") return fail(`could not read ${relative}`)
    return new Source.ExtractedPage({
      url,
      title: whole.right.title,
      content: whole.right.text,
      contentType: kind === "pdf" ? "application/pdf" : kind === "html" ? "text/html" : "text/markdown"
    })
  })

const makeExtractor = (
  settings: CorpusIndex.Settings,
  state: Ref.Ref<CorpusIndex.State>
): ContentExtractor.Service => ({
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
): ContentExtractor.Service => {
  const routing = routingOver(corpus, fallback)
  // Both halves under their own policies: the pair is not protected again as one provider.
  return Resilience.isProtected(corpus) && Resilience.isProtected(fallback)
    ? Resilience.markProtected(routing)
    : routing
}

const routingOver = (
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
