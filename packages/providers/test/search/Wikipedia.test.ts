import { SearchProvider } from "@deep-research/core"
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import * as Wikipedia from "../../src/search/Wikipedia.js"
import { Emulator } from "@deep-research/emulator"

const articles: ReadonlyArray<Emulator.WikiArticle> = [
  { title: "Heat pump", extract: "A heat pump is a device that transfers heat from a colder place to a warmer one." },
  {
    title: "Wärmepumpe",
    extract: "Eine Wärmepumpe ist eine Maschine, die Wärme von einem kälteren Ort an einen wärmeren befördert."
  }
]

const wikipediaAt = (emulator: Emulator.Handle, options: Partial<Wikipedia.Options> = {}) =>
  Wikipedia.make({ baseUrl: emulator.baseUrl("wikipedia"), ...options })

const failure = (emulator: Emulator.Handle, reply: Emulator.Reply) =>
  Effect.gen(function* () {
    yield* emulator.respond("wikipedia.api", reply)
    return yield* Effect.flip((yield* wikipediaAt(emulator)).search("heat pump", { maxResults: 2 }))
  })

describe("Wikipedia", () => {
  it("searches the configured edition, else the question's, else English", () => {
    assert.strictEqual(Wikipedia.editionOf("de", "fr"), "de")
    assert.strictEqual(Wikipedia.editionOf(undefined, "zh"), "zh")
    assert.strictEqual(Wikipedia.editionOf(undefined, undefined), "en")
    assert.strictEqual(Wikipedia.editionOf("not a code!", undefined), "en")
    assert.strictEqual(
      Wikipedia.apiUrl("https://{language}.wikipedia.org/", "de"),
      "https://de.wikipedia.org/w/api.php"
    )
    assert.strictEqual(Wikipedia.apiUrl("http://wiki.local", "de"), "http://wiki.local/w/api.php")
  })

  it.scopedLive(
    "searches, then reads the hits' lead text in one request, in series, identified by its User-Agent",
    () =>
      Effect.gen(function* () {
        const emulator = yield* Emulator.start()
        yield* emulator.respond("wikipedia.api", Emulator.wikipediaApi(articles))
        const wikipedia = yield* wikipediaAt(emulator, { contact: "https://example.org/ops" })
        const [result] = yield* wikipedia.search("heat pump", { maxResults: 1 })
        assert.strictEqual(result?.url, "https://en.wikipedia.org/wiki/Heat_pump")
        assert.strictEqual(result?.provider, "wikipedia")
        assert.include(result?.rawContent ?? "", "transfers heat from a colder place")
        const [search, pages] = yield* emulator.requests("wikipedia.api")
        assert.strictEqual(search?.path, "/wikipedia/en/w/api.php")
        assert.strictEqual(search?.query["srlimit"], "1")
        assert.strictEqual(pages?.query["pageids"], "1000")
        assert.strictEqual(pages?.query["exintro"], "1")
        assert.strictEqual(search?.headers["user-agent"], "deep-research/0.1 (https://example.org/ops)")
      })
  )

  it.scopedLive("searches the question's edition when the pipeline says its language", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("wikipedia.api", Emulator.wikipediaApi(articles))
      const wikipedia = yield* wikipediaAt(emulator)
      const [result] = yield* wikipedia
        .search("Wärmepumpe", { maxResults: 1 })
        .pipe(Effect.provideService(SearchProvider.QuestionLanguage, "de"))
      assert.strictEqual(result?.url, "https://de.wikipedia.org/wiki/W%C3%A4rmepumpe")
      const [search] = yield* emulator.requests("wikipedia.api")
      assert.strictEqual(search?.path, "/wikipedia/de/w/api.php")
    })
  )

  it.scopedLive("no hit makes no second request", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("wikipedia.api", Emulator.wikipediaApi([]))
      assert.deepStrictEqual(yield* (yield* wikipediaAt(emulator)).search("nothing", { maxResults: 3 }), [])
      assert.lengthOf(yield* emulator.requests("wikipedia.api"), 1)
    })
  )

  it.scopedLive("maps the Action API's errors: ratelimited waits, a bad parameter is ours, a 5xx is the wiki's", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      const limited = yield* failure(emulator, { kind: "fault", fault: { type: "rate_limit", retryAfterSeconds: 3 } })
      assert.strictEqual(limited._tag, "ProviderRateLimited")
      if (limited._tag === "ProviderRateLimited") assert.deepStrictEqual(limited.retryAfter, Duration.seconds(3))
      const refused = yield* failure(emulator, { kind: "fault", fault: { type: "context_length" } })
      assert.strictEqual(refused._tag, "ProviderInvalidRequest")
      assert.include(refused.message, "toomanyvalues")
      const lagged = yield* failure(
        emulator,
        Emulator.wikipediaError("maxlag", "Waiting for a database server: 6 seconds lagged.")
      )
      assert.strictEqual(lagged._tag, "ProviderRateLimited")
      const down = yield* failure(emulator, { kind: "fault", fault: { type: "server_error", status: 503 } })
      assert.strictEqual(down._tag, "ProviderUnavailable")
    })
  )

  it("a search snippet's highlighting and entities become text", () => {
    assert.strictEqual(
      Wikipedia.snippetText('<span class="searchmatch">Heat</span> &quot;pump&quot; &amp; more'),
      'Heat "pump" & more'
    )
  })
})
