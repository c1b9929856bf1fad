import { createHash } from "node:crypto"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, HashMap, Option, Ref } from "effect"
import * as RequestJournal from "../src/internal/session/requestJournal.js"
import { sha256Hex } from "../src/internal/session/sha256.js"
import { SessionStore } from "../src/SessionStore.js"
import { ExtractedPage, SearchResult, SourceSummary } from "../src/Source.js"
import { MemorySessionStore } from "../src/testing/index.js"

const searchKey = (query: string): RequestJournal.SearchKey => ({
  query,
  maxResults: 5,
  depth: "",
  includeRawContent: true,
  topic: "news",
  timeRange: "",
  includeDomains: "a.org,b.org",
  excludeDomains: "",
  dateWindow: ""
})

const result = (url: string) =>
  new SearchResult({ url, title: "T", snippet: "s", rawContent: "raw text", score: 0.5, provider: "fake" })

const entries: RequestJournal.Entries = {
  searches: HashMap.make([
    RequestJournal.searchKey(searchKey("heat pumps")),
    { request: searchKey("heat pumps"), results: [result("https://a.org/1"), result("https://b.org/2")] }
  ]),
  pages: HashMap.make([
    "https://a.org/1",
    new ExtractedPage({ url: "https://a.org/1/", title: "A", content: "page text", contentType: "text/html" })
  ]),
  summaries: HashMap.make([
    RequestJournal.summaryKey("page text"),
    new SourceSummary({ summary: "about a page", excerpts: ["page"] })
  ])
}

describe("RequestJournal", () => {
  it("a journal decodes to what was encoded", () => {
    const decoded = RequestJournal.decode(RequestJournal.encode(entries))
    assert.isTrue(Either.isRight(decoded))
    if (Either.isLeft(decoded)) return
    const key = RequestJournal.searchKey(searchKey("heat pumps"))
    assert.deepStrictEqual(HashMap.get(decoded.right.searches, key), HashMap.get(entries.searches, key))
    assert.deepStrictEqual(
      HashMap.get(decoded.right.pages, "https://a.org/1"),
      HashMap.get(entries.pages, "https://a.org/1")
    )
    const summary = HashMap.get(decoded.right.summaries, RequestJournal.summaryKey("page text"))
    assert.isTrue(Option.isSome(summary) && summary.value instanceof SourceSummary)
    assert.deepStrictEqual(summary, HashMap.get(entries.summaries, RequestJournal.summaryKey("page text")))
  })

  it("the journal keeps a hash of each text summarised, not the text", () => {
    const secretText = "a long page nobody needs to keep twice"
    const text = RequestJournal.encode({
      ...RequestJournal.emptyEntries,
      summaries: HashMap.make([
        RequestJournal.summaryKey(secretText),
        new SourceSummary({ summary: "s", excerpts: [] })
      ])
    })
    assert.notInclude(text, secretText)
    assert.include(text, sha256Hex(secretText))
  })

  it("a journal that is not JSON, or not of this version, does not decode", () => {
    assert.isTrue(Either.isLeft(RequestJournal.decode("{not json")))
    const other = JSON.stringify({ ...JSON.parse(RequestJournal.encode(entries)), version: 2 })
    assert.isTrue(Either.isLeft(RequestJournal.decode(other)))
  })

  it("a SHA-256 is the standard one, for every kind of text", () => {
    const texts = ["", "abc", "a".repeat(55), "a".repeat(56), "a".repeat(64), "a".repeat(1_000), "naïve 中文 😀"]
    for (const text of texts) assert.strictEqual(sha256Hex(text), createHash("sha256").update(text).digest("hex"))
  })

  it("a lone surrogate does not hash like the replacement character", () => {
    assert.notStrictEqual(sha256Hex("\ud800"), sha256Hex("\ufffd"))
  })
})

/** A memory store that counts the journal's writes and the most of them in flight at once. */
const watchedStore = Effect.gen(function* () {
  const store = yield* MemorySessionStore.make
  const writes = yield* Ref.make(0)
  const inFlight = yield* Ref.make(0)
  const mostInFlight = yield* Ref.make(0)
  const watched: typeof store = {
    ...store,
    saveArtefact: (id, name, content) =>
      Effect.gen(function* () {
        yield* Ref.update(writes, (n) => n + 1)
        const now = yield* Ref.updateAndGet(inFlight, (n) => n + 1)
        yield* Ref.update(mostInFlight, (most) => Math.max(most, now))
        yield* Effect.yieldNow()
        yield* store.saveArtefact(id, name, content)
        yield* Ref.update(inFlight, (n) => n - 1)
      })
  }
  return { store: watched, writes, mostInFlight }
})

const storedEntries = (id: string) =>
  Effect.gen(function* () {
    const store = yield* SessionStore
    const text = yield* store.artefact(id, RequestJournal.fileName)
    assert.isTrue(Option.isSome(text), "no journal was stored")
    return Either.getOrThrow(RequestJournal.decode(Option.getOrElse(text, () => "")))
  })

describe("RequestJournal writes", () => {
  it.effect("answers recorded in a burst are written a few times, one write at a time, the last with them all", () =>
    Effect.gen(function* () {
      const { mostInFlight, store, writes } = yield* watchedStore
      yield* Effect.gen(function* () {
        const journal = yield* RequestJournal.make("burst")
        yield* Effect.forEach(
          Array.from({ length: 200 }, (_, i) => i),
          (i) => journal.recordSearch(searchKey(`query ${i}`), [result(`https://a.org/${i}`)]),
          { concurrency: 8 }
        )
        yield* journal.flush
        assert.strictEqual(HashMap.size((yield* storedEntries("burst")).searches), 200)
      }).pipe(Effect.scoped, Effect.provideService(SessionStore, store))
      assert.isAtMost(yield* Ref.get(writes), 3)
      assert.strictEqual(yield* Ref.get(mostInFlight), 1)
    })
  )

  it.effect("what was recorded is written when the journal's scope closes", () =>
    Effect.gen(function* () {
      const store = yield* MemorySessionStore.make
      yield* Effect.gen(function* () {
        yield* Effect.scoped(
          Effect.gen(function* () {
            const journal = yield* RequestJournal.make("closing")
            yield* journal.recordSearch(searchKey("first"), [result("https://a.org/1")])
            // The writer behind the run waits a second between writes: this one is written by the scope's end.
            yield* journal.recordSearch(searchKey("second"), [result("https://a.org/2")])
          })
        )
        assert.strictEqual(HashMap.size((yield* storedEntries("closing")).searches), 2)
      }).pipe(Effect.provideService(SessionStore, store))
    })
  )

  it.effect("a journal seeded from the store answers what it holds", () =>
    Effect.gen(function* () {
      const store = yield* SessionStore
      yield* store.saveArtefact("seeded", RequestJournal.fileName, RequestJournal.encode(entries))
      const journal = yield* RequestJournal.make("seeded")
      const found = yield* journal.search(RequestJournal.searchKey(searchKey("heat pumps")))
      assert.deepStrictEqual(
        Option.map(found, (results) => results.length),
        Option.some(2)
      )
      assert.isTrue(Option.isNone(yield* journal.search(RequestJournal.searchKey(searchKey("gas boilers")))))
      assert.isTrue(Option.isSome(yield* journal.page("https://a.org/1")))
      assert.isTrue(Option.isSome(yield* journal.summary(RequestJournal.summaryKey("page text"))))
    }).pipe(Effect.scoped, Effect.provide(MemorySessionStore.layer))
  )
})
