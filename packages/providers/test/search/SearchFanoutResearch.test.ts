/**
 * Several search providers under a whole research run: core's pipeline (scripted models, a static web for reading
 * pages, a memory store, the event stream) searching through a `SearchFanout`. What a researcher sees when every
 * provider fails, and when only some do.
 */
import {
  ContentExtractor,
  Errors,
  LanguageModel,
  Pipeline,
  ResearchEvents,
  SearchProvider,
  SessionStore,
  Summarizer
} from "@deep-research/core"
import { MemorySessionStore, ScriptedModel, StaticWeb } from "@deep-research/core/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Ref } from "effect"
import * as SearchFanout from "../../src/search/SearchFanout.js"

const alpha = "https://alpha.example.org/facts"
const alphaHistory = "https://alpha.example.org/history"

const pages: ReadonlyArray<StaticWeb.Page> = [
  { url: alpha, title: "Facts about ALPHA", content: "ALPHA was measured at 42 units in 2024 by the ALPHA institute." },
  { url: alphaHistory, title: "History of ALPHA", content: "ALPHA was first measured in 1990 at 17 units." }
]

/** A provider that always fails with `error`, and counts its calls. */
const failing = (name: string, error: Errors.ProviderError) =>
  Effect.gen(function* () {
    const calls = yield* Ref.make(0)
    const provider: SearchProvider.Service = {
      name,
      search: () =>
        Effect.zipRight(
          Ref.update(calls, (n) => n + 1),
          Effect.fail(error)
        )
    }
    return { provider, calls: Ref.get(calls) }
  })

/** A provider serving the static web: each query finds the pages its route names. */
const serving = (name: string) =>
  Effect.map(
    StaticWeb.make({
      name,
      pages,
      route: (query) => (query.includes("history") ? [alphaHistory] : query.includes("facts") ? [alpha] : [])
    }),
    (web) => web.search
  )

const directive = {
  topic: "Investigate ALPHA thoroughly: what it is, the latest measurements, and who measured them.",
  perspective: "measurements",
  evidenceNeeded: "primary measurements",
  priority: 1
}

/** A researcher that runs the given searches, one a turn, then completes. */
const researcher =
  (queries: ReadonlyArray<string>): ScriptedModel.Script =>
  (request) => {
    const turn = request.messages.filter((m) => m._tag === "assistant").length
    const query = queries[turn]
    return query !== undefined
      ? ScriptedModel.toolCalls({ name: "webSearch", arguments: { queries: [query] } })
      : ScriptedModel.toolCalls({ name: "researchComplete", arguments: { summary: "What the searches gave." } })
  }

const scripts = (queries: ReadonlyArray<string>): ScriptedModel.RouterScripts => ({
  default: ["unexpected call"],
  roles: {
    clarification: [
      ScriptedModel.json({ needClarification: false, question: "", verification: "Research ALPHA's measurements." })
    ],
    brief: [
      ScriptedModel.json({
        brief: "I want the latest measurements of ALPHA and who made them.",
        scope: { include: ["measurements"], exclude: [] },
        sourcePreferences: ["the measuring institute"],
        language: "English"
      })
    ],
    supervisor: [
      ScriptedModel.toolCalls({ name: "conductResearch", arguments: directive }),
      ScriptedModel.toolCalls({ name: "researchComplete", arguments: {} })
    ],
    researcher: researcher(queries),
    compression: [
      "## Findings\nWhat the research found about ALPHA.\n\n## Supervisor brief\nCovered: ALPHA\nKey findings: " +
        "see findings\nConfidence: low\nGaps: measurements"
    ],
    summarization: [ScriptedModel.json({ summary: "summary", excerpts: [] })],
    report: ["# ALPHA\n\nWhat could be found about ALPHA."]
  }
})

/** Everything a run needs, searching through `search`. */
const world = (search: SearchProvider.Service, queries: ReadonlyArray<string>) =>
  Layer.unwrapEffect(
    Effect.map(StaticWeb.make({ pages }), (web) =>
      Layer.mergeAll(
        Layer.provideMerge(Summarizer.layer, ScriptedModel.layerRouter(scripts(queries))),
        Layer.succeed(SearchProvider.SearchProvider, search),
        Layer.succeed(ContentExtractor.ContentExtractor, web.extractor),
        MemorySessionStore.layer,
        ResearchEvents.layer
      )
    )
  )

