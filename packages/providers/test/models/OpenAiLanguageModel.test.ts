import { Errors, LanguageModel, Research, StructuredOutput, Tool } from "@deep-research/core"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Deferred, Duration, Effect, Either, Fiber, Layer, Option, Predicate, Schema } from "effect"
import { OpenAiLanguageModel } from "../../src/index.js"
import { retryAfterOf } from "../../src/models/openaiErrors.js"
import { Emulator } from "@deep-research/emulator"

const modelFor = (emulator: Emulator.Handle, options?: Partial<OpenAiLanguageModel.Options>) =>
  OpenAiLanguageModel.make({ model: "gpt-4.1", apiKey: "sk-test", baseUrl: emulator.baseUrl("openai"), ...options })

const ask = (text: string): LanguageModel.GenerateRequest => ({ messages: [LanguageModel.user(text)] })

const lastBody = (emulator: Emulator.Handle) =>
  Effect.map(emulator.requests("openai.chat"), (requests) => {
    const body = requests[requests.length - 1]?.body
    return Predicate.isRecord(body) ? body : assert.fail("the request had no JSON body")
  })

/** The value at a path of nested JSON objects. */
const at = (value: unknown, ...path: ReadonlyArray<string>): unknown =>
  path.reduce<unknown>((node, key) => (Predicate.isRecord(node) ? node[key] : undefined), value)

/** Polls until the predicate holds (real I/O: the emulator answers on its own schedule). */
const eventually = <A>(effect: Effect.Effect<A>, predicate: (a: A) => boolean) =>
  Effect.gen(function* () {
    for (let i = 0; i < 2_000; i++) {
      const value = yield* effect
      if (predicate(value)) return value
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 5)))
    }
    return assert.fail("the condition never held")
  })

const SearchArgs = Schema.Struct({ queries: Schema.Array(Schema.String) })
const webSearch = Tool.make("webSearch", { description: "Search the web", schema: SearchArgs })
const think = Tool.make("think", { description: "Reflect", schema: Schema.Struct({ reflection: Schema.String }) })

const failureOf = <A>(effect: Effect.Effect<A, Errors.ProviderError>) =>
  Effect.map(Effect.either(effect), (either) => {
    assert.isTrue(Either.isLeft(either), "expected a failure")
    return Either.isLeft(either) ? either.left : assert.fail("unreachable")
  })

