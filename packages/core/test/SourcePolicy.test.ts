import { assert, describe, it } from "@effect/vitest"
import { Effect, Option, Ref } from "effect"
import * as Pipeline from "../src/Pipeline.js"
import * as Review from "../src/phases/Review.js"
import { QuestionLanguage, SearchProvider } from "../src/SearchProvider.js"
import { SessionStore } from "../src/SessionStore.js"
import { SearchResult } from "../src/Source.js"
import * as SourcePolicy from "../src/SourcePolicy.js"
import { ScriptedModel, type StaticWeb } from "../src/testing/index.js"
import * as H from "./pipelineHarness.js"

const policy = (settings: Parameters<typeof SourcePolicy.fromSettings>[0]) => SourcePolicy.fromSettings(settings)

const result = (url: string, fields: { provider?: string; publishedDate?: string } = {}): SourcePolicy.Described => ({
  url,
  provider: fields.provider ?? "tavily",
  publishedDate: fields.publishedDate
})

describe("SourcePolicy.check", () => {
  it("a host matches a domain and its subdomains, not a longer name that ends like it", () => {
    const p = policy({ includeDomains: ["https://www.Example.org/"] })
    assert.isUndefined(SourcePolicy.check(p, result("https://example.org/a")))
    assert.isUndefined(SourcePolicy.check(p, result("https://docs.example.org/a")))
    assert.strictEqual(SourcePolicy.check(p, result("https://badexample.org/a")), "outside_included_domains")
    assert.strictEqual(SourcePolicy.check(p, result("file:///notes/a.md")), "outside_included_domains")
  })

  it("an excluded domain wins over an included one", () => {
    const p = policy({ includeDomains: ["example.org"], excludeDomains: ["spam.example.org"] })
    assert.strictEqual(SourcePolicy.check(p, result("https://spam.example.org/x")), "excluded_domain")
  })

  it("a date window removes what is outside it and what has no date; a year must lie wholly inside", () => {
    const p = policy({ since: "2023-01-01", until: "2024-06-30" })
    assert.isUndefined(SourcePolicy.check(p, result("https://a.org", { publishedDate: "2023-05-02T10:00:00Z" })))
    assert.strictEqual(SourcePolicy.check(p, result("https://a.org", { publishedDate: "2022-12-31" })), "before_since")
    assert.strictEqual(SourcePolicy.check(p, result("https://a.org", { publishedDate: "2024-07-01" })), "after_until")
    assert.strictEqual(SourcePolicy.check(p, result("https://a.org")), "undated")
    assert.isUndefined(SourcePolicy.check(p, result("https://a.org", { publishedDate: "2023" })))
    assert.strictEqual(SourcePolicy.check(p, result("https://a.org", { publishedDate: "2024" })), "after_until")
    assert.isUndefined(
      SourcePolicy.check(p, { url: "https://arxiv.org/abs/1", provider: "arxiv", work: { year: 2023 } })
    )
  })

  it("kinds are told by the backend and the host", () => {
    assert.strictEqual(SourcePolicy.kindOf(result("https://x.org/a", { provider: "openalex" })), "academic")
    assert.strictEqual(SourcePolicy.kindOf(result("https://www.nature.com/articles/1")), "academic")
    assert.strictEqual(SourcePolicy.kindOf(result("https://en.wikipedia.org/wiki/A")), "encyclopedia")
    assert.strictEqual(SourcePolicy.kindOf(result("https://www.reuters.com/a")), "news")
    assert.strictEqual(SourcePolicy.kindOf(result("https://blog.example.com/a")), "web")
    assert.strictEqual(SourcePolicy.kindOf(result("/home/me/notes.md", { provider: "local" })), "local")
    const academic = policy({ sources: ["academic"] })
    assert.strictEqual(SourcePolicy.check(academic, result("https://blog.example.com/a")), "kind")
  })

  it("the policy pushed down carries its domains, its dates and the smallest recent window that holds since", () => {
    const p = policy({ includeDomains: ["a.org"], since: "2026-11-01" })
    assert.deepStrictEqual(SourcePolicy.pushdown(p, "2026-11-20"), {
      includeDomains: ["a.org"],
      since: "2026-11-01",
      timeRange: "month"
    })
    assert.isUndefined(SourcePolicy.pushdown(policy({ since: "2020-01-01" }), "2026-11-20").timeRange)
  })
})

