import { assert, describe, it } from "@effect/vitest"
import { ContentExtractor, Novelty, Source } from "@deep-research/core"
import { Effect, Either, Logger } from "effect"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { chunkText } from "../../src/corpus/chunkText.js"
import * as LocalCorpus from "../../src/corpus/LocalCorpus.js"

const fixtures = fileURLToPath(new URL("../fixtures/corpus", import.meta.url))

/** A fresh copy of the fixture corpus in a temporary folder, removed afterwards. */
const corpusCopy = Effect.acquireRelease(
  Effect.promise(async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), "corpus-test-"))
    const root = path.join(dir, "corpus")
    await fs.cp(fixtures, root, { recursive: true })
    return { dir, root }
  }),
  ({ dir }) => Effect.promise(() => fs.rm(dir, { recursive: true, force: true }))
)

const searchOptions = { maxResults: 5 }

const fileOf = (url: string): string => {
  const parsed = new URL(url)
  return `${path.basename(fileURLToPath(parsed))}${parsed.hash}`
}

describe("chunkText", () => {
  it("keeps short documents in one chunk", () => {
    const chunks = chunkText("# Title\n\nOne paragraph.\n\nAnother one.", { size: 1000, overlap: 100 })
    assert.strictEqual(chunks.length, 1)
    assert.strictEqual(chunks[0]?.heading, "Title")
    assert.include(chunks[0]?.text ?? "", "Another one.")
  })

  it("packs paragraphs up to the size, repeating the tail of the previous chunk", () => {
    const paragraphs = Array.from({ length: 12 }, (_, i) => `Paragraph ${i} ${"word ".repeat(30).trim()} end${i}.`)
    const chunks = chunkText(paragraphs.join("\n\n"), { size: 500, overlap: 80 })
    assert.isAbove(chunks.length, 3)
    for (const chunk of chunks) assert.isAtMost(chunk.text.length, 500 + 80 + 2)
    for (let i = 1; i < chunks.length; i++) {
      const previous = chunks[i - 1]?.text ?? ""
      const start = (chunks[i]?.text ?? "").split("\n\n")[0] ?? ""
      assert.isTrue(previous.endsWith(start), `chunk ${i} starts with the end of chunk ${i - 1}`)
    }
    for (let i = 0; i < 12; i++)
      assert.isTrue(
        chunks.some((c) => c.text.includes(`end${i}.`)),
        `paragraph ${i} kept`
      )
  })

  it("starts a new chunk at a heading and records the heading", () => {
    const long = "text ".repeat(120).trim()
    const chunks = chunkText(`# A\n\n${long}\n\n## B\n\nshort part`, { size: 800, overlap: 50 })
    assert.deepStrictEqual(
      chunks.map((c) => c.heading),
      ["A", "B"]
    )
    assert.isTrue(chunks[1]?.text.startsWith("## B"))
  })

  it("cuts an oversized paragraph at sentence ends", () => {
    const sentence = "This sentence has exactly fifty characters in it. "
    const chunks = chunkText(sentence.repeat(40), { size: 400, overlap: 0 })
    assert.isAbove(chunks.length, 4)
    for (const chunk of chunks) assert.isTrue(chunk.text.endsWith("in it."), chunk.text.slice(-20))
  })
})

