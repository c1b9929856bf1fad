import { SearchProvider } from "@deep-research/core"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Searxng from "../../src/search/Searxng.js"
import { Emulator } from "@deep-research/emulator"

const results: ReadonlyArray<Emulator.SearxngResult> = [
  { url: "https://example.org/a", title: "A", content: "First  result" },
  { url: "https://example.org/b", title: "B", content: "Second", publishedDate: "2025-02-03T10:00:00" },
  { url: "https://example.org/c", title: "C", content: "Third" }
]

const failure = (reply: Emulator.Reply) =>
  Effect.gen(function* () {
    const emulator = yield* Emulator.start()
    yield* emulator.respond("searxng.search", reply)
    return yield* Effect.flip(Searxng.make({ url: emulator.baseUrl("searxng") }).search("q", { maxResults: 2 }))
  })

describe("Searxng", () => {
  it("asks for JSON, the first page, the language when known and a time range (a week as the month)", () => {
    const params = Searxng.searchParams("heat pumps", { maxResults: 3, timeRange: "week" }, "de")
    assert.strictEqual(params.toString(), "q=heat+pumps&format=json&pageno=1&language=de&time_range=month")
    assert.strictEqual(Searxng.searchParams("x", { maxResults: 3 }, undefined).toString(), "q=x&format=json&pageno=1")
  })

  it.scopedLive("maps results in the instance's order, at most maxResults, in the question's language", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("searxng.search", Emulator.searxngResults(results))
      const searxng = Searxng.make({ url: `${emulator.baseUrl("searxng")}/` })
      const found = yield* searxng
        .search("heat pumps", { maxResults: 2 })
        .pipe(Effect.provideService(SearchProvider.QuestionLanguage, "fr"))
      assert.deepStrictEqual(
        found.map((r) => [r.url, r.snippet, r.publishedDate]),
        [
          ["https://example.org/a", "First result", undefined],
          ["https://example.org/b", "Second", "2025-02-03"]
        ]
      )
      const [request] = yield* emulator.requests("searxng.search")
      assert.strictEqual(request?.query["language"], "fr")
    })
  )

  it.scopedLive("no result with engines answering is no result; no engine answering is ProviderUnavailable", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      const searxng = Searxng.make({ url: emulator.baseUrl("searxng") })
      yield* emulator.enqueue("searxng.search", Emulator.searxngResults([]))
      assert.deepStrictEqual(yield* searxng.search("nothing", { maxResults: 2 }), [])
      yield* emulator.enqueue(
        "searxng.search",
        Emulator.searxngResults([], {
          unresponsive: [
            ["duckduckgo", "timeout"],
            ["brave", "CAPTCHA"]
          ]
        })
      )
      const error = yield* Effect.flip(searxng.search("anything", { maxResults: 2 }))
      assert.strictEqual(error._tag, "ProviderUnavailable")
      assert.include(error.message, "no engine answered (duckduckgo: timeout; brave: CAPTCHA)")
    })
  )

  it.scopedLive(
    "an instance without the JSON format is ProviderInvalidRequest saying how to turn it on; its limiter waits",
    () =>
      Effect.gen(function* () {
        const refused = yield* failure({ kind: "fault", fault: { type: "auth" } })
        assert.strictEqual(refused._tag, "ProviderInvalidRequest")
        assert.include(refused.message, "add json to search.formats")
        assert.strictEqual(
          (yield* failure({ kind: "fault", fault: { type: "rate_limit" } }))._tag,
          "ProviderRateLimited"
        )
        assert.strictEqual(
          (yield* failure({ kind: "fault", fault: { type: "server_error", status: 500 } }))._tag,
          "ProviderUnavailable"
        )
      })
  )

  it.scopedLive("keeps the results it can read and drops, counting them, those without a URL", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      const reply = Emulator.searxngResults(results)
      const body = reply.kind === "json" && typeof reply.body === "object" && reply.body !== null ? reply.body : {}
      const listed: ReadonlyArray<unknown> = Reflect.get(body, "results")
      const broken = { ...body, results: [{ title: "An infobox without a link", engine: "wikidata" }, ...listed, 42] }
      yield* emulator.respond("searxng.search", Emulator.json(broken))
      const searxng = Searxng.make({ url: emulator.baseUrl("searxng") })
      const found = yield* searxng.search("heat pumps", { maxResults: 5 })
      assert.deepStrictEqual(
        found.map((r) => r.url),
        ["https://example.org/a", "https://example.org/b", "https://example.org/c"]
      )
      assert.deepStrictEqual(Searxng.readResults({ results: broken.results, unresponsive_engines: [] }).dropped, 2)
      yield* emulator.respond("searxng.search", Emulator.json({ ...body, results: [{ title: "no link" }] }))
      const unusable = yield* Effect.flip(searxng.search("heat pumps", { maxResults: 5 }))
      assert.strictEqual(unusable._tag, "ProviderUnavailable")
      assert.include(unusable.message, "none of the instance's 1 results could be read")
    })
  )
})