/** A web where each topic's query also finds a page outside the policy: a denied domain, an old one, a blog. */
const leakyPages: ReadonlyArray<StaticWeb.Page> = [
  ...H.pages.map((page) => ({ ...page, publishedDate: "2024-03-01" })),
  {
    url: "https://denied.test/alpha",
    title: "Denied ALPHA",
    content: "ALPHA facts: 9000 units.",
    publishedDate: "2024-03-01"
  },
  { url: "https://old.example.org/alpha", title: "Old ALPHA", content: "ALPHA: 1 unit.", publishedDate: "2001-01-01" },
  { url: "https://undated.example.org/alpha", title: "Undated ALPHA", content: "ALPHA: 7 units." }
]

const leakyRoute = (query: string): ReadonlyArray<string> =>
  H.topics
    .filter((keyword) => query.toUpperCase().includes(keyword))
    .flatMap((keyword) =>
      keyword === "ALPHA"
        ? [
            "https://denied.test/alpha",
            "https://old.example.org/alpha",
            "https://undated.example.org/alpha",
            `https://${keyword.toLowerCase()}.example.org/facts`
          ]
        : [`https://${keyword.toLowerCase()}.example.org/facts`]
    )

describe("a run under a source policy", () => {
  it.effect("cites nothing outside the policy, and records what was removed and why", () =>
    Effect.gen(function* () {
      const session = yield* Pipeline.research("What are the latest measurements of the four topics?", {
        sessionId: "policy-run",
        config: { excludeDomains: ["denied.test"], since: "2020-01-01", allowClarification: false }
      })
      assert.strictEqual(session.status, "completed")
      const urls = session.sources.map((s) => s.url)
      assert.notInclude(urls.join(" "), "denied.test")
      assert.notInclude(urls.join(" "), "old.example.org")
      assert.notInclude(urls.join(" "), "undated.example.org")
      assert.include(urls, "https://alpha.example.org/facts")
      const cited = (session.report?.citations ?? []).map((c) => c.url).join(" ")
      assert.notInclude(cited, "denied.test")
      const removed = session.sourcePolicyRemovals
      assert.isDefined(removed)
      assert.strictEqual(removed?.counts.excluded_domain, 1)
      assert.strictEqual(removed?.counts.before_since, 1)
      assert.strictEqual(removed?.counts.undated, 1)
      assert.deepStrictEqual(
        removed?.urls.map((u) => [u.url, u.reason]),
        [
          ["https://denied.test/alpha", "excluded_domain"],
          ["https://old.example.org/alpha", "before_since"],
          ["https://undated.example.org/alpha", "undated"]
        ]
      )
      // What the researcher was shown never named the removed pages.
      const researcherText = (yield* ScriptedModel.calls)
        .filter((c) => c.role === "researcher")
        .map((c) => H.requestText(c.request))
        .join("\n")
      assert.notInclude(researcherText, "9000 units")
      const stored = yield* (yield* SessionStore).load("policy-run")
      assert.strictEqual(stored.sourcePolicyRemovals?.total, 3)
    }).pipe(Effect.provide(H.world({ web: { pages: leakyPages, route: leakyRoute } })))
  )

  it.effect("under --sources academic, a blog's result is left out and a journal's kept", () =>
    Effect.gen(function* () {
      const session = yield* Pipeline.research("What are the latest measurements of ALPHA?", {
        sessionId: "policy-academic",
        config: { sources: ["academic"], allowClarification: false }
      })
      assert.deepStrictEqual(
        session.sources.map((s) => s.url),
        ["https://www.nature.com/articles/alpha"]
      )
      assert.deepStrictEqual(
        (session.report?.citations ?? []).map((c) => c.url),
        ["https://www.nature.com/articles/alpha"]
      )
      assert.deepStrictEqual(
        session.sourcePolicyRemovals?.urls.map((u) => [u.url, u.reason]),
        [["https://blog.example.com/alpha", "kind"]]
      )
    }).pipe(
      Effect.provide(
        H.world({
          scripts: H.scripts({ supervisor: [H.delegate("ALPHA"), H.complete] }),
          web: {
            pages: [
              { url: "https://blog.example.com/alpha", title: "A blog on ALPHA", content: "ALPHA: 5 units, trust me." },
              { url: "https://www.nature.com/articles/alpha", title: "ALPHA measured", content: "ALPHA: 42 units." }
            ],
            route: () => ["https://blog.example.com/alpha", "https://www.nature.com/articles/alpha"]
          }
        })
      )
    )
  )

  it.effect("a page a researcher asks to extract outside the policy is not fetched, and is recorded", () =>
    Effect.gen(function* () {
      const extracted: Array<string> = []
      const researcher: ScriptedModel.Script = (request) => {
        const turn = request.messages.filter((m) => m._tag === "assistant").length
        if (turn === 0) {
          return { toolCalls: [{ name: "extractContent", arguments: { urls: ["https://denied.test/alpha"] } }] }
        }
        if (turn === 1) return { toolCalls: [{ name: "webSearch", arguments: { queries: ["ALPHA facts"] } }] }
        return { toolCalls: [{ name: "researchComplete", arguments: { summary: "ALPHA was measured [1]." } }] }
      }
      const session = yield* Pipeline.research("What are the latest measurements of ALPHA?", {
        sessionId: "policy-extract",
        config: { excludeDomains: ["denied.test"], allowClarification: false }
      }).pipe(
        Effect.provide(
          H.world({
            scripts: H.scripts({ supervisor: [H.delegate("ALPHA"), H.complete], researcher }),
            web: {
              pages: leakyPages,
              route: leakyRoute,
              failExtract: (urls) => {
                extracted.push(...urls)
                return undefined
              }
            }
          })
        )
      )
      assert.deepStrictEqual(extracted, [])
      assert.strictEqual(session.sourcePolicyRemovals?.counts.excluded_domain, 2)
      assert.notInclude(session.sources.map((s) => s.url).join(" "), "denied.test")
    })
  )

  it.effect("a run whose every source was removed says so as an unsourced run does", () =>
    Effect.gen(function* () {
      const session = yield* Pipeline.research("What are the latest measurements of the four topics?", {
        sessionId: "policy-empty",
        config: { includeDomains: ["nowhere.test"], allowClarification: false }
      })
      assert.strictEqual(session.sources.length, 0)
      assert.strictEqual(session.report?.grounding?.reason, "policy")
      assert.include(session.report?.markdown ?? "", "The source policy removed everything the searches found.")
      assert.isAbove(session.sourcePolicyRemovals?.counts.outside_included_domains ?? 0, 0)
    }).pipe(Effect.provide(H.world({ web: { pages: leakyPages, route: leakyRoute } })))
  )

  it.effect("a search under the policy asks the backend for its domains and dates", () =>
    Effect.gen(function* () {
      const asked = yield* Ref.make<ReadonlyArray<unknown>>([])
      const search = {
        name: "recording",
        search: (_query: string, options: object) =>
          Effect.as(
            Ref.update(asked, (all) => [...all, options]),
            [new SearchResult({ url: "https://alpha.example.org/facts", title: "t", snippet: "s", provider: "x" })]
          )
      }
      yield* Pipeline.research("ALPHA?", {
        sessionId: "policy-pushdown",
        config: { includeDomains: ["example.org"], until: "2025-01-01", allowClarification: false }
      }).pipe(
        Effect.provideService(SearchProvider, search),
        Effect.provide(H.world({ scripts: H.scripts({ supervisor: [H.delegate("ALPHA"), H.complete] }) }))
      )
      const first = (yield* Ref.get(asked))[0]
      assert.deepInclude(first, { includeDomains: ["example.org"], until: "2025-01-01" })
    })
  )
})

