import { assert, describe, it } from "@effect/vitest"
import { Errors, ResearchEvents, SearchProvider, Source } from "@deep-research/core"
import { Clock, Duration, Effect, Queue, Redacted } from "effect"
import * as OpenAlex from "../../src/search/OpenAlex.js"
import * as SearchFanout from "../../src/search/SearchFanout.js"
import { Emulator } from "@deep-research/emulator"

const work = Emulator.openalexWork({
  id: "W123",
  title: "Heat pumps in cold climates",
  abstract: "Field trials show heat pumps keep a seasonal performance factor above 2.5 at minus fifteen degrees.",
  authors: ["Ada Moreau", "Kenji Sato"],
  year: 2023,
  venue: "Energy and Buildings",
  doi: "10.1016/j.enbuild.2023.1",
  oaUrl: "https://repository.example.org/heat-pumps.pdf"
})

const failure = (reply: Emulator.Reply) =>
  Effect.gen(function* () {
    const emulator = yield* Emulator.start()
    yield* emulator.respond("openalex.works", reply)
    return yield* Effect.flip(OpenAlex.make({ baseUrl: emulator.baseUrl("openalex") }).search("q", { maxResults: 2 }))
  })

describe("OpenAlex", () => {
  it("rebuilds an abstract from its inverted index, whatever the order of its words", () => {
    assert.strictEqual(OpenAlex.abstractOf({ pumps: [1], Heat: [0], heat: [3], move: [2] }), "Heat pumps move heat")
    assert.strictEqual(OpenAlex.abstractOf(null), "")
    const text = "the cat saw the other cat"
    assert.strictEqual(OpenAlex.abstractOf(Emulator.invertedIndex(text)), text)
  })

  it("asks for its fields, a page size, a publication date bound for a time range, mailto and the key", () => {
    const params = OpenAlex.searchParams(
      "heat pumps",
      { maxResults: 80, timeRange: "year" },
      Date.parse("2026-03-31T12:00:00Z"),
      {
        email: "me@example.org",
        apiKey: "k"
      }
    )
    assert.strictEqual(params.get("search"), "heat pumps")
    assert.strictEqual(params.get("per_page"), "50")
    assert.strictEqual(params.get("select"), OpenAlex.fields)
    assert.strictEqual(params.get("filter"), "from_publication_date:2025-03-30")
    assert.strictEqual(params.get("mailto"), "me@example.org")
    assert.strictEqual(params.get("api_key"), "k")
  })

  it.scopedLive("maps works: the DOI as link, authors, year, venue, the open-access copy, not a preprint", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("openalex.works", Emulator.openalexWorks([work]))
      const openalex = OpenAlex.make({
        baseUrl: emulator.baseUrl("openalex"),
        contact: "ops@example.org",
        apiKey: Redacted.make("oa-key")
      })
      const [result] = yield* openalex.search("heat pumps", { maxResults: 3 })
      assert.strictEqual(result?.url, "https://doi.org/10.1016/j.enbuild.2023.1")
      assert.deepStrictEqual(result?.work?.authors, ["Ada Moreau", "Kenji Sato"])
      assert.strictEqual(result?.work?.year, 2023)
      assert.strictEqual(result?.work?.venue, "Energy and Buildings")
      assert.isFalse(result?.work?.preprint)
      assert.include(result?.rawContent ?? "", "seasonal performance factor above 2.5")
      assert.include(result?.rawContent ?? "", "Full text: https://repository.example.org/heat-pumps.pdf")
      const [request] = yield* emulator.requests("openalex.works")
      assert.strictEqual(request?.query["mailto"], "ops@example.org", "the contact's address joins the polite pool")
      assert.strictEqual(request?.query["api_key"], "oa-key")
      assert.strictEqual(request?.headers["user-agent"], "deep-research/0.1 (ops@example.org)")
    })
  )

  it.scopedLive("a 429 is ProviderRateLimited with its Retry-After, a second without one", () =>
    Effect.gen(function* () {
      const limited = yield* failure({ kind: "fault", fault: { type: "rate_limit", retryAfterSeconds: 4 } })
      assert.strictEqual(limited._tag, "ProviderRateLimited")
      if (limited._tag === "ProviderRateLimited") assert.deepStrictEqual(limited.retryAfter, Duration.seconds(4))
      const bare = yield* failure({ kind: "fault", fault: { type: "rate_limit" } })
      if (bare._tag === "ProviderRateLimited") assert.deepStrictEqual(bare.retryAfter, Duration.seconds(1))
      else assert.fail(bare._tag)
    })
  )

  it.scopedLive(
    "the daily allowance spent is ProviderQuotaExhausted; a refused key ProviderAuthenticationFailed; a 5xx unavailable",
    () =>
      Effect.gen(function* () {
        assert.strictEqual((yield* failure({ kind: "fault", fault: { type: "quota" } }))._tag, "ProviderQuotaExhausted")
        assert.strictEqual(
          (yield* failure({ kind: "fault", fault: { type: "auth" } }))._tag,
          "ProviderAuthenticationFailed"
        )
        assert.strictEqual(
          (yield* failure({ kind: "fault", fault: { type: "server_error", status: 500 } }))._tag,
          "ProviderUnavailable"
        )
        assert.strictEqual(
          (yield* failure({ kind: "fault", fault: { type: "context_length" } }))._tag,
          "ProviderInvalidRequest"
        )
      })
  )

  const nextMidnight = (now: number) => {
    const day = new Date(now)
    return Date.UTC(day.getUTCFullYear(), day.getUTCMonth(), day.getUTCDate() + 1)
  }

  it.scopedLive(
    "its documented 403 is a rate to wait out; its documented 429 the day's allowance, spent until midnight UTC",
    () =>
      Effect.gen(function* () {
        const slowDown = yield* failure(
          Emulator.json({ error: "Forbidden", message: "Rate limit exceeded; slow down" }, { status: 403 })
        )
        assert.strictEqual(slowDown._tag, "ProviderRateLimited")
        const now = yield* Clock.currentTimeMillis
        const daily = yield* failure(
          Emulator.json({ error: "Too Many Requests", message: "Daily limit exceeded" }, { status: 429 })
        )
        assert.strictEqual(daily._tag, "ProviderQuotaExhausted")
        if (daily._tag === "ProviderQuotaExhausted") {
          assert.strictEqual(daily.until, nextMidnight(now))
          assert.include(daily.message, `openalex is skipped until ${new Date(nextMidnight(now)).toISOString()}`)
          assert.include(daily.message, "OPENALEX_API_KEY")
        }
      })
  )

  it.scopedLive(
    "an answer that says nothing is left of the allowance skips the next search, sending nothing, until the reset it gives",
    () =>
      Effect.gen(function* () {
        const emulator = yield* Emulator.start()
        yield* emulator.respond(
          "openalex.works",
          Emulator.json(
            { meta: { count: 1 }, results: [work] },
            {
              headers: {
                "x-ratelimit-limit": "100",
                "x-ratelimit-remaining": "0",
                "x-ratelimit-reset": "3600"
              }
            }
          )
        )
        const openalex = OpenAlex.make({ baseUrl: emulator.baseUrl("openalex") })
        const now = yield* Clock.currentTimeMillis
        assert.lengthOf(yield* openalex.search("heat pumps", { maxResults: 2 }), 1, "the last allowed answer is read")
        const skipped = yield* Effect.flip(openalex.search("heat pumps", { maxResults: 2 }))
        assert.strictEqual(skipped._tag, "ProviderQuotaExhausted")
        if (skipped._tag === "ProviderQuotaExhausted") {
          assert.isAtLeast(skipped.until ?? 0, now + 3_600_000)
          assert.isAtMost(skipped.until ?? 0, now + 3_700_000)
        }
        assert.lengthOf(yield* emulator.requests("openalex.works"), 1, "no request sent past the allowance")
      })
  )

  it.scopedLive(
    "in a fan-out, a spent allowance skips OpenAlex for the rest of the UTC day with one line, the others carrying on",
    () =>
      Effect.gen(function* () {
        const events = yield* ResearchEvents.ResearchEvents
        const subscription = yield* events.subscribe
        const emulator = yield* Emulator.start()
        yield* emulator.respond("openalex.works", { kind: "fault", fault: { type: "quota" } })
        const other: SearchProvider.Service = {
          name: "wikipedia",
          search: () =>
            Effect.succeed([
              new Source.SearchResult({
                url: "https://en.wikipedia.org/wiki/Heat_pump",
                title: "Heat pump",
                snippet: "",
                provider: "wikipedia"
              })
            ])
        }
        const fanout = yield* SearchFanout.make({
          providers: [OpenAlex.make({ baseUrl: emulator.baseUrl("openalex") }), other]
        })
        const now = yield* Clock.currentTimeMillis
        for (let i = 0; i < 3; i++) assert.lengthOf(yield* fanout.search(`heat pumps ${i}`, { maxResults: 5 }), 1)
        assert.lengthOf(yield* emulator.requests("openalex.works"), 1, "asked once, never again that day")
        const lines = (yield* Queue.takeAll(subscription))
          .pipe((all) => [...all])
          .filter((e) => e._tag === "ProviderSkipped")
        assert.lengthOf(lines, 1)
        const [line] = lines
        if (line?._tag === "ProviderSkipped") {
          assert.strictEqual(line.provider, "openalex")
          assert.include(line.reason, `until ${new Date(nextMidnight(now)).toISOString()}`)
        }
        const health = yield* fanout.health
        assert.strictEqual(health[0]?.pausedUntil, nextMidnight(now))
        assert.instanceOf(new Errors.ProviderQuotaExhausted({ provider: "x" }), Errors.ProviderQuotaExhausted)
      }).pipe(Effect.provide(ResearchEvents.layer))
  )
})
