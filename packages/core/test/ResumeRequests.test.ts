/**
 * What was fetched survives a resume: the searches, extractions and summaries a killed run was answered are
 * journaled to the session's store, and the resumed run takes them from there instead of sending them again.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Fiber, HashMap, Layer, Logger, Option, Ref, TestClock } from "effect"
import * as ContentExtractor from "../src/ContentExtractor.js"
import * as RequestJournal from "../src/internal/session/requestJournal.js"
import * as Pipeline from "../src/Pipeline.js"
import * as ResearchEvents from "../src/ResearchEvents.js"
import * as SearchProvider from "../src/SearchProvider.js"
import { SessionStore } from "../src/SessionStore.js"
import * as Summarizer from "../src/Summarizer.js"
import { MemorySessionStore, ScriptedModel, StaticWeb } from "../src/testing/index.js"
import * as H from "./pipelineHarness.js"

const factsUrl = (keyword: string) => `https://${keyword.toLowerCase()}.example.org/facts`
const moreUrl = (keyword: string) => `https://${keyword.toLowerCase()}.example.org/more`

/** Two pages per topic, long enough to be summarised: one found by searching, one read by URL. */
const pages: ReadonlyArray<StaticWeb.Page> = H.topics.flatMap((keyword) => [
  {
    url: factsUrl(keyword),
    title: `Facts about ${keyword}`,
    content: `${keyword} facts: ${keyword} was measured at 42 units in 2024 by the ${keyword} institute. `.repeat(6)
  },
  {
    url: moreUrl(keyword),
    title: `More about ${keyword}`,
    content: `More on ${keyword}: the ${keyword} institute repeated the measurement in 2025 and found 43. `.repeat(6)
  }
])

/**
 * A researcher that searches, then reads a second page, then completes; CHARLIE's and DELTA's hang before completing
 * while `hold` is set, after telling `waiting`: their searches, extractions and summaries are answered by then.
 */
const holdingResearcher = Effect.gen(function* () {
  const hold = yield* Ref.make(true)
  const waiting = yield* Ref.make(0)
  const script: ScriptedModel.Script = (request) =>
    Effect.gen(function* () {
      const keyword = H.keywordOf(H.assignmentOf(request))
      const turn = request.messages.filter((m) => m._tag === "assistant").length
      if (turn === 0) return { toolCalls: [{ name: "webSearch", arguments: { queries: [`${keyword} facts`] } }] }
      if (turn === 1) return { toolCalls: [{ name: "extractContent", arguments: { urls: [moreUrl(keyword)] } }] }
      if ((keyword === "CHARLIE" || keyword === "DELTA") && (yield* Ref.get(hold))) {
        yield* Ref.update(waiting, (n) => n + 1)
        return yield* Effect.never
      }
      return {
        toolCalls: [
          { name: "researchComplete", arguments: { summary: `${keyword} was measured at 42 units in 2024 [1].` } }
        ]
      }
    })
  return { hold, script, waiting }
})

/** The scripted world over a static web whose searches and extractions are counted as they reach it. */
const countingWorld = (researcher: ScriptedModel.Script) =>
  Effect.gen(function* () {
    const searches = yield* Ref.make<ReadonlyArray<string>>([])
    const extracts = yield* Ref.make<ReadonlyArray<string>>([])
    const web = yield* StaticWeb.make({
      pages,
      route: (query) => H.topics.filter((keyword) => query.toUpperCase().includes(keyword)).map(factsUrl)
    })
    const search: SearchProvider.Service = {
      name: web.search.name,
      search: (query, options) =>
        Effect.zipRight(
          Ref.update(searches, (all) => [...all, query]),
          web.search.search(query, options)
        )
    }
    const extractor: ContentExtractor.Service = {
      name: web.extractor.name,
      extract: (urls) =>
        Effect.zipRight(
          Ref.update(extracts, (all) => [...all, ...urls]),
          web.extractor.extract(urls)
        )
    }
    const layer = Layer.mergeAll(
      Layer.provideMerge(Summarizer.layer, ScriptedModel.layerRouter(H.scripts({ researcher }))),
      Layer.succeed(SearchProvider.SearchProvider, search),
      Layer.succeed(ContentExtractor.ContentExtractor, extractor),
      MemorySessionStore.layer,
      ResearchEvents.layer
    )
    return { searches, extracts, layer }
  })

/** Yields, and moves the test clock a second, until `condition` holds. */
const eventually = <E, R>(condition: Effect.Effect<boolean, E, R>) =>
  Effect.gen(function* () {
    for (let i = 0; i < 2_000; i++) {
      if (yield* Effect.orElseSucceed(condition, () => false)) return
      yield* Effect.yieldNow()
      if (i % 100 === 99) yield* TestClock.adjust("1 second")
    }
    return yield* Effect.dieMessage("the condition never held")
  })

const storedJournal = (id: string) =>
  Effect.flatMap(SessionStore, (store) => store.artefact(id, RequestJournal.fileName))

const journalOf = (id: string) =>
  Effect.map(storedJournal(id), (text) => Option.flatMap(text, (text) => Either.getRight(RequestJournal.decode(text))))

const journaledQueries = (id: string) =>
  Effect.map(journalOf(id), (journal) =>
    Option.match(journal, {
      onNone: (): ReadonlyArray<string> => [],
      onSome: (entries) => [...HashMap.values(entries.searches)].map((entry) => entry.request.query)
    })
  )

// Fetch-time summaries, not the report's citation check (which runs on the summarization role too).
const summarizations = Effect.map(ScriptedModel.calls, (calls) =>
  calls.filter(
    (c) => c.role === "summarization" && !(c.request.system ?? "").includes("sentences of a research report")
  )
)