describe("a reviewed run", () => {
  it.effect("stops before any search awaiting review, then researches the edited directives", () => {
    const searched: Array<string> = []
    const world = H.world({
      web: {
        failSearch: (query) => {
          searched.push(query)
          return undefined
        }
      }
    })
    return Effect.gen(function* () {
      const waiting = yield* Pipeline.research("What are the latest measurements of the four topics?", {
        sessionId: "reviewed",
        config: { review: true, allowClarification: false }
      }).pipe(Review.awaiting)
      assert.strictEqual(waiting.status, "awaiting_review")
      assert.strictEqual(waiting.review?.decision, "pending")
      assert.deepStrictEqual(searched, [])
      assert.strictEqual(waiting.rounds[0]?.directives.length, 4)
      assert.strictEqual(waiting.rounds[0]?.results.length, 0)
      // The supervisor's planning call is in the ledger.
      assert.isAbove(waiting.usage.find((u) => u.role === "supervisor")?.calls ?? 0, 0)

      const edited = yield* Pipeline.resume("reviewed", {
        review: {
          action: "edit",
          brief: "Only BRAVO matters.",
          directives: [H.directive("BRAVO").topic]
        }
      })
      assert.strictEqual(edited.status, "completed")
      assert.strictEqual(edited.brief?.brief, "Only BRAVO matters.")
      assert.strictEqual(edited.review?.decision, "edited")
      assert.strictEqual(edited.review?.originalDirectives?.length, 4)
      assert.deepStrictEqual(
        edited.rounds[0]?.directives.map((d) => H.keywordOf(d.directive.topic)),
        ["BRAVO"]
      )
      assert.deepStrictEqual(searched, ["bravo facts"])
    }).pipe(Effect.provide(world))
  })

  it.effect("off a terminal with nobody to answer, a review never blocks: the run says so and goes on", () =>
    Effect.gen(function* () {
      const session = yield* Pipeline.research("What are the latest measurements of the four topics?", {
        sessionId: "unreviewed",
        config: { review: true, allowClarification: false }
      })
      assert.strictEqual(session.status, "completed")
      assert.strictEqual(session.review?.decision, "unanswered")
      assert.strictEqual(session.rounds[0]?.results.length, 4)
    }).pipe(Effect.provide(H.world({})))
  )

  it.effect("a cancelled review leaves the session cancelled, its plan kept, nothing searched", () =>
    Effect.gen(function* () {
      yield* Pipeline.research("What are the latest measurements of the four topics?", {
        sessionId: "cancelled-review",
        config: { review: true, allowClarification: false }
      }).pipe(Review.awaiting)
      const cancelled = yield* Pipeline.resume("cancelled-review", { review: { action: "cancel" } })
      assert.strictEqual(cancelled.status, "cancelled")
      assert.strictEqual(cancelled.sources.length, 0)
      assert.strictEqual(cancelled.rounds[0]?.directives.length, 4)
    }).pipe(Effect.provide(H.world({})))
  )
})

describe("a report language apart from the question's", () => {
  it.effect("writes the report and its notices in the report's language, and searches in the question's", () =>
    Effect.gen(function* () {
      const languages: Array<string> = []
      const search = {
        name: "recording",
        search: () =>
          Effect.map(Effect.serviceOption(QuestionLanguage), (language) => {
            languages.push(Option.getOrElse(language, () => "none"))
            return [
              new SearchResult({ url: "https://alpha.example.org/facts", title: "t", snippet: "s", provider: "x" })
            ]
          })
      }
      const session = yield* Pipeline.research("What are the latest measurements of ALPHA?", {
        sessionId: "report-language",
        config: { reportLanguage: "German", allowClarification: false }
      }).pipe(
        Effect.provideService(SearchProvider, search),
        Effect.provide(H.world({ scripts: H.scripts({ supervisor: [H.delegate("ALPHA"), H.complete] }) }))
      )
      assert.strictEqual(session.report?.language, "German")
      assert.include(session.report?.markdown ?? "", "## Quellen")
      assert.include(session.report?.markdown ?? "", "Zitatprüfung:")
      assert.isAbove(languages.length, 0)
      assert.deepStrictEqual([...new Set(languages)], ["en"])
    })
  )
})