/** The webSearch results the researcher was given, in order (read from the request after each search). */
const searchResultsSeen = Effect.map(ScriptedModel.calls, (calls) => {
  const researcherCalls = calls.filter((c) => c.role === "researcher")
  const last = researcherCalls[researcherCalls.length - 1]
  return (last?.request.messages ?? []).flatMap((m) =>
    m instanceof LanguageModel.ToolResultMessage && m.name === "webSearch" ? [m] : []
  )
})

const eventsOf = (sessionId: string) => Effect.flatMap(SessionStore.SessionStore, (store) => store.events(sessionId))

describe("SearchFanout in a research run", () => {
  it.effect(
    "when every provider fails, the researcher gets a tool error naming each failure and the run completes",
    () =>
      Effect.gen(function* () {
        const tavily = yield* failing("tavily", new Errors.ProviderUnavailable({ provider: "tavily", status: 503 }))
        const exa = yield* failing("exa", new Errors.ProviderQuotaExhausted({ provider: "exa" }))
        const fanout = yield* SearchFanout.make({ providers: [tavily.provider, exa.provider] })
        yield* Effect.gen(function* () {
          const session = yield* Pipeline.research("What are the latest measurements of ALPHA?", {
            sessionId: "all-fail"
          })

          const [result, ...more] = yield* searchResultsSeen
          assert.lengthOf(more, 0)
          assert.isTrue(result?.isError)
          const content = result?.content ?? ""
          assert.include(content, 'Search "ALPHA facts" failed')
          assert.include(content, "every search provider failed")
          assert.include(content, "tavily: tavily is unavailable (status 503)")
          assert.include(content, "exa: exa quota or credit is exhausted")

          assert.strictEqual(session.status, "completed")
          assert.include(session.report?.markdown ?? "", "What could be found about ALPHA.")
          assert.lengthOf(session.sources, 0)

          const skipped = (yield* eventsOf("all-fail")).flatMap((e) =>
            e._tag === "ProviderSkipped" ? [[e.sessionId, e.provider]] : []
          )
          assert.sameDeepMembers(skipped, [
            ["all-fail", "tavily"],
            ["all-fail", "exa"]
          ])
          assert.strictEqual(yield* tavily.calls, 1)
          assert.strictEqual(yield* exa.calls, 1)
        }).pipe(Effect.provide(world(fanout, ["ALPHA facts"])))
      })
  )

  it.effect("when one provider fails, results come from the other, and the failing one is skipped next time", () =>
    Effect.gen(function* () {
      const healthy = yield* serving("tavily")
      const exa = yield* failing("exa", new Errors.ProviderUnavailable({ provider: "exa", status: 502 }))
      const fanout = yield* SearchFanout.make({ providers: [healthy, exa.provider] })
      yield* Effect.gen(function* () {
        const session = yield* Pipeline.research("What are the latest measurements of ALPHA?", {
          sessionId: "one-fails"
        })

        const results = yield* searchResultsSeen
        assert.deepStrictEqual(
          results.map((r) => r.isError),
          [false, false]
        )
        assert.include(results[0]?.content ?? "", alpha)
        assert.include(results[1]?.content ?? "", alphaHistory)
        // the first search found exa failing; the second, within its cooldown, did not ask it
        assert.strictEqual(yield* exa.calls, 1)
        const [tavilyHealth, exaHealth] = yield* fanout.health
        assert.strictEqual(tavilyHealth?.pausedUntil, 0)
        assert.isAbove(exaHealth?.pausedUntil ?? 0, 0)

        assert.strictEqual(session.status, "completed")
        assert.deepStrictEqual(
          session.sources.map((s) => [s.url, s.provider]),
          [
            [alpha, "tavily"],
            [alphaHistory, "tavily"]
          ]
        )

        const skipped = (yield* eventsOf("one-fails")).flatMap((e) =>
          e._tag === "ProviderSkipped" ? [[e.sessionId, e.provider, e.reason]] : []
        )
        assert.lengthOf(skipped, 1)
        assert.deepStrictEqual(skipped[0]?.slice(0, 2), ["one-fails", "exa"])
        assert.include(String(skipped[0]?.[2]), "exa is unavailable (status 502); skipped for 1m")
      }).pipe(Effect.provide(world(fanout, ["ALPHA facts", "ALPHA history"])))
    })
  )
})
