/**
 * The simulated research world of the emulator, as the providers meet it: the models the pipeline calls answer with
 * tool calls and structured output that decode, and a whole run against it ends in a report citing the pages it served.
 */
import { LanguageModel, ModelRouter, Pipeline, Research, StructuredOutput, Summarizer, Tool } from "@deep-research/core"
import { MemorySessionStore } from "@deep-research/core/testing"
import { Emulator } from "@deep-research/emulator"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Layer, Predicate, Redacted, Schema } from "effect"
import { AnthropicLanguageModel, OpenAiLanguageModel, Tavily } from "../src/index.js"

const fetchText = (url: string) =>
  Effect.promise(async () => {
    const response = await fetch(url)
    return { headers: response.headers, text: await response.text() }
  })

describe("simulated research", () => {
  const conductResearch = Tool.make("conductResearch", { description: "Delegate", schema: Research.Directive })
  const complete = Tool.make("researchComplete", { description: "Done", schema: Schema.Struct({}) })
  const think = Tool.make("think", { description: "Think", schema: Schema.Struct({ reflection: Schema.String }) })
  const webSearch = Tool.make("webSearch", {
    description: "Search",
    schema: Schema.Struct({ queries: Schema.Array(Schema.String).pipe(Schema.minItems(1), Schema.maxItems(3)) })
  })
  const finish = Tool.make("researchComplete", {
    description: "Finish",
    schema: Schema.Struct({ summary: Schema.String })
  })

  const simulated = (options?: Emulator.SimulateOptions) =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* Emulator.simulate(emulator, options)
      const model = yield* OpenAiLanguageModel.make({
        model: "gpt-4.1",
        apiKey: "sk-test",
        baseUrl: emulator.baseUrl("openai")
      })
      return { emulator, model }
    })

  it.scoped("the supervisor delegates directives that decode, then completes", () =>
    Effect.gen(function* () {
      const { model } = yield* simulated({ directives: 2 })
      const tools = [think.definition, conductResearch.definition, complete.definition]
      const request: LanguageModel.GenerateRequest = {
        system: "You supervise research.",
        messages: [LanguageModel.user("The user's question: How much solar power did Europe add in 2024?")],
        tools
      }
      const first = yield* model.generate(request)
      assert.deepStrictEqual(
        first.toolCalls.map((call) => call.name),
        ["conductResearch", "conductResearch"]
      )
      for (const call of first.toolCalls) {
        const directive = Tool.decodeArguments(conductResearch, call.arguments)
        assert.isTrue(Either.isRight(directive))
        if (Either.isRight(directive)) assert.include(directive.right.topic, "solar power did Europe add")
      }
      const second = yield* model.generate({
        ...request,
        messages: [
          ...request.messages,
          LanguageModel.assistant("", first.toolCalls),
          ...first.toolCalls.map((call) => LanguageModel.toolResult(call, "done"))
        ]
      })
      assert.deepStrictEqual(
        second.toolCalls.map((call) => call.name),
        ["researchComplete"]
      )
    })
  )

  it.scoped("researchers search, then complete citing the numbered results they were shown", () =>
    Effect.gen(function* () {
      const { model } = yield* simulated()
      const request: LanguageModel.GenerateRequest = {
        messages: [LanguageModel.user("## Your assignment\nSolar additions in Europe in 2024")],
        tools: [webSearch.definition, think.definition, finish.definition]
      }
      const first = yield* model.generate(request)
      const [search] = first.toolCalls
      assert.strictEqual(search?.name, "webSearch")
      assert.isTrue(search !== undefined && Either.isRight(Tool.decodeArguments(webSearch, search.arguments)))
      if (search === undefined) return
      const second = yield* model.generate({
        ...request,
        messages: [
          ...request.messages,
          LanguageModel.assistant("", [search]),
          LanguageModel.toolResult(search, "[1] EU solar grew 40 GW in 2024\n[2] Germany led installations")
        ]
      })
      const [done] = second.toolCalls
      assert.strictEqual(done?.name, "researchComplete")
      const summary = Tool.decodeArguments(finish, done?.arguments)
      assert.isTrue(Either.isRight(summary))
      if (Either.isRight(summary)) {
        assert.include(summary.right.summary, "[1]")
        assert.include(summary.right.summary, "[2]")
      }
    })
  )

  it.scoped("structured requests get JSON that decodes, natively and prompted, and never ask to clarify", () =>
    Effect.gen(function* () {
      const { emulator, model } = yield* simulated()
      const question = [LanguageModel.user("The user's question: effects of remote work on productivity")]
      const clarification = yield* StructuredOutput.generateObject(model, Research.Clarification, {
        messages: question
      })
      assert.isFalse(clarification.value.needClarification)
      const prompted = yield* OpenAiLanguageModel.make({
        model: "local",
        baseUrl: emulator.baseUrl("openai"),
        capabilities: { structuredOutput: false }
      })
      const brief = yield* StructuredOutput.generateObject(prompted, Research.Brief, { messages: question })
      assert.include(brief.value.brief, "remote work")
      assert.strictEqual(brief.value.language, "English")
      assert.strictEqual(brief.attempts, 1)
    })
  )

  it.scoped("scores in structured answers sit in the upper part of their range", () =>
    Effect.gen(function* () {
      const { model } = yield* simulated()
      const Judgement = Schema.Struct({
        scores: Schema.Struct({
          depth: Schema.Struct({ score: Schema.Int.pipe(Schema.between(1, 5)), rationale: Schema.String }),
          balance: Schema.NullOr(Schema.Struct({ score: Schema.Number, rationale: Schema.String }))
        })
      })
      const result = yield* StructuredOutput.generateObject(model, Judgement, {
        messages: [LanguageModel.user("Question: judge this report")]
      })
      assert.strictEqual(result.value.scores.depth.score, 4)
      assert.strictEqual(result.value.scores.balance?.score, 4)
    })
  )

  it.scoped("an Anthropic model gets its forced structured-output tool answered", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* Emulator.simulate(emulator)
      const model = yield* AnthropicLanguageModel.make({
        apiKey: Redacted.make("sk-ant-test"),
        model: "claude-sonnet-4-6",
        baseUrl: emulator.baseUrl("anthropic")
      })
      const brief = yield* StructuredOutput.generateObject(model, Research.Brief, {
        messages: [LanguageModel.user("The user's question: history of the bicycle")]
      })
      assert.include(brief.value.brief, "history of the bicycle")
    })
  )

  it.scoped("a plain request gets a report citing only the numbered sources it was given", () =>
    Effect.gen(function* () {
      const { model } = yield* simulated()
      const completion = yield* model.generate({
        system: "You write the final report.",
        messages: [
          LanguageModel.user(
            "The user's question: solar in Europe\n\nNumbered sources (cite these numbers):\n" +
              "[1] EU solar market outlook — https://a.example/1\n[2] Germany solar data — https://b.example/2"
          )
        ]
      })
      assert.match(completion.text, /^# /)
      const cited = new Set([...completion.text.matchAll(/\[(\d+)\]/g)].map((m) => m[1]))
      assert.deepStrictEqual([...cited].sort(), ["1", "2"])
    })
  )

  it.scoped("search results point at deterministic pages the emulator serves", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* Emulator.simulate(emulator, { resultsPerQuery: 2 })
      const tavily = yield* Tavily.make({ apiKey: Redacted.make("tvly-test"), baseUrl: emulator.baseUrl("tavily") })
      const results = yield* tavily.search.search("heat pumps in Norway", { maxResults: 5 })
      const again = yield* tavily.search.search("heat pumps in Norway", { maxResults: 5 })
      assert.strictEqual(results.length, 2)
      assert.deepStrictEqual(results, again)
      const first = results[0]
      assert.isTrue(first?.url.startsWith(`${emulator.url}/web/sim/`))
      const page = yield* fetchText(first?.url ?? "")
      assert.include(page.headers.get("content-type") ?? "", "text/html")
      assert.include(page.text, `<title>${first?.title}</title>`)
      const extracted = yield* tavily.extractor.extract([first?.url ?? ""])
      assert.strictEqual(extracted[0]?._tag, "ExtractedPage")
    })
  )

  it.scoped("runs the whole pipeline to a report citing pages the emulator served", () =>
    Effect.gen(function* () {
      const { emulator, model } = yield* simulated({ directives: 2 })
      const services = Layer.mergeAll(
        Summarizer.layer,
        Tavily.layer({ apiKey: Redacted.make("tvly-test"), baseUrl: emulator.baseUrl("tavily") }),
        MemorySessionStore.layer
      ).pipe(Layer.provideMerge(ModelRouter.layer({ default: model })))
      const session = yield* Pipeline.research("How much solar power did Europe add in 2024?").pipe(
        Effect.provide(services)
      )
      assert.strictEqual(session.status, "completed")
      assert.strictEqual(session.rounds[0]?.directives.length, 2)
      const report = session.report
      assert.isDefined(report)
      assert.isAbove(report?.citations.length ?? 0, 0)
      for (const citation of report?.citations ?? []) {
        assert.isTrue(citation.url.startsWith(`${emulator.url}/web/sim/`))
        assert.include(report?.markdown ?? "", `[${citation.number}]`)
      }
      assert.isAbove((yield* emulator.requests("tavily.search")).length, 0)
    })
  )

  it.scoped("runs the pipeline with a model without tool calling, through the JSON action protocol", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* Emulator.simulate(emulator, { directives: 2 })
      const model = yield* OpenAiLanguageModel.make({
        model: "local",
        baseUrl: emulator.baseUrl("openai"),
        capabilities: { toolCalling: false, structuredOutput: false }
      })
      const services = Layer.mergeAll(
        Summarizer.layer,
        Tavily.layer({ apiKey: Redacted.make("tvly-test"), baseUrl: emulator.baseUrl("tavily") }),
        MemorySessionStore.layer
      ).pipe(Layer.provideMerge(ModelRouter.layer({ default: model })))
      const session = yield* Pipeline.research("Which cities have the most bicycle lanes?").pipe(
        Effect.provide(services)
      )
      assert.strictEqual(session.status, "completed")
      assert.strictEqual(session.rounds[0]?.directives.length, 2)
      assert.isAbove(session.report?.citations.length ?? 0, 0)
      const chats = yield* emulator.requests("openai.chat")
      assert.isTrue(chats.every((request) => Predicate.isRecord(request.body) && !("tools" in request.body)))
    })
  )

  it.scoped("scripted replies still take precedence over the simulation", () =>
    Effect.gen(function* () {
      const { emulator, model } = yield* simulated()
      yield* emulator.enqueue("openai.chat", Emulator.openaiText("scripted"))
      assert.strictEqual((yield* model.generate({ messages: [LanguageModel.user("hi")] })).text, "scripted")
      assert.notStrictEqual((yield* model.generate({ messages: [LanguageModel.user("hi")] })).text, "scripted")
    })
  )
})