describe("LocalCorpus", () => {
  it.scopedLive("indexes the supported files of the folder and its subfolders, in chunks", () =>
    Effect.gen(function* () {
      const { root } = yield* corpusCopy
      const corpus = yield* LocalCorpus.make({ root })
      const report = yield* corpus.lastReport
      assert.strictEqual(report.files, 4)
      assert.deepStrictEqual([...report.reindexed].sort(), [
        "coral-reefs.html",
        "mantis-shrimp.pdf",
        "notes/solar-eclipses.txt",
        "zebras.md"
      ])
      assert.isAbove(report.chunks, report.files)
      assert.deepStrictEqual(report.skipped, [{ path: "ignored.bin", reason: "binary content, not text" }])
    })
  )

  it.scopedLive(
    "text is recognised by content: a file without an extension is read, random bytes named .txt are not",
    () =>
      Effect.gen(function* () {
        const { root } = yield* corpusCopy
        yield* Effect.promise(() =>
          Promise.all([
            fs.writeFile(path.join(root, "LICENSE"), "Permission is granted to octopuses to use this software freely."),
            fs.writeFile(path.join(root, "noise.txt"), Buffer.from([0x00, 0x9f, 0x92, 0x96, 0xff, 0x10, 0x00, 0x41])),
            fs.writeFile(path.join(root, "empty.md"), ""),
            fs.symlink(path.join(root, "zebras.md"), path.join(root, "link.md"))
          ])
        )
        const corpus = yield* LocalCorpus.make({ root })
        const report = yield* corpus.lastReport
        assert.include(report.reindexed, "LICENSE")
        assert.deepStrictEqual(
          [...report.skipped].sort((a, b) => a.path.localeCompare(b.path)),
          [
            { path: "empty.md", reason: "empty" },
            { path: "ignored.bin", reason: "binary content, not text" },
            { path: "link.md", reason: "a symbolic link (not followed)" },
            { path: "noise.txt", reason: "binary content, not text" }
          ]
        )
        const results = yield* corpus.search.search("octopuses software", searchOptions)
        assert.isTrue(results.some((r) => r.url.includes("LICENSE")))
      })
  )

  it.scopedLive("finds the chunk that holds the answer, with a file URL and chunk fragment", () =>
    Effect.gen(function* () {
      const { root } = yield* corpusCopy
      const corpus = yield* LocalCorpus.make({ root })
      const results = yield* corpus.search.search("biting flies stripes", searchOptions)
      const best = results[0]
      assert.isDefined(best)
      if (best === undefined) return
      assert.match(best.url, /^file:\/\/.*\/zebras\.md#chunk-\d+$/)
      assert.strictEqual(best.url.split("#")[0], pathToFileURL(path.join(root, "zebras.md")).href)
      assert.notStrictEqual(best.url, `${pathToFileURL(path.join(root, "zebras.md")).href}#chunk-1`)
      assert.include(best.title, "Why zebras have stripes")
      assert.include(best.snippet.toLowerCase(), "biting flies")
      assert.strictEqual(best.provider, "local")
      assert.strictEqual(best.score, 1)
      assert.isUndefined(best.rawContent)
    })
  )

  it.scopedLive("searches HTML, plain text and PDF files by their text", () =>
    Effect.gen(function* () {
      const { root } = yield* corpusCopy
      const corpus = yield* LocalCorpus.make({ root })
      const first = (query: string) =>
        Effect.map(corpus.search.search(query, searchOptions), (results) =>
          results[0] === undefined ? "" : fileOf(results[0].url)
        )
      assert.strictEqual(yield* first("coral bleaching heatwaves"), "coral-reefs.html#chunk-1")
      assert.strictEqual(yield* first("photoreceptor polarised light"), "mantis-shrimp.pdf#chunk-1")
      assert.strictEqual(yield* first("totality corona eclipse"), "solar-eclipses.txt#chunk-1")
    })
  )

  it.scopedLive("does not index scripts of HTML files", () =>
    Effect.gen(function* () {
      const { root } = yield* corpusCopy
      const corpus = yield* LocalCorpus.make({ root })
      const results = yield* corpus.search.search("tracking", searchOptions)
      assert.deepStrictEqual(results, [])
    })
  )

  it.scopedLive("returns at most maxResults, best first, and the chunk text when raw content is asked for", () =>
    Effect.gen(function* () {
      const { root } = yield* corpusCopy
      const corpus = yield* LocalCorpus.make({ root })
      const results = yield* corpus.search.search("zebras zebra water", { maxResults: 2, includeRawContent: true })
      assert.strictEqual(results.length, 2)
      assert.isAtLeast(results[0]?.score ?? 0, results[1]?.score ?? 0)
      assert.include(results[0]?.rawContent ?? "", "zebra")
      assert.isAbove((results[0]?.rawContent ?? "").length, (results[0]?.snippet ?? "").length)
    })
  )

  it.scopedLive("reads back a chunk by its URL, and a whole file without a fragment", () =>
    Effect.gen(function* () {
      const { root } = yield* corpusCopy
      const corpus = yield* LocalCorpus.make({ root })
      const [hit] = yield* corpus.search.search("Grévy's zebras five days without drinking", searchOptions)
      assert.isDefined(hit)
      if (hit === undefined) return
      const fileUrl = hit.url.split("#")[0] ?? ""
      const [chunk, whole] = yield* corpus.extractor.extract([hit.url, fileUrl])
      assert.strictEqual(chunk?._tag, "ExtractedPage")
      assert.strictEqual(whole?._tag, "ExtractedPage")
      if (chunk?._tag !== "ExtractedPage" || whole?._tag !== "ExtractedPage") return
      assert.include(chunk.content, "five days without drinking")
      assert.isBelow(chunk.content.length, whole.content.length)
      assert.strictEqual(whole.content, yield* Effect.promise(() => fs.readFile(path.join(root, "zebras.md"), "utf8")))
      assert.strictEqual(whole.title, "Zebras")
    })
  )

  it.scopedLive("refuses URLs outside the corpus folder, symbolic links out of it, and other schemes", () =>
    Effect.gen(function* () {
      const { dir, root } = yield* corpusCopy
      yield* Effect.promise(() => fs.writeFile(path.join(dir, "secret.md"), "# Secret\n\nnot part of the corpus"))
      yield* Effect.promise(() => fs.symlink(path.join(dir, "secret.md"), path.join(root, "link.md")))
      const corpus = yield* LocalCorpus.make({ root })
      const rootUrl = pathToFileURL(root).href
      const results = yield* corpus.extractor.extract([
        pathToFileURL(path.join(dir, "secret.md")).href,
        `${rootUrl}/../secret.md`,
        `${rootUrl}/link.md`,
        "file:///etc/passwd",
        "https://example.com/zebras.md",
        `${rootUrl}/zebras.md#chunk-99`,
        `${rootUrl}/ignored.bin`
      ])
      const reasons = results.map((r) => (r._tag === "ExtractFailure" ? r.reason : "read"))
      assert.deepStrictEqual(reasons.slice(0, 4), [
        "outside the corpus folder",
        "outside the corpus folder",
        "outside the corpus folder",
        "outside the corpus folder"
      ])
      assert.strictEqual(reasons[4], "not a file of the local corpus")
      assert.include(reasons[5], "no chunk 99 in zebras.md")
      assert.include(reasons[6], "not a document of the corpus")
    })
  )

  it.scopedLive("indexing again reads only the files that changed", () =>
    Effect.gen(function* () {
      const { root } = yield* corpusCopy
      yield* LocalCorpus.make({ root })
      const again = yield* LocalCorpus.make({ root })
      const unchanged = yield* again.lastReport
      assert.deepStrictEqual(unchanged.read, [])
      assert.deepStrictEqual(unchanged.reindexed, [])
      assert.strictEqual(unchanged.files, 4)

      const solar = path.join(root, "notes", "solar-eclipses.txt")
      yield* Effect.promise(() => fs.appendFile(solar, "\nA hybrid eclipse shifts between annular and total.\n"))
      const report = yield* again.refresh
      assert.deepStrictEqual(report.read, ["notes/solar-eclipses.txt"])
      assert.deepStrictEqual(report.reindexed, ["notes/solar-eclipses.txt"])
      const [hit] = yield* again.search.search("hybrid eclipse", searchOptions)
      assert.include(hit?.snippet ?? "", "hybrid eclipse")
    })
  )

  it.scopedLive("a file touched without changing its content is read but not re-chunked", () =>
    Effect.gen(function* () {
      const { root } = yield* corpusCopy
      const corpus = yield* LocalCorpus.make({ root })
      const later = new Date(Date.now() + 60_000)
      yield* Effect.promise(() => fs.utimes(path.join(root, "zebras.md"), later, later))
      const report = yield* corpus.refresh
      assert.deepStrictEqual(report.read, ["zebras.md"])
      assert.deepStrictEqual(report.reindexed, [])
      const next = yield* corpus.refresh
      assert.deepStrictEqual(next.read, [])
    })
  )

  it.scopedLive("drops deleted files and indexes new ones", () =>
    Effect.gen(function* () {
      const { root } = yield* corpusCopy
      const corpus = yield* LocalCorpus.make({ root })
      yield* Effect.promise(() => fs.rm(path.join(root, "coral-reefs.html")))
      yield* Effect.promise(() =>
        fs.writeFile(path.join(root, "octopus.md"), "# Octopus\n\nOctopuses have three hearts.")
      )
      const report = yield* corpus.refresh
      assert.deepStrictEqual(report.removed, ["coral-reefs.html"])
      assert.deepStrictEqual(report.reindexed, ["octopus.md"])
      assert.deepStrictEqual(yield* corpus.search.search("coral bleaching", searchOptions), [])
      const [hit] = yield* corpus.search.search("three hearts", searchOptions)
      assert.strictEqual(fileOf(hit?.url ?? ""), "octopus.md#chunk-1")
    })
  )

  it.scopedLive("rebuilds from scratch when the cache file is corrupt", () =>
    Effect.gen(function* () {
      const { dir, root } = yield* corpusCopy
      const cacheFile = path.join(dir, "cache", "index.json")
      yield* LocalCorpus.make({ root, cacheFile })
      yield* Effect.promise(() => fs.writeFile(cacheFile, "{ not json"))
      const corpus = yield* LocalCorpus.make({ root, cacheFile })
      const report = yield* corpus.lastReport
      assert.strictEqual(report.reindexed.length, 4)
      const [hit] = yield* corpus.search.search("biting flies", searchOptions)
      assert.match(hit?.url ?? "", /zebras\.md#chunk-/)
      const again = yield* LocalCorpus.make({ root, cacheFile })
      assert.deepStrictEqual((yield* again.lastReport).read, [])
    })
  )

  it.scopedLive("keeps its cache 0600 in a 0700 folder, and works without it when it cannot be written", () =>
    Effect.gen(function* () {
      const { dir, root } = yield* corpusCopy
      const cacheFile = path.join(dir, "store", "corpus-index", "index.json")
      yield* LocalCorpus.make({ root, cacheFile })
      const modes = yield* Effect.promise(async () => ({
        file: (await fs.stat(cacheFile)).mode & 0o777,
        folder: (await fs.stat(path.dirname(cacheFile))).mode & 0o777
      }))
      assert.deepStrictEqual(modes, { file: 0o600, folder: 0o700 })
      // A cache under a regular file cannot be written: the corpus is indexed all the same, and says so in a warning.
      yield* Effect.promise(() => fs.writeFile(path.join(dir, "a-file"), "not a folder"))
      const logs: Array<string> = []
      const logger = Logger.make(({ message }) => logs.push(String(message)))
      const corpus = yield* LocalCorpus.make({ root, cacheFile: path.join(dir, "a-file", "index.json") }).pipe(
        Effect.provide(Logger.replace(Logger.defaultLogger, logger))
      )
      const [hit] = yield* corpus.search.search("biting flies", searchOptions)
      assert.match(hit?.url ?? "", /zebras\.md#chunk-/)
      assert.isTrue(
        logs.some((line) => line.includes("Could not write the corpus index cache")),
        logs.join("\n")
      )
    })
  )

  it.scopedLive("re-chunks everything when the chunk size changes", () =>
    Effect.gen(function* () {
      const { root } = yield* corpusCopy
      const first = yield* LocalCorpus.make({ root })
      const small = yield* LocalCorpus.make({ root, chunkSize: 600, chunkOverlap: 100 })
      const report = yield* small.lastReport
      assert.strictEqual(report.reindexed.length, 4)
      assert.isAbove(report.chunks, (yield* first.lastReport).chunks)
    })
  )

  it.scopedLive("a routing extractor reads file URLs from the corpus and the rest elsewhere, in order", () =>
    Effect.gen(function* () {
      const { root } = yield* corpusCopy
      const corpus = yield* LocalCorpus.make({ root })
      const asked: Array<ReadonlyArray<string>> = []
      const web: ContentExtractor.Service = {
        name: "web",
        extract: (urls) =>
          Effect.sync(() => {
            asked.push(urls)
            return urls.map((url) => new Source.ExtractedPage({ url, title: "Web", content: `web page ${url}` }))
          })
      }
      const extractor = LocalCorpus.routingExtractor(corpus.extractor, web)
      const zebras = pathToFileURL(path.join(root, "zebras.md")).href
      const results = yield* extractor.extract(["https://a.org/1", zebras, "https://b.org/2"])
      assert.deepStrictEqual(
        results.map((r) => (r._tag === "ExtractedPage" ? r.title : r.reason)),
        ["Web", "Zebras", "Web"]
      )
      assert.deepStrictEqual(asked, [["https://a.org/1", "https://b.org/2"]])
      assert.strictEqual(extractor.name, "local+web")
    })
  )

  it.effect("fails with a clear error when the folder does not exist", () =>
    Effect.gen(function* () {
      const result = yield* Effect.either(LocalCorpus.make({ root: "/no/such/corpus/folder" }))
      assert.isTrue(Either.isLeft(result))
      if (Either.isLeft(result)) {
        assert.strictEqual(result.left._tag, "ResearchInvalidInput")
        assert.include(result.left.message, "/no/such/corpus/folder does not exist")
      }
    })
  )
})

describe("LocalCorpus and research dedup", () => {
  it.scoped("chunks of one long section stay distinct sources for the researcher's dedup", () =>
    Effect.gen(function* () {
      const dir = yield* Effect.acquireRelease(
        Effect.promise(() => fs.mkdtemp(path.join(os.tmpdir(), "corpus-parts-"))),
        (d) => Effect.promise(() => fs.rm(d, { recursive: true, force: true }))
      )
      const paragraphs = Array.from(
        { length: 9 },
        (_, i) => `Glacier survey ${i}: ${`measurement ${i} of ice thickness and flow `.repeat(12).trim()}.`
      )
      yield* Effect.promise(() =>
        fs.writeFile(path.join(dir, "glaciers.md"), `# Glacier field notes\n\n${paragraphs.join("\n\n")}`)
      )
      const corpus = yield* LocalCorpus.make({ root: dir, cacheFile: false, chunkSize: 600, chunkOverlap: 50 })
      const results = yield* corpus.search.search("glacier survey measurement ice thickness", { maxResults: 10 })
      assert.isAbove(results.length, 2)
      assert.strictEqual(new Set(results.map((r) => r.title)).size, results.length)
      const index = Novelty.make()
      for (const result of results) {
        const verdict = index.check({ id: result.url, url: result.url, title: result.title, text: result.snippet })
        assert.notStrictEqual(verdict._tag === "Duplicate" ? verdict.reason : "none", "url", result.url)
        assert.notStrictEqual(verdict._tag === "Duplicate" ? verdict.reason : "none", "title", result.url)
        index.add({ id: result.url, url: result.url, title: result.title, text: result.snippet })
      }
    })
  )
})
