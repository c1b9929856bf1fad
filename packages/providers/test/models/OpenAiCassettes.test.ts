import { fileURLToPath } from "node:url"
/**
 * Every recorded OpenAI payload in the shared vendor cassettes, replayed through the emulator into the real SDK and
 * the providers: answers decode to the recorded values, and every error becomes the right tagged error.
 */
import { Errors, LanguageModel, Pricing, StructuredOutput, Tool, Usage, UsageLedger } from "@deep-research/core"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Predicate, Schema } from "effect"
import { readdirSync } from "node:fs"
import { OpenAiLanguageModel, OpenAiWebSearch } from "../../src/index.js"
import { Emulator } from "@deep-research/emulator"

const directory = fileURLToPath(new URL("../fixtures/vendor-cassettes/openai", import.meta.url))
const cassette = (name: string) => `${directory}/${name}`

const modelFor = (emulator: Emulator.Handle, options?: Partial<OpenAiLanguageModel.Options>) =>
  OpenAiLanguageModel.make({
    model: "gpt-4.1-nano",
    apiKey: "sk-test",
    baseUrl: emulator.baseUrl("openai"),
    ...options
  })

const searchFor = (emulator: Emulator.Handle, options?: Partial<OpenAiWebSearch.Options>) =>
  OpenAiWebSearch.make({ model: "gpt-5", apiKey: "sk-test", baseUrl: emulator.baseUrl("openai"), ...options })

const ask = (text: string): LanguageModel.GenerateRequest => ({ messages: [LanguageModel.user(text)] })

const usageOf = (completion: LanguageModel.Completion) => [
  completion.usage.inputTokens,
  completion.usage.outputTokens,
  completion.usage.cachedInputTokens,
  completion.usage.reasoningTokens
]

const failureOf = <A>(effect: Effect.Effect<A, Errors.ProviderError>) =>
  Effect.map(Effect.either(effect), (either) =>
    Either.isLeft(either) ? either.left : assert.fail("expected a failure")
  )

/** The cassettes each test below replays; the first test checks that none is left out. */
const covered = [
  "chat-text.json",
  "chat-parallel-tool-calls.json",
  "chat-structured-output-json-schema.json",
  "chat-stream-text-usage.json",
  "chat-stream-tool-call-usage.json",
  "chat-error-401-invalid-api-key.json",
  "chat-error-429-rate-limit-tokens.json",
  "chat-error-400-unsupported-value.json",
  "responses-error-400-context-length-exceeded.json",
  "responses-web-search-url-citation.json",
  "responses-web-search-stream.json"
]

