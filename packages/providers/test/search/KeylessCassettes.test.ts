/**
 * The keyless search providers against their APIs' documented exchanges (`fixtures/keyless/`, written from each API's
 * documentation): the search a fixture records is sent through the real provider to the emulator, which answers with
 * the recorded response. The query string that arrives must be the recorded one, parameter for parameter (nothing
 * more, nothing less, the same values), and the answer must be read into the results it describes.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Schema } from "effect"
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { Arxiv, OpenAlex, PubMed, Searxng, Wikipedia } from "../../src/index.js"
import { Emulator } from "@deep-research/emulator"

const fixtures = fileURLToPath(new URL("../fixtures/keyless", import.meta.url))

const Fixture = Schema.Struct({
  source: Schema.String,
  request: Schema.NullOr(Schema.Struct({ query: Schema.Record({ key: Schema.String, value: Schema.String }) })),
  response: Schema.Struct({
    status: Schema.Number,
    headers: Schema.Record({ key: Schema.String, value: Schema.String }),
    body: Schema.optional(Schema.Unknown),
    text: Schema.optional(Schema.String)
  })
})

const load = (name: string) =>
  Schema.decodeUnknownSync(Fixture)(JSON.parse(readFileSync(`${fixtures}/${name}`, "utf8")))

/** The recorded response as the emulator's reply. */
const replyOf = (name: string): Emulator.Reply => {
  const { response } = load(name)
  return response.text !== undefined
    ? { kind: "raw", status: response.status, headers: response.headers, body: response.text }
    : { kind: "json", status: response.status, headers: response.headers, body: response.body }
}

const recordedQuery = (name: string): Readonly<Record<string, string>> => {
  const request = load(name).request
  if (request === null) throw new Error(`${name} records no request`)
  return request.query
}

/** The query strings that arrived at an endpoint, in order. */
const sentQueries = (emulator: Emulator.Handle, endpoint: Emulator.Endpoint) =>
  Effect.map(emulator.requests(endpoint), (requests) => requests.map((request) => request.query))

const email = "researcher@example.org"

