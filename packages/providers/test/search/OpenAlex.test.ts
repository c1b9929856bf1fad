import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Redacted } from "effect"
import * as OpenAlex from "../../src/search/OpenAlex.js"
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

  it.scopedLive("a 429 is RateLimited with its Retry-After, a second without one", () =>
    Effect.gen(function* () {
      const limited = yield* failure({ kind: "fault", fault: { type: "rate_limit", retryAfterSeconds: 4 } })
      assert.strictEqual(limited._tag, "RateLimited")
      if (limited._tag === "RateLimited") assert.deepStrictEqual(limited.retryAfter, Duration.seconds(4))
      const bare = yield* failure({ kind: "fault", fault: { type: "rate_limit" } })
      if (bare._tag === "RateLimited") assert.deepStrictEqual(bare.retryAfter, Duration.seconds(1))
      else assert.fail(bare._tag)
    })
  )

  it.scopedLive(
    "the daily allowance spent is QuotaExhausted; a refused key AuthenticationFailed; a 5xx unavailable",
    () =>
      Effect.gen(function* () {
        assert.strictEqual((yield* failure({ kind: "fault", fault: { type: "quota" } }))._tag, "QuotaExhausted")
        assert.strictEqual((yield* failure({ kind: "fault", fault: { type: "auth" } }))._tag, "AuthenticationFailed")
        assert.strictEqual(
          (yield* failure({ kind: "fault", fault: { type: "server_error", status: 500 } }))._tag,
          "ProviderUnavailable"
        )
        assert.strictEqual(
          (yield* failure({ kind: "fault", fault: { type: "context_length" } }))._tag,
          "InvalidRequest"
        )
      })
  )
})
