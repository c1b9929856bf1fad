/**
 * Every recorded Tavily payload in `fixtures/vendor-cassettes/tavily/`, replayed through the emulator into the real
 * SDK and the Tavily provider: the results decode to the recorded values, and the request the provider sends for the
 * same options carries every recorded request field.
 */
import type { SearchProvider } from "@deep-research/core"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Redacted, Schema } from "effect"
import { readdirSync, readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { Emulator } from "@deep-research/emulator"
import * as Tavily from "../../src/search/Tavily.js"

const directory = fileURLToPath(new URL("../fixtures/vendor-cassettes/tavily/", import.meta.url))

const replayed = {
  searchBasic: "search-basic.json",
  searchAdvanced: "search-advanced-include-domains.json",
  extractAdvanced: "extract-advanced.json"
} as const

const Recorded = Schema.Struct({
  request: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
  response: Schema.Struct({
    body: Schema.Struct({
      results: Schema.Array(
        Schema.Struct({
          url: Schema.String,
          title: Schema.String,
          content: Schema.optional(Schema.String),
          raw_content: Schema.NullOr(Schema.String),
          score: Schema.optional(Schema.Number)
        })
      )
    })
  })
})

const recorded = (file: string) =>
  Schema.decodeUnknownSync(Schema.parseJson(Recorded))(readFileSync(`${directory}${file}`, "utf8"))

const servicesFor = (file: string, options: Partial<Tavily.Options> = {}) =>
  Effect.gen(function* () {
    const emulator = yield* Emulator.start()
    yield* emulator.replay(`${directory}${file}`)
    const services = yield* Tavily.make({
      apiKey: Redacted.make("tvly-emulator"),
      baseUrl: emulator.baseUrl("tavily"),
      ...options
    })
    return { emulator, ...services }
  })

const replaySearch = (file: string, query: string, options: SearchProvider.SearchOptions) =>
  Effect.gen(function* () {
    const { emulator, search } = yield* servicesFor(file)
    const results = yield* search.search(query, options)
    const [request] = yield* emulator.requests("tavily.search")
    return { results, request }
  })

describe("Tavily cassettes", () => {
  it("every recorded Tavily cassette is replayed below", () => {
    assert.deepStrictEqual(readdirSync(directory).sort(), Object.values(replayed).sort())
  })

  it.scopedLive("a basic search decodes every result to the recorded url, title, content and score", () =>
    Effect.gen(function* () {
      const cassette = recorded(replayed.searchBasic)
      const { results, request } = yield* replaySearch(replayed.searchBasic, "What is Pydantic AI?", {
        maxResults: 5,
        depth: "basic",
        topic: "general"
      })
      assert.deepStrictEqual(
        results.map((r) => [r.url, r.title, r.snippet, r.score, r.rawContent, r.provider]),
        cassette.response.body.results.map((r) => [r.url, r.title, r.content, r.score, undefined, "tavily"])
      )
      assert.strictEqual(results[1]?.url, "https://ai.pydantic.dev/")
      assert.strictEqual(results[1]?.title, "Pydantic AI - Pydantic AI")
      assert.strictEqual(results[0]?.score, 0.9999875)
      assert.deepInclude(request?.body, cassette.request)
    })
  )

  it.scopedLive("an advanced search restricted to a domain sends the recorded request and decodes ten results", () =>
    Effect.gen(function* () {
      const cassette = recorded(replayed.searchAdvanced)
      const { results, request } = yield* replaySearch(
        replayed.searchAdvanced,
        "current iPhone models and prices on apple.com",
        { maxResults: 10, depth: "advanced", topic: "general", includeDomains: ["apple.com"] }
      )
      assert.deepInclude(request?.body, cassette.request)
      assert.strictEqual(results.length, 10)
      assert.deepStrictEqual(
        results.map((r) => [r.url, r.title, r.snippet, r.score]),
        cassette.response.body.results.map((r) => [r.url, r.title, r.content, r.score])
      )
      assert.strictEqual(results[0]?.url, "https://www.apple.com/shop/buy-iphone/iphone-16")
      assert.isTrue(results[0]?.snippet.startsWith("Apple Fitness+\n\n### Apple Fitness+"))
    })
  )

  it.scopedLive("an advanced extract of three URLs decodes three pages with their full markdown", () =>
    Effect.gen(function* () {
      const cassette = recorded(replayed.extractAdvanced)
      const urls = cassette.response.body.results.map((r) => r.url)
      const { emulator, extractor } = yield* servicesFor(replayed.extractAdvanced, { extractDepth: "advanced" })
      const results = yield* extractor.extract(urls)
      assert.deepStrictEqual(
        results.map((r) => (r._tag === "ExtractedPage" ? [r.url, r.title, r.content] : [r.url, r.reason])),
        cassette.response.body.results.map((r) => [r.url, r.title, r.raw_content])
      )
      assert.deepStrictEqual(
        results.map((r) => r._tag),
        ["ExtractedPage", "ExtractedPage", "ExtractedPage"]
      )
      const [request] = yield* emulator.requests("tavily.extract")
      assert.deepInclude(request?.body, cassette.request)
    })
  )
})
