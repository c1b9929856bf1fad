import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Fiber, Redacted, TestClock } from "effect"
import * as PubMed from "../../src/search/PubMed.js"
import { Emulator } from "@deep-research/emulator"
import { recordingClient } from "../support/recordingClient.js"

const article: Emulator.PubmedArticle = {
  pmid: "31234567",
  title: "Vitamin D supplementation and fractures in older adults.",
  abstract: [
    { label: "OBJECTIVE", text: "To assess whether vitamin D prevents fractures." },
    { label: "RESULTS", text: "No reduction in fractures was found (RR 1.03)." }
  ],
  authors: [{ last: "Lindqvist", fore: "Mara" }],
  journal: "BMJ (Clinical research ed.)",
  year: 2019,
  month: "Oct",
  doi: "10.1136/bmj.l1234"
}

const failure = (reply: Emulator.Reply) =>
  Effect.gen(function* () {
    const emulator = yield* Emulator.start()
    yield* emulator.respond("pubmed.esearch", reply)
    const pubmed = yield* PubMed.make({ baseUrl: emulator.baseUrl("pubmed") })
    return yield* Effect.flip(pubmed.search("vitamin d", { maxResults: 2 }))
  })

describe("PubMed", () => {
  it("searches by relevance, a time range as reldate days of publication", () => {
    const params = PubMed.searchParams("vitamin d", { maxResults: 5, timeRange: "month" })
    assert.deepStrictEqual(params, {
      db: "pubmed",
      term: '"vitamin d"[tw]',
      retmax: "5",
      sort: "relevance",
      retmode: "json",
      datetype: "pdat",
      reldate: "31"
    })
  })

  it.scopedLive("esearch, then one efetch of the ids; records mapped with their journal, year and DOI", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("pubmed.esearch", Emulator.pubmedSearch(["31234567"]))
      yield* emulator.respond("pubmed.efetch", Emulator.pubmedArticles([article]))
      const pubmed = yield* PubMed.make({ baseUrl: emulator.baseUrl("pubmed"), apiKey: Redacted.make("ncbi-key") })
      const [result] = yield* pubmed.search("vitamin d fractures", { maxResults: 2 })
      assert.strictEqual(result?.url, "https://pubmed.ncbi.nlm.nih.gov/31234567/")
      assert.strictEqual(result?.work?.venue, "BMJ (Clinical research ed.)")
      assert.strictEqual(result?.publishedDate, "2019-10")
      assert.deepStrictEqual(result?.work?.authors, ["Mara Lindqvist"])
      assert.include(result?.rawContent ?? "", "OBJECTIVE: To assess whether vitamin D prevents fractures.")
      const [search] = yield* emulator.requests("pubmed.esearch")
      const [fetch] = yield* emulator.requests("pubmed.efetch")
      assert.strictEqual(search?.query["api_key"], "ncbi-key")
      assert.strictEqual(search?.query["tool"], "deep-research")
      assert.isUndefined(search?.query["email"], "no contact, no email")
      assert.strictEqual(fetch?.query["id"], "31234567")
      assert.strictEqual(fetch?.query["api_key"], "ncbi-key")
    })
  )

  it.scopedLive("no id makes no efetch", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("pubmed.esearch", Emulator.pubmedSearch([]))
      const pubmed = yield* PubMed.make({ baseUrl: emulator.baseUrl("pubmed") })
      assert.deepStrictEqual(yield* pubmed.search("nothing", { maxResults: 2 }), [])
      assert.lengthOf(yield* emulator.requests("pubmed.efetch"), 0)
    })
  )

  it.scopedLive("maps NCBI's errors: 429 waits, a refused key, an esearch ERROR, a 5xx", () =>
    Effect.gen(function* () {
      const limited = yield* failure({ kind: "fault", fault: { type: "rate_limit" } })
      assert.strictEqual(limited._tag, "RateLimited")
      if (limited._tag === "RateLimited") assert.deepStrictEqual(limited.retryAfter, Duration.seconds(1))
      assert.strictEqual((yield* failure({ kind: "fault", fault: { type: "auth" } }))._tag, "AuthenticationFailed")
      const refused = yield* failure(Emulator.pubmedSearchError("Invalid query"))
      assert.strictEqual(refused._tag, "InvalidRequest")
      assert.include(refused.message, "Invalid query")
      assert.strictEqual(
        (yield* failure({ kind: "fault", fault: { type: "server_error", status: 502 } }))._tag,
        "ProviderUnavailable"
      )
    })
  )

  it.scopedLive("a cut efetch answer is ProviderUnavailable", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("pubmed.esearch", Emulator.pubmedSearch(["1"]))
      yield* emulator.respond("pubmed.efetch", { kind: "fault", fault: { type: "malformed_json" } })
      const pubmed = yield* PubMed.make({ baseUrl: emulator.baseUrl("pubmed") })
      const error = yield* Effect.flip(pubmed.search("x", { maxResults: 1 }))
      assert.strictEqual(error._tag, "ProviderUnavailable")
    })
  )

  for (const [label, apiKey, spacing] of [
    ["without a key, 3 a second", undefined, 334],
    ["with a key, 10 a second", Redacted.make("k"), 100]
  ] as const) {
    it.scoped(`spaces its requests to NCBI's limit: ${label}`, () =>
      Effect.gen(function* () {
        const recording = yield* recordingClient('{"esearchresult": {"idlist": []}}', "application/json")
        const pubmed = yield* PubMed.make({ httpClient: recording.client, apiKey })
        const searches = yield* Effect.fork(
          Effect.forEach(["a", "b", "c", "d"], (q) => pubmed.search(q, { maxResults: 1 }), { concurrency: "unbounded" })
        )
        yield* TestClock.adjust(Duration.seconds(5))
        yield* Fiber.join(searches)
        assert.deepStrictEqual(
          (yield* recording.sent).map((request) => request.at),
          [0, spacing, 2 * spacing, 3 * spacing]
        )
      })
    )
  }
})
