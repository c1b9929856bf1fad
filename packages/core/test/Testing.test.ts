import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Schema } from "effect"
import * as ContentExtractor from "../src/ContentExtractor.js"
import * as Errors from "../src/Errors.js"
import * as LanguageModel from "../src/LanguageModel.js"
import * as ModelRouter from "../src/ModelRouter.js"
import * as SearchProvider from "../src/SearchProvider.js"
import * as Session from "../src/Session.js"
import { SessionStore } from "../src/SessionStore.js"
import * as ResearchConfig from "../src/ResearchConfig.js"
import * as ResearchEvents from "../src/ResearchEvents.js"
import { MemorySessionStore, ScriptedModel, StaticWeb } from "../src/testing/index.js"

const ask = (text: string): LanguageModel.GenerateRequest => ({ messages: [LanguageModel.user(text)] })

const pages: ReadonlyArray<StaticWeb.Page> = [
  { url: "https://a.example/heat", title: "Heat pumps", content: "Heat pumps move heat. Heat pumps in cold climates." },
  { url: "https://b.example/cold", title: "Cold climates", content: "Winters in cold climates are long." },
  { url: "https://c.example/tea", title: "Tea", content: "Tea is a drink." }
]

describe("ScriptedModel", () => {
  it.effect("answers each role from its own script, the others from the default, the last reply repeating", () =>
    Effect.gen(function* () {
      const texts = yield* Effect.forEach(["brief", "brief", "brief", "report"] as const, (role) =>
        Effect.map(ModelRouter.generate(role, ask("go")), (c) => c.text)
      )
      assert.deepStrictEqual(texts, ["first brief", "second brief", "second brief", "anything else"])
    }).pipe(
      Effect.provide(
        ScriptedModel.layerRouter({ default: ["anything else"], roles: { brief: ["first brief", "second brief"] } })
      )
    )
  )

  it.effect("answers as a function of the request, told the role and the call's number", () =>
    Effect.gen(function* () {
      const first = yield* ModelRouter.generate("researcher", ask("alpha"))
      const second = yield* ModelRouter.generate("researcher", ask("beta"))
      assert.strictEqual(first.text, "researcher #1: alpha")
      assert.strictEqual(second.text, "researcher #2: beta")
    }).pipe(
      Effect.provide(
        ScriptedModel.layerRouter({
          default: (request, context) => {
            const last = request.messages[request.messages.length - 1]
            return `${context.role} #${context.call}: ${last?._tag === "user" ? last.content : ""}`
          }
        })
      )
    )
  )

  it.effect("records every request with its role and model", () =>
    Effect.gen(function* () {
      yield* ModelRouter.generate("supervisor", ask("plan"))
      yield* ModelRouter.generate("summarization", ask("shorten"))
      const calls = yield* ScriptedModel.calls
      assert.deepStrictEqual(
        calls.map((c) => [
          c.role,
          c.model,
          c.request.messages[0]?._tag === "user" ? c.request.messages[0].content : ""
        ]),
        [
          ["supervisor", "scripted-model", "plan"],
          ["summarization", "scripted-model", "shorten"]
        ]
      )
    }).pipe(Effect.provide(ScriptedModel.layerRouter({ default: ["ok"] })))
  )

  it.effect("fails with the provider error a script gives, and answers tool calls as a completion's tool calls", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(ModelRouter.generate("brief", ask("go")))
      assert.instanceOf(error, Errors.ProviderQuotaExhausted)
      const completion = yield* ModelRouter.generate("brief", ask("go"))
      assert.strictEqual(completion.finishReason, "tool_calls")
      assert.deepStrictEqual(
        completion.toolCalls.map((c) => [c.name, c.arguments]),
        [["think", { reflection: "hm" }]]
      )
    }).pipe(
      Effect.provide(
        ScriptedModel.layerRouter({
          default: [
            new Errors.ProviderQuotaExhausted({ provider: "scripted" }),
            ScriptedModel.toolCalls({ name: "think", arguments: { reflection: "hm" } })
          ]
        })
      )
    )
  )
})

