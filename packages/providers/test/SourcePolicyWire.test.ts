/**
 * The source policy over the wire: a whole run of the real providers against the emulator (the simulated models, Tavily
 * scripted to answer every search with a denied domain, a page of 2001 and a blog beside one journal article). Tavily
 * was asked with the policy pushed down, and answered outside it all the same, as vendors' filters leak: the run cites
 * the journal article alone, nothing it read names the others, and the session says what was removed and why.
 */
import { ModelRouter, Pipeline, Summarizer } from "@deep-research/core"
import { MemorySessionStore } from "@deep-research/core/testing"
import { Emulator } from "@deep-research/emulator"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { OpenAiLanguageModel, Tavily } from "../src/index.js"

const kept = "https://www.nature.com/articles/solar-2024"
const outside = {
  denied: "https://www.denied.test/solar",
  old: "https://www.nature.com/articles/solar-2001",
  blog: "https://blog.example.com/solar"
}

const answer = Emulator.tavilyResults([
  { url: outside.denied, title: "Denied", content: "DENIED-FACT: 9000 GW.", publishedDate: "2024-05-01" },
  { url: outside.old, title: "Old", content: "OLD-FACT: 1 GW.", publishedDate: "2001-01-01" },
  { url: outside.blog, title: "Blog", content: "BLOG-FACT: 77 GW.", publishedDate: "2024-05-02" },
  {
    url: kept,
    title: "Solar in 2024",
    content: "Europe added 65 GW of solar power in 2024.",
    publishedDate: "2024-06-01"
  }
])

describe("a run under a source policy, over the wire", () => {
  it.scoped("cites none of what the backend returned outside the policy, and records each removal", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* Emulator.simulate(emulator, { directives: 2 })
      yield* emulator.respond("tavily.search", answer)
      const model = yield* OpenAiLanguageModel.make({
        model: "gpt-4.1",
        apiKey: "sk-test",
        baseUrl: emulator.baseUrl("openai")
      })
      const services = Layer.mergeAll(
        Summarizer.layer,
        Tavily.layer({ apiKey: Redacted.make("tvly-test"), baseUrl: emulator.baseUrl("tavily") }),
        MemorySessionStore.layer
      ).pipe(Layer.provideMerge(ModelRouter.layer({ default: model })))
      const session = yield* Pipeline.research("How much solar power did Europe add in 2024?", {
        config: {
          excludeDomains: ["denied.test"],
          since: "2020-01-01",
          sources: ["academic"],
          allowClarification: false
        }
      }).pipe(Effect.provide(services))
      assert.strictEqual(session.status, "completed")

      const searches = yield* emulator.requests("tavily.search")
      assert.isAbove(searches.length, 0)
      for (const request of searches) {
        assert.deepInclude(request.body, { exclude_domains: ["denied.test"], start_date: "2020-01-01" })
      }

      assert.deepStrictEqual(
        session.sources.map((s) => s.url),
        [kept]
      )
      const cited = (session.report?.citations ?? []).map((c) => c.url)
      assert.deepStrictEqual(cited, [kept])
      const markdown = session.report?.markdown ?? ""
      for (const url of Object.values(outside)) assert.notInclude(markdown, url)
      // What the models were sent after the searches never held what the policy removed.
      const sent = (yield* emulator.requests("openai.chat")).map((r) => JSON.stringify(r.body)).join("\n")
      for (const fact of ["DENIED-FACT", "OLD-FACT", "BLOG-FACT"]) assert.notInclude(sent, fact)
      assert.include(sent, "65 GW")

      const removed = session.sourcePolicyRemovals
      assert.deepStrictEqual(
        removed?.urls.map((u) => [u.url, u.reason]),
        [
          [outside.denied, "excluded_domain"],
          [outside.old, "before_since"],
          [outside.blog, "kind"]
        ]
      )
      // Each removal is counted (a result every search returned, once a search), each URL listed once.
      const { before_since, excluded_domain, kind } = removed?.counts ?? {
        before_since: 0,
        excluded_domain: 0,
        kind: 0
      }
      assert.isAtLeast(excluded_domain, 1)
      assert.deepStrictEqual([before_since, kind], [excluded_domain, excluded_domain])
      assert.strictEqual(removed?.total, 3 * excluded_domain)
    })
  )
})
