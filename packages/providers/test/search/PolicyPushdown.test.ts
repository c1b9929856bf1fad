/**
 * A source policy's domains and date window, pushed down to each backend that can filter, as each vendor documents
 * it: read from the request the emulator received, through the real SDK where there is one. (The native searches of
 * OpenAI and Anthropic take domains only: their tests are with theirs.)
 */
import type { SearchProvider } from "@deep-research/core"
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Redacted } from "effect"
import { Emulator } from "@deep-research/emulator"
import * as Arxiv from "../../src/search/Arxiv.js"
import * as Exa from "../../src/search/Exa.js"
import * as OpenAlex from "../../src/search/OpenAlex.js"
import * as Perplexity from "../../src/search/Perplexity.js"
import * as PubMed from "../../src/search/PubMed.js"
import * as Searxng from "../../src/search/Searxng.js"
import * as SemanticScholar from "../../src/search/SemanticScholar.js"
import * as Tavily from "../../src/search/Tavily.js"

/** What a policy of only a.org, never b.a.org, from 2023-01-01 to 2024-06-30 sends with a search. */
const policed: SearchProvider.SearchOptions = {
  maxResults: 3,
  includeDomains: ["a.org"],
  excludeDomains: ["b.a.org"],
  since: "2023-01-01",
  until: "2024-06-30"
}

describe("a source policy pushed down", () => {
  it.scopedLive("Tavily gets include_domains, exclude_domains, start_date and end_date", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("tavily.search", Emulator.tavilyResults([]))
      const { search } = yield* Tavily.make({
        apiKey: Redacted.make("tvly-emulator"),
        baseUrl: emulator.baseUrl("tavily")
      })
      yield* search.search("coral reefs", policed)
      const [request] = yield* emulator.requests("tavily.search")
      assert.deepInclude(request?.body, {
        include_domains: ["a.org"],
        exclude_domains: ["b.a.org"],
        start_date: "2023-01-01",
        end_date: "2024-06-30"
      })
    })
  )

  it.scopedLive("Exa gets includeDomains, excludeDomains, startPublishedDate and endPublishedDate", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("exa.search", Emulator.exaResults([]))
      const exa = Exa.make({ apiKey: Redacted.make("exa-emulator"), baseUrl: emulator.baseUrl("exa") })
      yield* exa.search.search("coral reefs", policed)
      const [request] = yield* emulator.requests("exa.search")
      assert.deepInclude(request?.body, {
        includeDomains: ["a.org"],
        excludeDomains: ["b.a.org"],
        startPublishedDate: "2023-01-01T00:00:00.000Z",
        endPublishedDate: "2024-06-30T23:59:59.999Z"
      })
    })
  )

  it.scopedLive("arXiv gets a submittedDate range in search_query", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("arxiv.query", Emulator.arxivFeed([]))
      const arxiv = yield* Arxiv.make({ baseUrl: emulator.baseUrl("arxiv"), interval: Duration.millis(1) })
      yield* arxiv.search("sparse attention", policed)
      const [request] = yield* emulator.requests("arxiv.query")
      assert.strictEqual(
        request?.query["search_query"],
        "(all:sparse AND all:attention) AND submittedDate:[202301010000 TO 202406302359]"
      )
    })
  )

  it.scopedLive("OpenAlex gets from_publication_date and to_publication_date filters", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("openalex.works", Emulator.openalexWorks([]))
      yield* OpenAlex.make({ baseUrl: emulator.baseUrl("openalex") }).search("heat pumps", policed)
      const [request] = yield* emulator.requests("openalex.works")
      assert.strictEqual(request?.query["filter"], "from_publication_date:2023-01-01,to_publication_date:2024-06-30")
    })
  )

  it.scopedLive("PubMed gets datetype=pdat with mindate and maxdate", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("pubmed.esearch", Emulator.pubmedSearch([]))
      const pubmed = yield* PubMed.make({ baseUrl: emulator.baseUrl("pubmed") })
      yield* pubmed.search("statins", policed)
      const [request] = yield* emulator.requests("pubmed.esearch")
      assert.strictEqual(request?.query["datetype"], "pdat")
      assert.strictEqual(request?.query["mindate"], "2023/01/01")
      assert.strictEqual(request?.query["maxdate"], "2024/06/30")
    })
  )

  it.scopedLive("SearXNG gets the time_range the policy's since fits in", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("searxng.search", Emulator.searxngResults([]))
      // The policy's recent window, as `SourcePolicy.pushdown` makes it from since.
      yield* Effect.ignore(
        Searxng.make({ url: emulator.baseUrl("searxng") }).search("q", { maxResults: 2, timeRange: "month" })
      )
      const [request] = yield* emulator.requests("searxng.search")
      assert.strictEqual(request?.query["time_range"], "month")
    })
  )

  it.scopedLive("Perplexity gets search_after_date_filter and search_before_date_filter, as %m/%d/%Y", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("perplexity.chat", Emulator.perplexityAnswer("Nothing."))
      const sonar = Perplexity.make({ apiKey: Redacted.make("pplx-emulator"), baseUrl: emulator.baseUrl("perplexity") })
      // The policy's recent window comes with its dates (`SourcePolicy.pushdown`): the dates stand in its place.
      yield* sonar.search("coral reefs", { ...policed, timeRange: "year" })
      const [request] = yield* emulator.requests("perplexity.chat")
      assert.deepInclude(request?.body, {
        search_domain_filter: ["a.org", "-b.a.org"],
        search_after_date_filter: "01/01/2023",
        search_before_date_filter: "06/30/2024"
      })
      assert.notProperty(request?.body, "search_recency_filter")
    })
  )

  it.scopedLive("Semantic Scholar gets a publicationDateOrYear range", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("semanticScholar.search", Emulator.semanticScholarPapers([]))
      const scholar = SemanticScholar.make({ baseUrl: emulator.baseUrl("semanticScholar") })
      yield* scholar.search("sparse attention", policed)
      yield* scholar.search("sparse attention", { maxResults: 3, since: "2023-01-01" })
      const [both, open] = yield* emulator.requests("semanticScholar.search")
      assert.strictEqual(both?.query["publicationDateOrYear"], "2023-01-01:2024-06-30")
      assert.strictEqual(open?.query["publicationDateOrYear"], "2023-01-01:")
    })
  )

  it.scopedLive("Tavily gets at most the 150 excluded domains it takes, of a policy's 200", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("tavily.search", Emulator.tavilyResults([]))
      const { search } = yield* Tavily.make({
        apiKey: Redacted.make("tvly-emulator"),
        baseUrl: emulator.baseUrl("tavily")
      })
      const excluded = Array.from({ length: 200 }, (_, i) => `spam${i}.example`)
      yield* search.search("coral reefs", { maxResults: 3, excludeDomains: excluded })
      const [request] = yield* emulator.requests("tavily.search")
      assert.deepStrictEqual(Reflect.get(Object(request?.body), "exclude_domains"), excluded.slice(0, 150))
    })
  )
})