const ofHeld = (texts: ReadonlyArray<string>) => texts.filter((text) => /charlie|delta/i.test(text))

/** Runs a session until CHARLIE's and DELTA's researchers hang, then kills it there. */
const interruptedRun = (id: string, waiting: Ref.Ref<number>) =>
  Effect.gen(function* () {
    const fiber = yield* Effect.fork(
      Pipeline.research("Measure the four topics", { sessionId: id, config: { maxConcurrentResearchUnits: 4 } })
    )
    yield* eventually(Effect.map(Ref.get(waiting), (n) => n === 2))
    yield* Fiber.interrupt(fiber)
  })

describe("Resume with the request journal", () => {
  it.effect(
    "a resumed run does not send again the searches, extractions and summaries the killed run was answered",
    () =>
      Effect.gen(function* () {
        const { hold, script, waiting } = yield* holdingResearcher
        const world = yield* countingWorld(script)
        yield* Effect.gen(function* () {
          yield* interruptedRun("killed", waiting)
          // The killed run searched, read and summarised for CHARLIE and DELTA before their units could finish.
          const searched = ofHeld(yield* Ref.get(world.searches))
          const read = ofHeld(yield* Ref.get(world.extracts))
          assert.strictEqual(searched.length, 2)
          assert.strictEqual(read.length, 2)
          const summarisedBefore = (yield* summarizations).length
          assert.strictEqual(summarisedBefore, 8)
          const searchesBefore = (yield* Ref.get(world.searches)).length
          const extractsBefore = (yield* Ref.get(world.extracts)).length

          yield* Ref.set(hold, false)
          const resumed = yield* Pipeline.resume("killed")

          assert.strictEqual(resumed.status, "completed")
          assert.deepStrictEqual((yield* Ref.get(world.searches)).slice(searchesBefore), [])
          assert.deepStrictEqual((yield* Ref.get(world.extracts)).slice(extractsBefore), [])
          assert.strictEqual((yield* summarizations).length, summarisedBefore)
          // The report still has every topic, with the sources the resumed units found through the journal.
          const report = (yield* ScriptedModel.calls).find((c) => c.role === "report")
          const prompt = H.requestText(report?.request ?? { messages: [] })
          for (const keyword of H.topics) assert.include(prompt, `${keyword} was measured`)
          assert.strictEqual(resumed.rounds[0]?.results.length, 4)
          assert.isTrue(resumed.sources.some((source) => source.url === moreUrl("DELTA")))
        }).pipe(Effect.provide(world.layer))
      })
  )

  it.effect("the journal is written behind the run: a unit's answers are stored before the unit finishes", () =>
    Effect.gen(function* () {
      const { script, waiting } = yield* holdingResearcher
      const world = yield* countingWorld(script)
      yield* Effect.gen(function* () {
        const fiber = yield* Effect.fork(
          Pipeline.research("Measure the four topics", {
            sessionId: "in-flight",
            config: { maxConcurrentResearchUnits: 2 }
          })
        )
        // ALPHA and BRAVO finish first; CHARLIE and DELTA then search and read, and hang. No checkpoint follows their
        // answers, and the run is not over: a run killed now (no last flush) keeps them all the same.
        yield* eventually(Effect.map(Ref.get(waiting), (n) => n === 2))
        yield* eventually(
          Effect.map(journaledQueries("in-flight"), (queries) =>
            ["charlie facts", "delta facts"].every((q) => queries.includes(q))
          )
        )
        yield* Fiber.interrupt(fiber)
      }).pipe(Effect.provide(world.layer))
    })
  )

  it.effect("a completed session's journal is removed from the store", () =>
    Effect.gen(function* () {
      const { hold, script, waiting } = yield* holdingResearcher
      const world = yield* countingWorld(script)
      yield* Effect.gen(function* () {
        yield* interruptedRun("finished", waiting)
        assert.includeMembers([...(yield* journaledQueries("finished"))], ["charlie facts", "delta facts"])
        yield* Ref.set(hold, false)
        yield* Pipeline.resume("finished")
        assert.isTrue(Option.isNone(yield* storedJournal("finished")))
      }).pipe(Effect.provide(world.layer))
    })
  )

  it.effect("a corrupt journal is ignored with a warning: the run sends its requests again and completes", () =>
    Effect.gen(function* () {
      const { hold, script, waiting } = yield* holdingResearcher
      const world = yield* countingWorld(script)
      const warnings: Array<string> = []
      const logger = Logger.make(({ logLevel, message }) => {
        if (logLevel._tag === "Warning") warnings.push(Array.isArray(message) ? message.join(" ") : String(message))
      })
      yield* Effect.gen(function* () {
        yield* interruptedRun("corrupt", waiting)
        const store = yield* SessionStore
        yield* store.saveArtefact("corrupt", RequestJournal.fileName, '{"version": 1, "searches": [')
        const searchesBefore = (yield* Ref.get(world.searches)).length

        yield* Ref.set(hold, false)
        const resumed = yield* Pipeline.resume("corrupt")

        assert.strictEqual(resumed.status, "completed")
        assert.deepStrictEqual(ofHeld((yield* Ref.get(world.searches)).slice(searchesBefore)).sort(), [
          "charlie facts",
          "delta facts"
        ])
        assert.isTrue(warnings.some((w) => w.includes("request journal of session corrupt")))
        // The unreadable journal did not outlive the session's completion.
        assert.isTrue(Option.isNone(yield* storedJournal("corrupt")))
      }).pipe(Effect.provide(Layer.merge(world.layer, Logger.add(logger))))
    })
  )
})