describe("OpenAI cassettes", () => {
  it("every OpenAI cassette has a replay test", () => {
    assert.deepStrictEqual([...readdirSync(directory)].sort(), [...covered].sort())
  })

  it.scoped("chat-text: the text, finish reason, model and usage", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.replay(cassette("chat-text.json"))
      const completion = yield* (yield* modelFor(emulator)).generate(ask("What's 2 + 2?"))
      assert.strictEqual(completion.text, "2 + 2 equals 4.")
      assert.strictEqual(completion.finishReason, "stop")
      assert.strictEqual(completion.model, "gpt-4.1-nano-2025-04-14")
      assert.deepStrictEqual(usageOf(completion), [14, 8, 0, 0])
    })
  )

  it.scoped("chat-parallel-tool-calls: two calls, one with empty arguments", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.replay(cassette("chat-parallel-tool-calls.json"))
      const weather = Tool.make("weather", {
        description: "Weather at a place",
        schema: Schema.Struct({ latitude: Schema.String, longitude: Schema.String })
      })
      const language = Tool.make("best_language_to_learn", { description: "Advice", schema: Schema.Struct({}) })
      const completion = yield* (yield* modelFor(emulator)).generate({
        ...ask("Weather in Berlin and the best language?"),
        tools: [weather.definition, language.definition]
      })
      assert.strictEqual(completion.finishReason, "tool_calls")
      assert.strictEqual(completion.text, "")
      assert.deepStrictEqual(
        completion.toolCalls.map((call) => [call.id, call.name, call.arguments]),
        [
          ["call_4vdw7IhqK4BaPeDpUqhAJrH4", "weather", { latitude: "52.5200", longitude: "13.4050" }],
          ["call_UZxiYeSq6gFg9tAHAdSmNHPQ", "best_language_to_learn", {}]
        ]
      )
      assert.deepStrictEqual(usageOf(completion), [113, 54, 0, 0])
    })
  )

  it.scoped("chat-structured-output-json-schema: the object decodes through generateObject", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.replay(cassette("chat-structured-output-json-schema.json"))
      const Person = Schema.Struct({ name: Schema.String, age: Schema.Int })
      const result = yield* StructuredOutput.generateObject(
        yield* modelFor(emulator),
        Person,
        ask("Generate a person named John who is 30 years old"),
        { name: "response" }
      )
      assert.deepStrictEqual(result.value, { name: "John", age: 30 })
      assert.strictEqual(result.attempts, 1)
      assert.deepStrictEqual(usageOf(result.completion), [53, 9, 0, 0])
    })
  )

  it.scoped("chat-stream-text-usage: the streamed text and the usage chunk", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.replay(cassette("chat-stream-text-usage.json"))
      const completion = yield* (yield* modelFor(emulator, { stream: true })).generate(ask("Count from 1 to 3"))
      assert.strictEqual(completion.text, "1, 2, 3")
      assert.strictEqual(completion.finishReason, "stop")
      assert.strictEqual(completion.model, "gpt-4.1-nano-2025-04-14")
      assert.deepStrictEqual(usageOf(completion), [14, 7, 0, 0])
    })
  )

  it.scoped("chat-stream-tool-call-usage: the streamed tool call with its argument fragments joined", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.replay(cassette("chat-stream-tool-call-usage.json"))
      const capital = Tool.make("get_capital", { description: "", schema: Schema.Struct({ country: Schema.String }) })
      const completion = yield* (yield* modelFor(emulator, { model: "gpt-4o-mini", stream: true })).generate({
        ...ask("What is the capital of the UK? Use the tool, then answer."),
        tools: [capital.definition],
        toolChoice: "auto"
      })
      assert.strictEqual(completion.finishReason, "tool_calls")
      assert.deepStrictEqual(
        completion.toolCalls.map((call) => [call.id, call.name, call.arguments]),
        [["call_ZR5UUuTt3pf61kjwAJIYdVMj", "get_capital", { country: "UK" }]]
      )
      assert.deepStrictEqual(usageOf(completion), [53, 15, 0, 0])
      assert.strictEqual(completion.model, "gpt-4o-mini-2024-07-18")
    })
  )

  it.scoped("chat-error-401-invalid-api-key: ProviderAuthenticationFailed", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.replay(cassette("chat-error-401-invalid-api-key.json"))
      const error = yield* failureOf((yield* modelFor(emulator)).generate(ask("hi")))
      assert.strictEqual(error._tag, "ProviderAuthenticationFailed")
      assert.strictEqual(error._tag === "ProviderAuthenticationFailed" ? error.provider : undefined, "openai")
    })
  )

  it.scoped(
    "chat-error-429-rate-limit-tokens: a request larger than the TPM limit is a context overflow, not a wait",
    () =>
      Effect.gen(function* () {
        const emulator = yield* Emulator.start()
        yield* emulator.replay(cassette("chat-error-429-rate-limit-tokens.json"))
        const error = yield* failureOf((yield* modelFor(emulator)).generate(ask("<MASSIVE_TEXT>")))
        assert.strictEqual(error._tag, "ContextWindowExceeded")
        if (error._tag === "ContextWindowExceeded") {
          assert.deepStrictEqual([error.model, error.limit, error.requested], ["gpt-4.1-nano", 400_000, 2_500_013])
        }
      })
  )

  it.scoped("chat-error-400-unsupported-value: ProviderInvalidRequest with the vendor's message", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.replay(cassette("chat-error-400-unsupported-value.json"))
      const model = yield* modelFor(emulator, { model: "o1-mini", systemRole: "developer" })
      const error = yield* failureOf(model.generate({ system: "Be brief.", messages: [LanguageModel.user("hi")] }))
      assert.strictEqual(error._tag, "ProviderInvalidRequest")
      assert.include(error.message, "does not support 'developer' with this model")
      const [request] = yield* emulator.requests("openai.chat")
      const messages = Predicate.isRecord(request?.body) ? request.body["messages"] : undefined
      assert.deepStrictEqual(Array.isArray(messages) ? messages[0] : undefined, {
        role: "developer",
        content: "Be brief."
      })
    })
  )

  it.scoped("responses-error-400-context-length-exceeded: ContextWindowExceeded from the web search", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.replay(cassette("responses-error-400-context-length-exceeded.json"))
      const error = yield* failureOf((yield* searchFor(emulator)).search("<MASSIVE_TEXT>", { maxResults: 5 }))
      assert.strictEqual(error._tag, "ContextWindowExceeded")
      assert.strictEqual(error._tag === "ContextWindowExceeded" ? error.model : undefined, "gpt-5")
    })
  )

  it.scoped("responses-web-search-url-citation: the three cited pages with their titles and cited sentences", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.replay(cassette("responses-web-search-url-citation.json"))
      const results = yield* (yield* searchFor(emulator)).search("top 3 news in the world today", { maxResults: 5 })
      assert.deepStrictEqual(
        results.map((r) => [r.url, r.title]),
        [
          [
            "https://www.reuters.com/world/middle-east/un-overwhelmingly-endorses-two-state-solution-declaration-that-condemns-hamas-2025-09-12/",
            "UN overwhelmingly endorses two-state solution declaration that condemns Hamas"
          ],
          [
            "https://apnews.com/article/aad7af5ddfb56b7484fa9db591297c9e",
            "Nepal's president appoints former chief justice as interim premier and first woman leader"
          ],
          [
            "https://www.reuters.com/world/middle-east/death-toll-rises-46-israeli-raids-yemen-2025-09-11/",
            "Death toll rises to 46 in Israeli raids on Yemen"
          ]
        ]
      )
      assert.isTrue(results[0]?.snippet.startsWith("UN General Assembly backs a timebound two‑state roadmap"))
      assert.isTrue(results[0]?.snippet.endsWith("a stabilization mission in Gaza."))
      assert.isTrue(results[2]?.snippet.startsWith("Israel–Yemen escalation:"))
      assert.isTrue(results.every((r) => r.provider === "openai" && !r.snippet.includes("](")))
    })
  )

  it.scoped("responses-web-search-url-citation: the call's tokens and six searches are recorded in the ledger", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.replay(cassette("responses-web-search-url-citation.json"))
      const ledger = yield* UsageLedger.make()
      yield* (yield* searchFor(emulator))
        .search("top 3 news in the world today", { maxResults: 5 })
        .pipe(Effect.provideService(UsageLedger.UsageLedger, ledger))
      const [account] = yield* ledger.snapshot
      assert.strictEqual(account?.role, "researcher")
      assert.deepStrictEqual(
        [account?.inputTokens, account?.outputTokens, account?.cachedInputTokens, account?.reasoningTokens],
        [115_886, 1_720, 92_160, 1_472]
      )
      const tokens = new Usage.Usage({
        inputTokens: 115_886,
        outputTokens: 1_720,
        cachedInputTokens: 92_160,
        reasoningTokens: 1_472
      })
      assert.closeTo(account?.costUsd ?? 0, Pricing.costOf(Pricing.defaultTable, "gpt-5", tokens) + 6 * 0.01, 1e-9)
    })
  )

  it.scoped("responses-web-search-stream: the cited page from the streamed answer", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.replay(cassette("responses-web-search-stream.json"))
      const results = yield* (yield* searchFor(emulator, { stream: true })).search("tallest mountain in Alberta", {
        maxResults: 5
      })
      assert.deepStrictEqual(
        results.map((r) => [r.url, r.title, r.snippet]),
        [
          [
            "https://www.britannica.com/place/Mount-Columbia",
            "Mount Columbia | mountain, Alberta, Canada | Britannica",
            "The tallest mountain in Alberta is Mount Columbia (3,747 m / 12,294 ft)."
          ]
        ]
      )
    })
  )
})