describe("keyless providers send the documented requests and read the documented answers", () => {
  it.scopedLive("Wikipedia: list=search, then prop=extracts|info over the hits' page ids", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.enqueue("wikipedia.api", replyOf("wikipedia-search.json"), replyOf("wikipedia-extracts.json"))
      const wikipedia = yield* Wikipedia.make({ baseUrl: emulator.baseUrl("wikipedia") })
      const results = yield* wikipedia.search("Nelson Mandela", { maxResults: 2 })
      assert.deepStrictEqual(yield* sentQueries(emulator, "wikipedia.api"), [
        // The recorded search with API:Search's srenablerewrites, which the recording did not send.
        { ...recordedQuery("wikipedia-search.json"), srenablerewrites: "1" },
        recordedQuery("wikipedia-extracts.json")
      ])
      assert.deepStrictEqual(
        results.map((r) => [r.title, r.url]),
        [
          ["Nelson Mandela", "https://en.wikipedia.org/wiki/Nelson_Mandela"],
          ["Death of Nelson Mandela", "https://en.wikipedia.org/wiki/Death_of_Nelson_Mandela"]
        ]
      )
      assert.include(results[0]?.rawContent ?? "", "first president of South Africa from 1994 to 1999")
      assert.isUndefined(results[0]?.work)
    })
  )

  it.scopedLive("Wikipedia: a ratelimited error (HTTP 200) is ProviderRateLimited with its Retry-After", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.enqueue("wikipedia.api", replyOf("wikipedia-ratelimited.json"))
      const wikipedia = yield* Wikipedia.make({ baseUrl: emulator.baseUrl("wikipedia") })
      const error = yield* Effect.flip(wikipedia.search("Nelson Mandela", { maxResults: 2 }))
      assert.strictEqual(error._tag, "ProviderRateLimited")
      if (error._tag === "ProviderRateLimited") assert.deepStrictEqual(error.retryAfter, Duration.seconds(5))
    })
  )

  it.scopedLive("arXiv: the manual's query and its typical Atom response", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.enqueue("arxiv.query", replyOf("arxiv-query.json"))
      const arxiv = yield* Arxiv.make({ baseUrl: emulator.baseUrl("arxiv") })
      const [result, ...rest] = yield* arxiv.search("electron", { maxResults: 1 })
      assert.deepStrictEqual(yield* sentQueries(emulator, "arxiv.query"), [recordedQuery("arxiv-query.json")])
      assert.lengthOf(rest, 0)
      assert.strictEqual(result?.url, "https://arxiv.org/abs/hep-ex/0307015v1")
      assert.strictEqual(result?.title, "Multi-Electron Production at High Transverse Momenta in ep Collisions at HERA")
      assert.strictEqual(result?.publishedDate, "2003-07-07")
      assert.deepStrictEqual(result?.work?.authors, ["H1 Collaboration"])
      assert.strictEqual(result?.work?.year, 2003)
      assert.strictEqual(result?.work?.venue, "Eur.Phys.J. C31 (2003) 17-29")
      assert.isFalse(result?.work?.preprint, "an e-print with a journal reference is published")
      assert.include(result?.rawContent ?? "", "Full text: https://arxiv.org/pdf/hep-ex/0307015v1")
      assert.include(
        result?.rawContent ?? "",
        "Multi-electron production is studied at high electron transverse momentum"
      )
    })
  )

  it.scopedLive("arXiv: the manual's error feed is ProviderInvalidRequest with its message", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.enqueue("arxiv.query", replyOf("arxiv-error.json"))
      const arxiv = yield* Arxiv.make({ baseUrl: emulator.baseUrl("arxiv") })
      const error = yield* Effect.flip(arxiv.search("electron", { maxResults: 1 }))
      assert.strictEqual(error._tag, "ProviderInvalidRequest")
      assert.include(error.message, "incorrect id format for 1234.12345")
    })
  )

  it.scopedLive("OpenAlex: a works search with select and mailto; abstracts rebuilt, the preprint marked", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.enqueue("openalex.works", replyOf("openalex-works.json"))
      const openalex = OpenAlex.make({ baseUrl: emulator.baseUrl("openalex"), email })
      const [article, preprint] = yield* openalex.search("open access prevalence", { maxResults: 2 })
      assert.deepStrictEqual(yield* sentQueries(emulator, "openalex.works"), [recordedQuery("openalex-works.json")])
      assert.strictEqual(article?.url, "https://doi.org/10.7717/peerj.4375")
      assert.deepStrictEqual(article?.work?.authors, [
        "Heather Piwowar",
        "Jason Priem",
        "Vincent Larivière",
        "Stefanie Haustein"
      ])
      assert.strictEqual(article?.work?.venue, "PeerJ")
      assert.strictEqual(article?.work?.doi, "10.7717/peerj.4375")
      assert.isFalse(article?.work?.preprint)
      assert.include(
        article?.rawContent ?? "",
        "Despite growing interest in Open Access (OA) to scholarly literature, there is"
      )
      assert.include(article?.rawContent ?? "", "Full text: https://peerj.com/articles/4375.pdf")
      assert.strictEqual(preprint?.url, "https://arxiv.org/abs/2309.01234")
      assert.isTrue(preprint?.work?.preprint)
      assert.include(preprint?.snippet ?? "", "Mara Lindqvist (2023), arXiv (Cornell University), preprint.")
    })
  )

  it.scopedLive("OpenAlex: the documented 429 is ProviderRateLimited with its Retry-After", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.enqueue("openalex.works", replyOf("openalex-429.json"))
      const error = yield* Effect.flip(
        OpenAlex.make({ baseUrl: emulator.baseUrl("openalex") }).search("q", { maxResults: 2 })
      )
      assert.strictEqual(error._tag, "ProviderRateLimited")
      if (error._tag === "ProviderRateLimited") assert.deepStrictEqual(error.retryAfter, Duration.seconds(2))
    })
  )

  it.scopedLive("PubMed: esearch then efetch with tool and email; structured abstracts, a preprint marked", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.enqueue("pubmed.esearch", replyOf("pubmed-esearch.json"))
      yield* emulator.enqueue("pubmed.efetch", replyOf("pubmed-efetch.json"))
      const pubmed = yield* PubMed.make({ baseUrl: emulator.baseUrl("pubmed"), contact: email })
      const [review, preprint] = yield* pubmed.search("inhaled corticosteroids asthma children", { maxResults: 2 })
      // The recorded esearch, its term in PubMed's syntax (each content term a text word, all of them required).
      assert.deepStrictEqual(yield* sentQueries(emulator, "pubmed.esearch"), [
        {
          ...recordedQuery("pubmed-esearch.json"),
          term: "inhaled*[tw] AND corticosteroid*[tw] AND asthma*[tw] AND children*[tw]"
        }
      ])
      assert.deepStrictEqual(yield* sentQueries(emulator, "pubmed.efetch"), [recordedQuery("pubmed-efetch.json")])
      assert.strictEqual(review?.url, "https://pubmed.ncbi.nlm.nih.gov/36512345/")
      assert.deepStrictEqual(review?.work?.authors, [
        "Chidinma Okafor",
        "Liam Brennan",
        "Paediatric Asthma Review Group"
      ])
      assert.strictEqual(review?.work?.venue, "Pediatric pulmonology")
      assert.strictEqual(review?.work?.year, 2022)
      assert.strictEqual(review?.publishedDate, "2022-12-19")
      assert.strictEqual(review?.work?.doi, "10.1002/ppul.26211")
      assert.isFalse(review?.work?.preprint)
      assert.include(review?.rawContent ?? "", "RESULTS: Twenty-two trials (n = 8,471) were included.")
      assert.include(review?.rawContent ?? "", "Full text: https://www.ncbi.nlm.nih.gov/pmc/articles/PMC9987654/")
      assert.isTrue(preprint?.work?.preprint)
      assert.strictEqual(preprint?.publishedDate, "2024-05-06")
    })
  )

  it.scopedLive("PubMed: NCBI's 429 and its error JSON is ProviderRateLimited, a second to wait", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.enqueue("pubmed.esearch", replyOf("pubmed-429.json"))
      const pubmed = yield* PubMed.make({ baseUrl: emulator.baseUrl("pubmed") })
      const error = yield* Effect.flip(pubmed.search("asthma", { maxResults: 2 }))
      assert.strictEqual(error._tag, "ProviderRateLimited")
      if (error._tag === "ProviderRateLimited") assert.deepStrictEqual(error.retryAfter, Duration.seconds(1))
    })
  )

  it.scopedLive("SearXNG: q, format=json and pageno; results in the instance's order", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.enqueue("searxng.search", replyOf("searxng-search.json"))
      const searxng = Searxng.make({ url: emulator.baseUrl("searxng") })
      const results = yield* searxng.search("heat pump running cost", { maxResults: 5 })
      assert.deepStrictEqual(yield* sentQueries(emulator, "searxng.search"), [recordedQuery("searxng-search.json")])
      assert.deepStrictEqual(
        results.map((r) => [r.url, r.publishedDate]),
        [
          ["https://www.energysavingtrust.org.uk/advice/air-source-heat-pumps/", undefined],
          ["https://en.wikipedia.org/wiki/Heat_pump", "2025-10-28"]
        ]
      )
    })
  )

  it.scopedLive("SearXNG: an answer no engine gave is ProviderUnavailable naming each engine, not 'no results'", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.enqueue("searxng.search", replyOf("searxng-no-engine.json"))
      const error = yield* Effect.flip(
        Searxng.make({ url: emulator.baseUrl("searxng") }).search("q", { maxResults: 5 })
      )
      assert.strictEqual(error._tag, "ProviderUnavailable")
      assert.include(error.message, "duckduckgo: timeout")
      assert.include(error.message, "google: Suspended: too many requests")
    })
  )
})