describe("OpenAiLanguageModel", () => {
  it.scoped("decodes a text answer with its usage, including cached and reasoning tokens", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond(
        "openai.chat",
        Emulator.openaiText("Paris.", {
          model: "gpt-4.1-2025-04-14",
          usage: { input: 120, output: 30, cached: 64, reasoning: 12 }
        })
      )
      const model = yield* modelFor(emulator)
      const completion = yield* model.generate(ask("Capital of France?"))
      assert.strictEqual(completion.text, "Paris.")
      assert.strictEqual(completion.finishReason, "stop")
      assert.strictEqual(completion.model, "gpt-4.1-2025-04-14")
      assert.deepStrictEqual(
        [
          completion.usage.inputTokens,
          completion.usage.outputTokens,
          completion.usage.cachedInputTokens,
          completion.usage.reasoningTokens
        ],
        [120, 30, 64, 12]
      )
    })
  )

  it.scoped("sends the system prompt, the conversation with tool calls and tool results, and the key", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("openai.chat", Emulator.openaiText("ok"))
      const model = yield* modelFor(emulator)
      const call = new LanguageModel.ToolCall({ id: "call_1", name: "webSearch", arguments: { queries: ["q"] } })
      yield* model.generate({
        system: "You research.",
        messages: [
          LanguageModel.user("Find X"),
          LanguageModel.assistant("", [call]),
          LanguageModel.toolResult(call, "results"),
          LanguageModel.toolResult(call, "boom", true)
        ]
      })
      const body = yield* lastBody(emulator)
      assert.deepStrictEqual(body["messages"], [
        { role: "system", content: "You research." },
        { role: "user", content: "Find X" },
        {
          role: "assistant",
          content: null,
          tool_calls: [
            { id: "call_1", type: "function", function: { name: "webSearch", arguments: '{"queries":["q"]}' } }
          ]
        },
        { role: "tool", tool_call_id: "call_1", content: "results" },
        { role: "tool", tool_call_id: "call_1", content: "Error: boom" }
      ])
      const [request] = yield* emulator.requests("openai.chat")
      assert.strictEqual(request?.headers["authorization"], "Bearer sk-test")
    })
  )

  it.scoped("sends tools with parallel tool calls and each tool_choice form on the wire", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("openai.chat", Emulator.openaiText("ok"))
      const model = yield* modelFor(emulator)
      const choices: ReadonlyArray<LanguageModel.ToolChoice> = ["auto", "required", "none", { tool: "think" }]
      const sent: Array<unknown> = []
      for (const toolChoice of choices) {
        yield* model.generate({ ...ask("go"), tools: [webSearch.definition, think.definition], toolChoice })
        const body = yield* lastBody(emulator)
        sent.push(body["tool_choice"])
        assert.strictEqual(body["parallel_tool_calls"], true)
        assert.deepStrictEqual(body["tools"], [
          {
            type: "function",
            function: { name: "webSearch", description: "Search the web", parameters: webSearch.definition.parameters }
          },
          {
            type: "function",
            function: { name: "think", description: "Reflect", parameters: think.definition.parameters }
          }
        ])
      }
      assert.deepStrictEqual(sent, ["auto", "required", "none", { type: "function", function: { name: "think" } }])
    })
  )

  it.scoped("sends no tool fields when the request has no tools", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("openai.chat", Emulator.openaiText("ok"))
      const model = yield* modelFor(emulator)
      yield* model.generate({ ...ask("go"), toolChoice: "required" })
      const body = yield* lastBody(emulator)
      assert.isFalse("tools" in body || "tool_choice" in body || "parallel_tool_calls" in body)
    })
  )

  it.scoped("decodes parallel tool calls with their parsed arguments", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond(
        "openai.chat",
        Emulator.openaiToolCalls([
          { id: "call_a", name: "think", arguments: { reflection: "plan" } },
          { id: "call_b", name: "webSearch", arguments: { queries: ["a", "b"] } }
        ])
      )
      const model = yield* modelFor(emulator)
      const completion = yield* model.generate({ ...ask("go"), tools: [webSearch.definition, think.definition] })
      assert.strictEqual(completion.finishReason, "tool_calls")
      assert.deepStrictEqual(
        completion.toolCalls.map((call) => [call.id, call.name, call.arguments]),
        [
          ["call_a", "think", { reflection: "plan" }],
          ["call_b", "webSearch", { queries: ["a", "b"] }]
        ]
      )
    })
  )

  it.scoped("keeps unparsable tool arguments as raw text for core to report", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("openai.chat", Emulator.fault({ type: "invalid_tool_arguments" }))
      const model = yield* modelFor(emulator)
      const completion = yield* model.generate({ ...ask("go"), tools: [webSearch.definition] })
      const [call] = completion.toolCalls
      assert.strictEqual(call?.name, "webSearch")
      assert.strictEqual(typeof call?.arguments, "string")
      assert.isTrue(Either.isLeft(Tool.decodeArguments(webSearch, call?.arguments)))
    })
  )

  it.scoped("asks for strict json_schema output with every property required and optional ones nullable", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("openai.chat", Emulator.openaiJson({ title: "T", subtitle: null, tags: ["a"] }))
      const model = yield* modelFor(emulator)
      const Answer = Schema.Struct({
        title: Schema.String,
        subtitle: Schema.optional(Schema.String),
        tags: Schema.Array(Schema.String)
      })
      const result = yield* StructuredOutput.generateObject(model, Answer, ask("go"), { name: "report outline" })
      assert.deepStrictEqual(result.value, { title: "T", tags: ["a"] })
      const format = (yield* lastBody(emulator))["response_format"]
      assert.deepStrictEqual(format, {
        type: "json_schema",
        json_schema: {
          name: "report_outline",
          strict: true,
          schema: {
            type: "object",
            properties: {
              title: { type: "string" },
              subtitle: { type: ["string", "null"] },
              tags: { type: "array", items: { type: "string" } }
            },
            required: ["title", "subtitle", "tags"],
            additionalProperties: false
          }
        }
      })
    })
  )

  it.scoped("brings a Schema.Class's root $ref up to an object schema, as strict mode requires", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond(
        "openai.chat",
        Emulator.openaiJson({
          brief: "B",
          scope: { include: [], exclude: [] },
          sourcePreferences: [],
          language: "English"
        })
      )
      const model = yield* modelFor(emulator)
      const result = yield* StructuredOutput.generateObject(model, Research.Brief, ask("go"))
      assert.strictEqual(result.value.brief, "B")
      const format = (yield* lastBody(emulator))["response_format"]
      assert.isTrue(at(format, "json_schema", "strict"))
      assert.strictEqual(at(format, "json_schema", "schema", "type"), "object")
      assert.isUndefined(at(format, "json_schema", "schema", "$ref"))
      assert.deepStrictEqual(at(format, "json_schema", "schema", "required"), [
        "brief",
        "scope",
        "sourcePreferences",
        "language"
      ])
    })
  )

  it.scoped("falls back to a non-strict schema when strict mode cannot express it", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("openai.chat", Emulator.openaiJson({ scores: { a: 1 } }))
      const model = yield* modelFor(emulator)
      const Answer = Schema.Struct({ scores: Schema.Record({ key: Schema.String, value: Schema.Number }) })
      const result = yield* StructuredOutput.generateObject(model, Answer, ask("go"))
      assert.deepStrictEqual(result.value, { scores: { a: 1 } })
      assert.isFalse(at((yield* lastBody(emulator))["response_format"], "json_schema", "strict"))
    })
  )

  it.effect("makes strict schemas of nested objects, arrays and unions, and refuses free-form ones", () =>
    Effect.sync(() => {
      const Nested = Schema.Struct({
        items: Schema.Array(Schema.Struct({ url: Schema.String, note: Schema.optional(Schema.String) })),
        kind: Schema.optional(Schema.Literal("a", "b"))
      })
      const strict = OpenAiLanguageModel.strictJsonSchema(Tool.jsonSchemaOf(Nested))
      assert.deepStrictEqual(strict, {
        type: "object",
        properties: {
          items: {
            type: "array",
            items: {
              type: "object",
              properties: { url: { type: "string" }, note: { type: ["string", "null"] } },
              required: ["url", "note"],
              additionalProperties: false
            }
          },
          kind: { type: ["string", "null"], enum: ["a", "b", null] }
        },
        required: ["items", "kind"],
        additionalProperties: false
      })
      assert.isUndefined(OpenAiLanguageModel.strictJsonSchema(Tool.jsonSchemaOf(Schema.Struct({ x: Schema.Unknown }))))
    })
  )

  it.scoped("sends max_completion_tokens, or max_tokens when configured for an older server", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("openai.chat", Emulator.openaiText("ok"))
      const standard = yield* modelFor(emulator)
      yield* standard.generate({ ...ask("go"), maxOutputTokens: 500 })
      const first = yield* lastBody(emulator)
      assert.deepStrictEqual([first["max_completion_tokens"], first["max_tokens"]], [500, undefined])
      const older = yield* modelFor(emulator, { maxTokensField: "max_tokens" })
      yield* older.generate({ ...ask("go"), maxOutputTokens: 500 })
      const second = yield* lastBody(emulator)
      assert.deepStrictEqual([second["max_completion_tokens"], second["max_tokens"]], [undefined, 500])
    })
  )

  it.scoped("strips <think> blocks from the text", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("openai.chat", Emulator.openaiText("<think>let me see\nhmm</think>\nThe answer is 4."))
      const model = yield* modelFor(emulator)
      const completion = yield* model.generate(ask("2+2"))
      assert.strictEqual(completion.text, "The answer is 4.")
    })
  )

  it.scoped("streams when configured, accumulating text, tool calls and the usage chunk", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond(
        "openai.chat",
        Emulator.openaiToolCalls(
          [
            { id: "call_1", name: "webSearch", arguments: { queries: ["a long query to split into fragments"] } },
            { id: "call_2", name: "think", arguments: { reflection: "and another one" } }
          ],
          { text: "Let me look.", usage: { input: 50, output: 20, cached: 10 } }
        )
      )
      const model = yield* modelFor(emulator, { stream: true })
      const completion = yield* model.generate({ ...ask("go"), tools: [webSearch.definition, think.definition] })
      assert.strictEqual(completion.text, "Let me look.")
      assert.deepStrictEqual(
        completion.toolCalls.map((call) => call.arguments),
        [{ queries: ["a long query to split into fragments"] }, { reflection: "and another one" }]
      )
      assert.deepStrictEqual([completion.usage.inputTokens, completion.usage.cachedInputTokens], [50, 10])
      const body = yield* lastBody(emulator)
      assert.deepStrictEqual([body["stream"], body["stream_options"]], [true, { include_usage: true }])
    })
  )

  it.scoped("streams to a caller that reads the text as it is written, which sees it grow to the whole answer", () =>
    Effect.gen(function* () {
      const whole = "The first paragraph cites [1].\n\nThe second one cites [2], and ends the answer."
      const emulator = yield* Emulator.start()
      yield* emulator.respond("openai.chat", Emulator.openaiText(whole))
      const model = yield* modelFor(emulator)
      const seen: Array<string> = []
      const ended = yield* Deferred.make<void>()
      const progress = {
        start: Effect.succeed((text: string) =>
          Effect.suspend(() => {
            seen.push(text)
            return text === whole ? Deferred.succeed(ended, undefined) : Effect.void
          })
        )
      }
      const completion = yield* model.generate(ask("go")).pipe(LanguageModel.withTextProgress(progress))
      yield* Deferred.await(ended)
      assert.strictEqual(completion.text, whole)
      assert.isAbove(new Set(seen).size, 1)
      assert.isTrue(seen.every((text) => whole.startsWith(text)))
      const body = yield* lastBody(emulator)
      assert.deepStrictEqual([body["stream"], body["stream_options"]], [true, { include_usage: true }])
    })
  )

  it.scoped("reaches a compatible server through its base URL, extra headers and query, without a key", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("openai.chat", Emulator.openaiText("local answer", { model: "llama3.1:8b" }))
      const model = yield* OpenAiLanguageModel.make({
        model: "llama3.1:8b",
        provider: "ollama",
        baseUrl: emulator.baseUrl("openai"),
        headers: { "x-gateway-key": "gw-1" },
        query: { "api-version": "2024-10-21" },
        contextWindow: 8_192
      })
      const completion = yield* model.generate(ask("hi"))
      assert.strictEqual(completion.text, "local answer")
      assert.deepStrictEqual([model.provider, model.contextWindow], ["ollama", 8_192])
      const [request] = yield* emulator.requests("openai.chat")
      assert.strictEqual(request?.headers["x-gateway-key"], "gw-1")
      assert.isUndefined(request?.headers["authorization"])
      assert.deepStrictEqual(request?.query, { "api-version": "2024-10-21" })
    })
  )

  it.scoped("sends neither tools nor response_format to a server configured without them", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("openai.chat", Emulator.openaiText('Here you go: ```json\n{"title": "T"}\n```'))
      const model = yield* modelFor(emulator, { capabilities: { toolCalling: false, structuredOutput: false } })
      const result = yield* StructuredOutput.generateObject(model, Schema.Struct({ title: Schema.String }), {
        ...ask("go"),
        tools: [webSearch.definition]
      })
      assert.deepStrictEqual(result.value, { title: "T" })
      const body = yield* lastBody(emulator)
      assert.isFalse("tools" in body || "response_format" in body)
    })
  )

  it.scoped("takes the context window from core's table unless given", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      const fromTable = yield* modelFor(emulator, { model: "gpt-4.1" })
      const unknown = yield* modelFor(emulator, { model: "some-local-model-xyz" })
      assert.isAbove(fromTable.contextWindow, 128_000)
      assert.strictEqual(unknown.contextWindow, 128_000)
    })
  )

  describe("errors", () => {
    const faultCases: ReadonlyArray<readonly [string, Emulator.Fault, (error: Errors.ProviderError) => void]> = [
      [
        "a 429 rate limit becomes ProviderRateLimited with the retry-after",
        { type: "rate_limit", retryAfterSeconds: 7 },
        (error) => {
          assert.strictEqual(error._tag, "ProviderRateLimited")
          if (error._tag === "ProviderRateLimited") assert.deepStrictEqual(error.retryAfter, Duration.seconds(7))
        }
      ],
      [
        "insufficient_quota becomes ProviderQuotaExhausted",
        { type: "quota" },
        (e) => assert.strictEqual(e._tag, "ProviderQuotaExhausted")
      ],
      [
        "a 401 becomes ProviderAuthenticationFailed",
        { type: "auth" },
        (e) => assert.strictEqual(e._tag, "ProviderAuthenticationFailed")
      ],
      [
        "the chat context-length text becomes ContextWindowExceeded with the numbers",
        { type: "context_length" },
        (error) => {
          assert.strictEqual(error._tag, "ContextWindowExceeded")
          if (error._tag === "ContextWindowExceeded") {
            assert.deepStrictEqual([error.model, error.limit, error.requested], ["gpt-4.1", 128_000, 130_000])
          }
        }
      ],
      [
        "a connection reset becomes ProviderUnavailable",
        { type: "reset" },
        (e) => assert.strictEqual(e._tag, "ProviderUnavailable")
      ],
      [
        "malformed JSON becomes ProviderUnavailable",
        { type: "malformed_json" },
        (e) => assert.strictEqual(e._tag, "ProviderUnavailable")
      ]
    ]
    for (const [name, fault, check] of faultCases) {
      it.scoped(name, () =>
        Effect.gen(function* () {
          const emulator = yield* Emulator.start()
          yield* emulator.respond("openai.chat", Emulator.fault(fault))
          const model = yield* modelFor(emulator)
          check(yield* failureOf(model.generate(ask("go"))))
          assert.strictEqual((yield* emulator.requests("openai.chat")).length, 1)
        })
      )
    }

    it.scoped("each 5xx becomes ProviderUnavailable with its status", () =>
      Effect.gen(function* () {
        const emulator = yield* Emulator.start()
        const model = yield* modelFor(emulator)
        const statuses: Array<number | undefined> = []
        for (const status of [500, 502, 503, 529] as const) {
          yield* emulator.enqueue("openai.chat", Emulator.fault({ type: "server_error", status }))
          const error = yield* failureOf(model.generate(ask("go")))
          statuses.push(error._tag === "ProviderUnavailable" ? error.status : undefined)
        }
        assert.deepStrictEqual(statuses, [500, 502, 503, 529])
      })
    )

    it.scoped("the Responses-style context-window text becomes ContextWindowExceeded", () =>
      Effect.gen(function* () {
        const emulator = yield* Emulator.start()
        yield* emulator.respond(
          "openai.chat",
          Emulator.json(
            {
              error: {
                message: Emulator.errorTexts.openaiResponsesContextLength,
                type: "invalid_request_error",
                param: "input",
                code: "context_length_exceeded"
              }
            },
            { status: 400 }
          )
        )
        const model = yield* modelFor(emulator)
        assert.strictEqual((yield* failureOf(model.generate(ask("go"))))._tag, "ContextWindowExceeded")
      })
    )

    it.scoped("a vLLM-style context text without a code becomes ContextWindowExceeded", () =>
      Effect.gen(function* () {
        const emulator = yield* Emulator.start()
        yield* emulator.respond(
          "openai.chat",
          Emulator.json(
            {
              object: "error",
              message:
                "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.",
              type: "BadRequestError",
              code: 400
            },
            { status: 400 }
          )
        )
        const model = yield* modelFor(emulator, { model: "local" })
        const error = yield* failureOf(model.generate(ask("go")))
        assert.strictEqual(error._tag, "ContextWindowExceeded")
        if (error._tag === "ContextWindowExceeded") assert.deepStrictEqual([error.limit, error.requested], [4096, 5000])
      })
    )

    it.scoped("another 400 becomes ProviderInvalidRequest with the vendor's message", () =>
      Effect.gen(function* () {
        const emulator = yield* Emulator.start()
        yield* emulator.respond(
          "openai.chat",
          Emulator.json(
            {
              error: {
                message:
                  "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
                type: "invalid_request_error",
                param: "max_tokens",
                code: "unsupported_parameter"
              }
            },
            { status: 400 }
          )
        )
        const model = yield* modelFor(emulator)
        const error = yield* failureOf(model.generate(ask("go")))
        assert.strictEqual(error._tag, "ProviderInvalidRequest")
        assert.include(error.message, "max_completion_tokens")
      })
    )

    it.scoped("an error event in the middle of a stream is mapped by its code", () =>
      Effect.gen(function* () {
        const emulator = yield* Emulator.start()
        const chunk = (delta: object) =>
          `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "gpt-4.1", choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`
        const errorEvent = (error: object) => `data: ${JSON.stringify({ error })}\n\n`
        yield* emulator.enqueue(
          "openai.chat",
          Emulator.sse(
            chunk({ role: "assistant", content: "" }) +
              errorEvent({
                message: Emulator.errorTexts.openaiResponsesContextLength,
                type: "invalid_request_error",
                param: "input",
                code: "context_length_exceeded"
              })
          ),
          Emulator.sse(
            chunk({ role: "assistant", content: "Par" }) +
              errorEvent({
                message: Emulator.errorTexts.openaiServerError,
                type: "server_error",
                param: null,
                code: null
              })
          )
        )
        const model = yield* modelFor(emulator, { stream: true })
        const tags = [
          (yield* failureOf(model.generate(ask("go"))))._tag,
          (yield* failureOf(model.generate(ask("go"))))._tag
        ]
        assert.deepStrictEqual(tags, ["ContextWindowExceeded", "ProviderUnavailable"])
      })
    )

    it.scoped("the SDK's timeout becomes ProviderTimeout with the limit", () =>
      Effect.gen(function* () {
        const emulator = yield* Emulator.start()
        yield* emulator.respond("openai.chat", Emulator.fault({ type: "hang" }))
        const model = yield* modelFor(emulator, { timeout: Duration.millis(50) })
        const error = yield* failureOf(model.generate(ask("go")))
        assert.strictEqual(error._tag, "ProviderTimeout")
        if (error._tag === "ProviderTimeout") assert.deepStrictEqual(error.after, Duration.millis(50))
      })
    )

    it.scoped("interrupting a call aborts its HTTP request", () =>
      Effect.gen(function* () {
        const emulator = yield* Emulator.start()
        yield* emulator.respond("openai.chat", Emulator.fault({ type: "hang" }))
        const model = yield* modelFor(emulator)
        const fiber = yield* Effect.fork(model.generate(ask("go")))
        yield* eventually(emulator.requests("openai.chat"), (requests) => requests.length === 1)
        yield* Fiber.interrupt(fiber)
        const abandoned = yield* eventually(emulator.abandoned("openai.chat"), (requests) => requests.length === 1)
        assert.strictEqual(abandoned.length, 1)
      })
    )

    it.effect("reads the wait from retry-after-ms, retry-after, x-ratelimit-reset-* or the message", () =>
      Effect.sync(() => {
        const ms = (headers: Record<string, string>, kind?: string, message = "") =>
          Option.getOrUndefined(
            Option.map(Option.fromNullable(retryAfterOf(new Headers(headers), kind, message, 0)), Duration.toMillis)
          )
        assert.strictEqual(ms({ "retry-after-ms": "250", "retry-after": "9" }), 250)
        assert.strictEqual(ms({ "retry-after": "2" }), 2_000)
        assert.strictEqual(
          ms({ "x-ratelimit-reset-requests": "6m0s", "x-ratelimit-reset-tokens": "12ms" }, "tokens"),
          12
        )
        assert.strictEqual(ms({ "x-ratelimit-reset-requests": "1m30s", "x-ratelimit-remaining-requests": "0" }), 90_000)
        assert.strictEqual(ms({}, "tokens", "Please try again in 644ms. Visit ..."), 644)
        assert.isUndefined(ms({}))
      })
    )
  })

  describe("layerConfig", () => {
    it.scoped("needs no key when OPENAI_BASE_URL points at a server", () =>
      Effect.gen(function* () {
        const emulator = yield* Emulator.start()
        yield* emulator.respond("openai.chat", Emulator.openaiText("configured"))
        const provider = ConfigProvider.fromMap(new Map([["OPENAI_BASE_URL", emulator.baseUrl("openai")]]))
        const completion = yield* LanguageModel.LanguageModel.pipe(
          Effect.flatMap((model) => model.generate(ask("hi"))),
          Effect.provide(
            OpenAiLanguageModel.layerConfig({ model: "gpt-4.1" }).pipe(Layer.provide(Layer.setConfigProvider(provider)))
          )
        )
        assert.strictEqual(completion.text, "configured")
      })
    )

    it.effect("fails naming OPENAI_API_KEY when neither key nor base URL is set", () =>
      Effect.gen(function* () {
        const result = yield* Effect.either(
          Layer.build(OpenAiLanguageModel.layerConfig({ model: "gpt-4.1" })).pipe(
            Effect.scoped,
            Effect.withConfigProvider(ConfigProvider.fromMap(new Map()))
          )
        )
        assert.isTrue(Either.isLeft(result))
        if (Either.isLeft(result)) assert.include(String(result.left), "OPENAI_API_KEY")
      })
    )
  })
})