describe("StaticWeb", () => {
  it.effect("ranks pages by the query's words and returns at most maxResults", () =>
    Effect.gen(function* () {
      const search = yield* SearchProvider.SearchProvider
      const results = yield* search.search("heat pumps cold climates", { maxResults: 2 })
      assert.deepStrictEqual(
        results.map((r) => r.url),
        ["https://a.example/heat", "https://b.example/cold"]
      )
      assert.isUndefined(results[0]?.rawContent)
      assert.strictEqual(results[0]?.provider, "static")
      const raw = yield* search.search("tea", { maxResults: 5, includeRawContent: true })
      assert.strictEqual(raw[0]?.rawContent, "Tea is a drink.")
      assert.deepStrictEqual(yield* search.search("nothing matches", { maxResults: 5 }), [])
    }).pipe(Effect.provide(StaticWeb.layer({ pages })))
  )

  it.effect("serves pages by URL and reports unknown URLs as per-URL failures", () =>
    Effect.gen(function* () {
      const extractor = yield* ContentExtractor.ContentExtractor
      const results = yield* extractor.extract(["https://c.example/tea", "https://nowhere.example/"])
      assert.deepStrictEqual(
        results.map((r) => [r._tag, r.url]),
        [
          ["ExtractedPage", "https://c.example/tea"],
          ["ExtractFailure", "https://nowhere.example/"]
        ]
      )
    }).pipe(Effect.provide(StaticWeb.layer({ pages })))
  )

  it.effect("routes queries and fails searches and extractions when told to", () =>
    Effect.gen(function* () {
      const search = yield* SearchProvider.SearchProvider
      const extractor = yield* ContentExtractor.ContentExtractor
      const routed = yield* search.search("anything", { maxResults: 5 })
      assert.deepStrictEqual(
        routed.map((r) => r.url),
        ["https://c.example/tea"]
      )
      const searchError = yield* Effect.flip(search.search("anything", { maxResults: 5 }))
      assert.strictEqual(searchError._tag, "ProviderRateLimited")
      const extractError = yield* Effect.flip(extractor.extract(["https://c.example/tea"]))
      assert.strictEqual(extractError._tag, "ProviderUnavailable")
    }).pipe(
      Effect.provide(
        StaticWeb.layer({
          pages,
          route: () => ["https://c.example/tea"],
          failSearch: (_query, call) =>
            call === 2 ? new Errors.ProviderRateLimited({ provider: "static" }) : undefined,
          failExtract: () => new Errors.ProviderUnavailable({ provider: "static" })
        })
      )
    )
  )
})

describe("MemorySessionStore", () => {
  const session = (id: string) =>
    new Session.Session({
      version: Session.currentVersion,
      id,
      query: "q",
      createdAt: 0,
      updatedAt: 0,
      config: ResearchConfig.defaults,
      status: "running",
      rounds: [],
      sources: [],
      metrics: [],
      usage: []
    })

  it.effect("refuses ids that could name a path, and a second lock or a delete while a run holds the session", () =>
    Effect.gen(function* () {
      const store = yield* SessionStore
      for (const id of ["../x", "a/b", ""]) {
        assert.strictEqual((yield* Effect.flip(store.load(id)))._tag, "ResearchInvalidInput", id)
      }
      yield* store.save(session("held"))
      yield* Effect.scoped(
        Effect.gen(function* () {
          yield* store.lock("held")
          assert.strictEqual((yield* Effect.flip(Effect.scoped(store.lock("held"))))._tag, "ResearchSessionBusy")
          assert.strictEqual((yield* Effect.flip(store.delete("held")))._tag, "ResearchSessionBusy")
        })
      )
      yield* store.delete("held")
      assert.isTrue(Either.isLeft(yield* Effect.either(store.load("held"))))
    }).pipe(Effect.provide(MemorySessionStore.layer))
  )

  it.effect("keeps the events and report of a session it has not saved yet, as the file store does", () =>
    Effect.gen(function* () {
      const store = yield* SessionStore
      const started = Schema.decodeUnknownSync(ResearchEvents.ResearchEvent)({
        _tag: "SessionStarted",
        query: "q",
        sessionId: "early",
        timestamp: 1
      })
      yield* store.appendEvents("early", [started])
      yield* store.saveReport("early", "# Report")
      assert.deepStrictEqual(yield* store.events("early"), [started])
      assert.strictEqual((yield* Effect.flip(store.load("early")))._tag, "ResearchSessionNotFound")
      assert.deepStrictEqual(yield* store.list, [])
      yield* store.save(session("early"))
      assert.strictEqual((yield* store.load("early")).id, "early")
      assert.deepStrictEqual(yield* store.events("early"), [started], "saving keeps what came before")
      assert.deepStrictEqual(
        (yield* store.list).map((summary) => summary.id),
        ["early"]
      )
    }).pipe(Effect.provide(MemorySessionStore.layer))
  )
})
