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
      assert.strictEqual(limited._tag, "ProviderRateLimited")
      if (limited._tag === "ProviderRateLimited") assert.deepStrictEqual(limited.retryAfter, Duration.seconds(1))
      assert.strictEqual(
        (yield* failure({ kind: "fault", fault: { type: "auth" } }))._tag,
        "ProviderAuthenticationFailed"
      )
      const refused = yield* failure(Emulator.pubmedSearchError("Invalid query"))
      assert.strictEqual(refused._tag, "ProviderInvalidRequest")
      assert.include(refused.message, "Invalid query")
      assert.strictEqual(
        (yield* failure({ kind: "fault", fault: { type: "server_error", status: 502 } }))._tag,
        "ProviderUnavailable"
      )
    })
  )

  it.scopedLive("a record's DOI and PMC copy are its own, never those of the references its EFetch XML lists", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      const bare: Emulator.PubmedArticle = { ...article, pmid: "31234568", doi: undefined }
      const own: Emulator.PubmedArticle = { ...article, pmc: "PMC6789012" }
      yield* emulator.respond("pubmed.esearch", Emulator.pubmedSearch([bare.pmid, own.pmid]))
      yield* emulator.respond("pubmed.efetch", Emulator.pubmedArticles([bare, own]))
      const efetch = Emulator.pubmedArticles([bare])
      assert.include(efetch.kind === "raw" ? efetch.body : "", "<ReferenceList>")
      const pubmed = yield* PubMed.make({ baseUrl: emulator.baseUrl("pubmed") })
      const [withoutIds, withIds] = yield* pubmed.search("vitamin d fractures", { maxResults: 2 })
      assert.strictEqual(withoutIds?.url, "https://pubmed.ncbi.nlm.nih.gov/31234568/")
      assert.isUndefined(withoutIds?.work?.doi, "no DOI of its own: none, not a reference's")
      assert.notInclude(withoutIds?.rawContent ?? "", "Full text:", "no PMC copy of its own: no full-text link")
      assert.strictEqual(withIds?.work?.doi, "10.1136/bmj.l1234")
      assert.include(withIds?.rawContent ?? "", "Full text: https://www.ncbi.nlm.nih.gov/pmc/articles/PMC6789012/")
    })
  )

  it.scopedLive("book records (StatPearls, GeneReviews) are read: title, authors, book, year, the Bookshelf link", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      const book: Emulator.PubmedBook = {
        kind: "book",
        pmid: "28722863",
        accession: "NBK441912",
        bookTitle: "StatPearls",
        bookId: "statpearls",
        publisher: "StatPearls Publishing",
        chapterTitle: "Vitamin D Deficiency",
        abstract: [{ text: "Vitamin D deficiency is common in older adults and raises the risk of fractures." }],
        authors: [{ last: "Sizar", fore: "Omeed" }],
        editors: [{ last: "Ackley", fore: "William" }],
        year: 2024
      }
      yield* emulator.respond("pubmed.esearch", Emulator.pubmedSearch([book.pmid, article.pmid]))
      yield* emulator.respond("pubmed.efetch", Emulator.pubmedArticles([article, book]))
      const pubmed = yield* PubMed.make({ baseUrl: emulator.baseUrl("pubmed") })
      const [chapter, paper] = yield* pubmed.search("vitamin d deficiency", { maxResults: 2 })
      assert.strictEqual(chapter?.url, "https://pubmed.ncbi.nlm.nih.gov/28722863/")
      assert.strictEqual(chapter?.title, "Vitamin D Deficiency")
      assert.deepStrictEqual(chapter?.work?.authors, ["Omeed Sizar"], "the authors, not the editors")
      assert.strictEqual(chapter?.work?.venue, "StatPearls (StatPearls Publishing)")
      assert.strictEqual(chapter?.work?.year, 2024)
      assert.isUndefined(chapter?.work?.doi, "a reference's DOI is not the chapter's")
      assert.include(chapter?.rawContent ?? "", "Full text: https://www.ncbi.nlm.nih.gov/books/NBK441912/")
      assert.include(chapter?.rawContent ?? "", "Vitamin D deficiency is common in older adults")
      assert.strictEqual(paper?.url, "https://pubmed.ncbi.nlm.nih.gov/31234567/", "and the article after it")
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
