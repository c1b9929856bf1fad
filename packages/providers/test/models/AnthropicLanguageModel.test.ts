import { APIConnectionError, APIConnectionTimeoutError, APIError } from "@anthropic-ai/sdk"
import { LanguageModel, StructuredOutput, Tool } from "@deep-research/core"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Deferred, Duration, Effect, Either, Exit, Fiber, Redacted, Schedule, Schema } from "effect"
import { Emulator } from "@deep-research/emulator"
import * as Http from "node:http"
import * as AnthropicLanguageModel from "../../src/models/AnthropicLanguageModel.js"
import { fromError, parseContextWindowMessage, retryAfterOf } from "../../src/models/anthropicErrors.js"

const call = new LanguageModel.ToolCall({ id: "toolu_1", name: "lookup", arguments: { name: "Alice" } })
const other = new LanguageModel.ToolCall({ id: "toolu_2", name: "lookup", arguments: { name: "Bob" } })
const lookup = Tool.make("lookup", {
  description: "Look a person up",
  schema: Schema.Struct({ name: Schema.String })
})

const context = { provider: "anthropic", model: "claude-haiku-4-5", now: 0, timeout: Duration.seconds(60) }
const apiError = (status: number, type: string, message: string, headers: Record<string, string> = {}) =>
  APIError.generate(
    status,
    { type: "error", error: { type, message }, request_id: "req_1" },
    undefined,
    new Headers(headers)
  )

describe("AnthropicLanguageModel request mapping", () => {
  it("sends the system prompt as the top-level system field, not as a message", () => {
    const { body } = AnthropicLanguageModel.toMessagesRequest("claude-haiku-4-5", 1000, {
      system: "Be brief.",
      messages: [LanguageModel.user("Hi")]
    })
    assert.strictEqual(body.system, "Be brief.")
    assert.deepStrictEqual(body.messages, [{ role: "user", content: [{ type: "text", text: "Hi" }] }])
  })

  it("groups consecutive tool results into one user message, results first", () => {
    const messages = AnthropicLanguageModel.toMessages([
      LanguageModel.user("Who is the youngest?"),
      LanguageModel.assistant("Looking them up.", [call, other]),
      LanguageModel.toolResult(call, "Alice is 30"),
      LanguageModel.toolResult(other, "no such person", true),
      LanguageModel.user("You have 3 searches left.")
    ])
    assert.deepStrictEqual(messages, [
      { role: "user", content: [{ type: "text", text: "Who is the youngest?" }] },
      {
        role: "assistant",
        content: [
          { type: "text", text: "Looking them up." },
          { type: "tool_use", id: "toolu_1", name: "lookup", input: { name: "Alice" } },
          { type: "tool_use", id: "toolu_2", name: "lookup", input: { name: "Bob" } }
        ]
      },
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "toolu_1", content: "Alice is 30" },
          { type: "tool_result", tool_use_id: "toolu_2", content: "no such person", is_error: true },
          { type: "text", text: "You have 3 searches left." }
        ]
      }
    ])
  })

  it("drops blank messages, which the API would refuse", () => {
    const messages = AnthropicLanguageModel.toMessages([
      LanguageModel.user("a"),
      LanguageModel.assistant(""),
      LanguageModel.user("  \n"),
      LanguageModel.user("b")
    ])
    assert.deepStrictEqual(messages, [
      {
        role: "user",
        content: [
          { type: "text", text: "a" },
          { type: "text", text: "b" }
        ]
      }
    ])
  })

  it("replays a tool call whose arguments were unreadable JSON with an empty input", () => {
    const broken = new LanguageModel.ToolCall({ id: "toolu_9", name: "lookup", arguments: "{name: Alice" })
    const [, assistant] = AnthropicLanguageModel.toMessages([
      LanguageModel.user("q"),
      LanguageModel.assistant("", [broken])
    ])
    assert.deepStrictEqual(assistant?.content, [{ type: "tool_use", id: "toolu_9", name: "lookup", input: {} }])
  })

  it("maps tool choices to auto, any, none and a named tool", () => {
    const choiceOf = (toolChoice: LanguageModel.ToolChoice) =>
      AnthropicLanguageModel.toMessagesRequest("m", 10, {
        messages: [LanguageModel.user("q")],
        tools: [lookup.definition],
        toolChoice
      }).body.tool_choice
    assert.deepStrictEqual(choiceOf("auto"), { type: "auto" })
    assert.deepStrictEqual(choiceOf("required"), { type: "any" })
    assert.deepStrictEqual(choiceOf("none"), { type: "none" })
    assert.deepStrictEqual(choiceOf({ tool: "lookup" }), { type: "tool", name: "lookup" })
  })

  it("sends tools with their JSON schema as input_schema", () => {
    const { body } = AnthropicLanguageModel.toMessagesRequest("m", 10, {
      messages: [LanguageModel.user("q")],
      tools: [lookup.definition]
    })
    assert.deepStrictEqual(body.tools, [
      {
        name: "lookup",
        description: "Look a person up",
        input_schema: {
          type: "object",
          required: ["name"],
          properties: { name: { type: "string" } },
          additionalProperties: false
        }
      }
    ])
    assert.isUndefined(body.tool_choice)
  })

  it("asks for structured output with a tool the model is forced to call", () => {
    const prepared = AnthropicLanguageModel.toMessagesRequest("m", 10, {
      messages: [LanguageModel.user("q")],
      responseFormat: { name: "brief", schema: Tool.jsonSchemaOf(Schema.Struct({ brief: Schema.String })) }
    })
    assert.deepStrictEqual(prepared.body.tool_choice, { type: "tool", name: "brief" })
    assert.deepInclude(prepared.body.tools?.[0], { name: "brief" })
    assert.strictEqual(prepared.format, "brief")
  })

  it("sends a structured-output schema that is not an object as core wrapped it, since tool inputs must be objects", () => {
    const prepared = AnthropicLanguageModel.toMessagesRequest("m", 10, {
      messages: [LanguageModel.user("q")],
      responseFormat: { name: "list", schema: Tool.jsonSchemaOf(Schema.Array(Schema.String)) }
    })
    const tool = prepared.body.tools?.[0]
    assert.deepStrictEqual(tool !== undefined && "input_schema" in tool ? tool.input_schema.required : [], ["value"])
    assert.strictEqual(tool !== undefined && "input_schema" in tool ? tool.input_schema.type : undefined, "object")
    assert.strictEqual(prepared.format, "list")
  })

  it("uses the request's maxOutputTokens, else the model's default", () => {
    const request = { messages: [LanguageModel.user("q")] }
    assert.strictEqual(AnthropicLanguageModel.toMessagesRequest("m", 777, request).body.max_tokens, 777)
    assert.strictEqual(
      AnthropicLanguageModel.toMessagesRequest("m", 777, { ...request, maxOutputTokens: 55 }).body.max_tokens,
      55
    )
    assert.strictEqual(AnthropicLanguageModel.defaultMaxTokens("claude-3-5-haiku-20241022"), 8_192)
    assert.strictEqual(AnthropicLanguageModel.defaultMaxTokens("claude-sonnet-4-5"), 16_384)
  })
})

describe("AnthropicLanguageModel response mapping", () => {
  const usage = { input_tokens: 10, output_tokens: 5 }

  it("joins text blocks and collects tool_use blocks as tool calls", () => {
    const completion = AnthropicLanguageModel.toCompletion(
      {
        model: "claude-haiku-4-5",
        stop_reason: "tool_use",
        usage,
        content: [
          { type: "text", text: "Checking " },
          { type: "text", text: "now." },
          { type: "tool_use", id: "toolu_1", name: "lookup", input: { name: "Alice" } }
        ]
      },
      undefined
    )
    assert.strictEqual(completion.text, "Checking now.")
    assert.strictEqual(completion.finishReason, "tool_calls")
    assert.deepStrictEqual(completion.toolCalls, [call])
  })

  it("turns the forced structured-output tool call into the completion's JSON text", () => {
    const completion = AnthropicLanguageModel.toCompletion(
      {
        model: "m",
        stop_reason: "tool_use",
        usage,
        content: [{ type: "tool_use", id: "toolu_1", name: "brief", input: { brief: "b" } }]
      },
      "brief"
    )
    assert.strictEqual(completion.text, '{"brief":"b"}')
    assert.strictEqual(completion.toolCalls.length, 0)
    assert.strictEqual(completion.finishReason, "stop")
  })

  it("a wrapped structured answer decodes through core once unwrapped", () => {
    const completion = AnthropicLanguageModel.toCompletion(
      {
        model: "m",
        stop_reason: "tool_use",
        usage,
        content: [{ type: "tool_use", id: "toolu_1", name: "list", input: { value: ["a", "b"] } }]
      },
      "list"
    )
    assert.strictEqual(completion.text, '{"value":["a","b"]}')
    const decoded = StructuredOutput.parseAnswer(Schema.Array(Schema.String), completion.text)
    assert.deepStrictEqual(Either.getOrThrow(decoded), ["a", "b"])
  })

  it("counts cache reads and writes as input and the reads as cached", () => {
    const result = AnthropicLanguageModel.usageOf({
      input_tokens: 100,
      output_tokens: 20,
      cache_read_input_tokens: 1000,
      cache_creation_input_tokens: 50,
      output_tokens_details: { thinking_tokens: 7 }
    })
    assert.strictEqual(result.inputTokens, 1150)
    assert.strictEqual(result.cachedInputTokens, 1000)
    assert.strictEqual(result.outputTokens, 20)
    assert.strictEqual(result.reasoningTokens, 7)
  })

  it("maps every stop reason", () => {
    assert.strictEqual(AnthropicLanguageModel.finishReasonOf("end_turn"), "stop")
    assert.strictEqual(AnthropicLanguageModel.finishReasonOf("stop_sequence"), "stop")
    assert.strictEqual(AnthropicLanguageModel.finishReasonOf("max_tokens"), "length")
    assert.strictEqual(AnthropicLanguageModel.finishReasonOf("model_context_window_exceeded"), "length")
    assert.strictEqual(AnthropicLanguageModel.finishReasonOf("tool_use"), "tool_calls")
    assert.strictEqual(AnthropicLanguageModel.finishReasonOf("refusal"), "content_filter")
    assert.strictEqual(AnthropicLanguageModel.finishReasonOf("pause_turn"), "other")
    assert.strictEqual(AnthropicLanguageModel.finishReasonOf(null), "other")
  })
})

describe("Anthropic error mapping", () => {
  it("reads both numbers of a prompt-too-long message", () => {
    assert.deepStrictEqual(parseContextWindowMessage("prompt is too long: 208310 tokens > 200000 maximum"), {
      requested: 208310,
      limit: 200000
    })
    assert.deepStrictEqual(
      parseContextWindowMessage(
        "input length and `max_tokens` exceed context limit: 199759 + 8192 > 200000, decrease input length or `max_tokens` and try again"
      ),
      { requested: 207951, limit: 200000 }
    )
    assert.isUndefined(parseContextWindowMessage("messages: roles must alternate"))
  })

  it("maps a prompt-too-long 400 to ContextWindowExceeded with both numbers", () => {
    const error = fromError(
      apiError(400, "invalid_request_error", "prompt is too long: 200016 tokens > 200000 maximum"),
      context
    )
    assert.strictEqual(error._tag, "ContextWindowExceeded")
    if (error._tag === "ContextWindowExceeded") {
      assert.strictEqual(error.requested, 200016)
      assert.strictEqual(error.limit, 200000)
      assert.strictEqual(error.model, "claude-haiku-4-5")
    }
  })

  it("maps any other 400 to ProviderInvalidRequest with the API's message", () => {
    const error = fromError(apiError(400, "invalid_request_error", "messages.0.role: bad"), context)
    assert.strictEqual(error._tag, "ProviderInvalidRequest")
    assert.strictEqual(error._tag === "ProviderInvalidRequest" ? error.detail : "", "messages.0.role: bad")
    assert.strictEqual(error.message, `${context.provider} rejected the request: messages.0.role: bad`)
  })

  it("maps 401 to ProviderAuthenticationFailed", () => {
    assert.strictEqual(
      fromError(apiError(401, "authentication_error", "invalid x-api-key"), context)._tag,
      "ProviderAuthenticationFailed"
    )
  })

  it("maps 429 to ProviderRateLimited with retry-after in seconds, or retry-after-ms", () => {
    const seconds = fromError(apiError(429, "rate_limit_error", "slow down", { "retry-after": "7" }), context)
    assert.strictEqual(seconds._tag, "ProviderRateLimited")
    if (seconds._tag === "ProviderRateLimited") assert.deepStrictEqual(seconds.retryAfter, Duration.seconds(7))
    const millis = fromError(apiError(429, "rate_limit_error", "slow down", { "retry-after-ms": "250" }), context)
    if (millis._tag === "ProviderRateLimited") assert.deepStrictEqual(millis.retryAfter, Duration.millis(250))
    else assert.fail(`expected ProviderRateLimited, got ${millis._tag}`)
  })

  it("reads retry-after given as an HTTP date against the current time", () => {
    const now = Date.parse("2026-01-01T00:00:00Z")
    assert.deepStrictEqual(
      retryAfterOf(new Headers({ "retry-after": "Thu, 01 Jan 2026 00:00:30 GMT" }), now),
      Duration.millis(30_000)
    )
    assert.isUndefined(retryAfterOf(new Headers({}), now))
  })

  it("maps 529 overloaded to ProviderUnavailable with status 529", () => {
    const error = fromError(apiError(529, "overloaded_error", "Overloaded"), context)
    assert.strictEqual(error._tag, "ProviderUnavailable")
    if (error._tag === "ProviderUnavailable") assert.strictEqual(error.status, 529)
  })

  it("maps 5xx to ProviderUnavailable with the status", () => {
    const error = fromError(apiError(503, "api_error", "unavailable"), context)
    if (error._tag === "ProviderUnavailable") assert.strictEqual(error.status, 503)
    else assert.fail(`expected ProviderUnavailable, got ${error._tag}`)
  })

  it("maps a mid-stream overloaded error event (no status) to ProviderUnavailable 529", () => {
    const midStream = new APIError(
      undefined,
      { type: "error", error: { type: "overloaded_error", message: "Overloaded" } },
      undefined,
      undefined
    )
    const error = fromError(midStream, context)
    if (error._tag === "ProviderUnavailable") assert.strictEqual(error.status, 529)
    else assert.fail(`expected ProviderUnavailable, got ${error._tag}`)
  })

  it("maps billing errors to ProviderQuotaExhausted", () => {
    assert.strictEqual(fromError(apiError(402, "billing_error", "no credit"), context)._tag, "ProviderQuotaExhausted")
  })

  it("maps a connection failure to ProviderUnavailable and a client timeout to ProviderTimeout", () => {
    const reset = fromError(new APIConnectionError({ cause: new Error("socket hang up") }), context)
    assert.strictEqual(reset._tag, "ProviderUnavailable")
    const timeout = fromError(new APIConnectionTimeoutError(), context)
    if (timeout._tag === "ProviderTimeout") assert.deepStrictEqual(timeout.after, Duration.seconds(60))
    else assert.fail(`expected ProviderTimeout, got ${timeout._tag}`)
  })

  it("maps an unreadable body to ProviderUnavailable", () => {
    assert.strictEqual(fromError(new SyntaxError("Unexpected token"), context)._tag, "ProviderUnavailable")
  })
})

// =============================================================================
// Against the emulator, through the real SDK
// =============================================================================

const modelAt = (emulator: Emulator.Handle, options: Partial<AnthropicLanguageModel.Options> = {}) =>
  AnthropicLanguageModel.make({
    apiKey: Redacted.make("sk-ant-emulator"),
    model: "claude-sonnet-4-6",
    baseUrl: emulator.baseUrl("anthropic"),
    ...options
  })

const lastBody = (emulator: Emulator.Handle) =>
  Effect.map(emulator.requests("anthropic.messages"), (requests) => requests.at(-1)?.body)

const failureOf = (emulator: Emulator.Handle, fault: Emulator.Fault) =>
  Effect.gen(function* () {
    yield* emulator.respond("anthropic.messages", Emulator.fault(fault))
    const model = yield* modelAt(emulator)
    return yield* Effect.flip(model.generate({ messages: [LanguageModel.user("Hi")] }))
  })

describe("AnthropicLanguageModel against the emulator", () => {
  it.scopedLive("answers with text, usage and the model's name", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond(
        "anthropic.messages",
        Emulator.anthropicText("Paris.", { usage: { input: 12, output: 3, cached: 4 } })
      )
      const model = yield* modelAt(emulator, { maxTokens: 2048 })
      const completion = yield* model.generate({
        system: "Answer briefly.",
        messages: [LanguageModel.user("Capital?")]
      })
      assert.strictEqual(completion.text, "Paris.")
      assert.strictEqual(completion.finishReason, "stop")
      assert.strictEqual(completion.model, "claude-sonnet-4-6")
      assert.strictEqual(completion.usage.inputTokens, 16)
      assert.strictEqual(completion.usage.cachedInputTokens, 4)
      assert.strictEqual(completion.usage.outputTokens, 3)
      const body = yield* lastBody(emulator)
      assert.deepInclude(body, { model: "claude-sonnet-4-6", max_tokens: 2048, system: "Answer briefly." })
    })
  )

  it.scopedLive("sends the key and never retries on its own", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("anthropic.messages", Emulator.fault({ type: "server_error", status: 500 }))
      const model = yield* modelAt(emulator)
      yield* Effect.flip(model.generate({ messages: [LanguageModel.user("Hi")] }))
      const requests = yield* emulator.requests("anthropic.messages")
      assert.strictEqual(requests.length, 1)
      const headers = requests[0]?.headers ?? {}
      assert.isTrue(
        headers["authorization"] === "Bearer sk-ant-emulator" || headers["x-api-key"] === "sk-ant-emulator",
        "the API key is sent"
      )
    })
  )

  it.scopedLive("returns parallel tool calls and sends tool results back grouped in one user turn", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond(
        "anthropic.messages",
        Emulator.anthropicToolUse(
          [
            { id: "toolu_a", name: "lookup", arguments: { name: "Carol" } },
            { id: "toolu_b", name: "lookup", arguments: { name: "Dan" } }
          ],
          { text: "Two more." }
        )
      )
      const model = yield* modelAt(emulator)
      const completion = yield* model.generate({
        messages: [
          LanguageModel.user("Who is the youngest?"),
          LanguageModel.assistant("", [call, other]),
          LanguageModel.toolResult(call, "30"),
          LanguageModel.toolResult(other, "25")
        ],
        tools: [lookup.definition],
        toolChoice: "required"
      })
      assert.strictEqual(completion.finishReason, "tool_calls")
      assert.strictEqual(completion.text, "Two more.")
      assert.deepStrictEqual(
        completion.toolCalls.map((c) => [c.id, c.name, c.arguments]),
        [
          ["toolu_a", "lookup", { name: "Carol" }],
          ["toolu_b", "lookup", { name: "Dan" }]
        ]
      )
      const body = yield* lastBody(emulator)
      assert.deepInclude(body, { tool_choice: { type: "any" } })
      assert.deepStrictEqual(
        Schema.decodeUnknownSync(
          Schema.Struct({
            messages: Schema.Array(Schema.Struct({ role: Schema.String, content: Schema.Array(Schema.Unknown) }))
          })
        )(body).messages.map((m) => [m.role, m.content.length]),
        [
          ["user", 1],
          ["assistant", 2],
          ["user", 2]
        ]
      )
    })
  )

  it.scopedLive("gives structured output through a forced tool to generateObject", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond(
        "anthropic.messages",
        Emulator.anthropicToolUse([{ name: "brief", arguments: { brief: "Compare heat pumps", language: "en" } }])
      )
      const model = yield* modelAt(emulator)
      const Brief = Schema.Struct({ brief: Schema.String, language: Schema.String })
      const result = yield* StructuredOutput.generateObject(
        model,
        Brief,
        { messages: [LanguageModel.user("Heat pumps?")] },
        { name: "brief" }
      )
      assert.deepStrictEqual(result.value, { brief: "Compare heat pumps", language: "en" })
      assert.strictEqual(result.attempts, 1)
      const body = yield* lastBody(emulator)
      assert.deepInclude(body, { tool_choice: { type: "tool", name: "brief" } })
    })
  )

  it.scopedLive("streams when asked and accumulates the same completion", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond(
        "anthropic.messages",
        Emulator.anthropicToolUse([{ id: "toolu_s", name: "lookup", arguments: { name: "Eve" } }], {
          text: "Let me check.",
          usage: { input: 40, output: 12 }
        })
      )
      const model = yield* modelAt(emulator, { stream: true })
      const completion = yield* model.generate({ messages: [LanguageModel.user("Eve?")], tools: [lookup.definition] })
      assert.strictEqual(completion.text, "Let me check.")
      assert.deepStrictEqual(completion.toolCalls[0]?.arguments, { name: "Eve" })
      assert.strictEqual(completion.usage.inputTokens, 40)
      assert.strictEqual(completion.usage.outputTokens, 12)
      assert.deepInclude(yield* lastBody(emulator), { stream: true })
    })
  )

  it.scopedLive("an error event in the middle of a stream becomes ProviderUnavailable 529", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond(
        "anthropic.messages",
        Emulator.sse(
          [
            "event: message_start",
            'data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-6","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":1}}}',
            "",
            "event: error",
            'data: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
            "",
            ""
          ].join("\n")
        )
      )
      const model = yield* modelAt(emulator, { stream: true })
      const error = yield* Effect.flip(model.generate({ messages: [LanguageModel.user("Hi")] }))
      assert.strictEqual(error._tag, "ProviderUnavailable")
      if (error._tag === "ProviderUnavailable") assert.strictEqual(error.status, 529)
    })
  )

  it.scopedLive("passes a tool call's input through as it came, for core to decode against the tool's schema", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("anthropic.messages", Emulator.fault({ type: "invalid_tool_arguments" }))
      const model = yield* modelAt(emulator)
      const completion = yield* model.generate({ messages: [LanguageModel.user("q")], tools: [lookup.definition] })
      const [invalid] = completion.toolCalls
      assert.strictEqual(invalid?.name, "lookup")
      assert.isTrue(Either.isLeft(Tool.decodeArguments(lookup, invalid?.arguments)))
    })
  )

  it.scopedLive("layerConfig reads ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("anthropic.messages", Emulator.anthropicText("from config"))
      const completion = yield* Effect.flatMap(LanguageModel.LanguageModel, (model) =>
        model.generate({ messages: [LanguageModel.user("q")] })
      ).pipe(
        Effect.provide(AnthropicLanguageModel.layerConfig({ model: "claude-sonnet-4-6" })),
        Effect.withConfigProvider(
          ConfigProvider.fromMap(
            new Map([
              ["ANTHROPIC_API_KEY", "sk-ant-config"],
              ["ANTHROPIC_BASE_URL", emulator.baseUrl("anthropic")]
            ])
          )
        )
      )
      assert.strictEqual(completion.text, "from config")
    })
  )

  it.effect("layerConfig fails when ANTHROPIC_API_KEY is missing", () =>
    Effect.gen(function* () {
      const exit = yield* Effect.exit(
        Effect.provide(LanguageModel.LanguageModel, AnthropicLanguageModel.layerConfig({ model: "claude-sonnet-4-6" }))
      )
      assert.isTrue(Exit.isFailure(exit))
    }).pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map())))
  )

  it.scopedLive("a 429 becomes ProviderRateLimited with the retry-after delay", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      const error = yield* failureOf(emulator, { type: "rate_limit", retryAfterSeconds: 7 })
      assert.strictEqual(error._tag, "ProviderRateLimited")
      if (error._tag === "ProviderRateLimited") assert.deepStrictEqual(error.retryAfter, Duration.seconds(7))
    })
  )

  it.scopedLive("a 529 overloaded becomes ProviderUnavailable with status 529", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      const error = yield* failureOf(emulator, { type: "server_error", status: 529 })
      assert.strictEqual(error._tag, "ProviderUnavailable")
      if (error._tag === "ProviderUnavailable") assert.strictEqual(error.status, 529)
    })
  )

  it.scopedLive("a 500 becomes ProviderUnavailable with status 500", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      const error = yield* failureOf(emulator, { type: "server_error", status: 500 })
      assert.strictEqual(error._tag, "ProviderUnavailable")
      if (error._tag === "ProviderUnavailable") assert.strictEqual(error.status, 500)
    })
  )

  it.scopedLive("a refused key becomes ProviderAuthenticationFailed", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      assert.strictEqual((yield* failureOf(emulator, { type: "auth" }))._tag, "ProviderAuthenticationFailed")
    })
  )

  it.scopedLive("a prompt that is too long becomes ContextWindowExceeded with both numbers", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      const error = yield* failureOf(emulator, { type: "context_length" })
      assert.strictEqual(error._tag, "ContextWindowExceeded")
      if (error._tag === "ContextWindowExceeded") {
        assert.strictEqual(error.requested, 208310)
        assert.strictEqual(error.limit, 200000)
        assert.strictEqual(error.model, "claude-sonnet-4-6")
      }
    })
  )

  it.scopedLive("an empty credit balance becomes ProviderQuotaExhausted", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      assert.strictEqual((yield* failureOf(emulator, { type: "quota" }))._tag, "ProviderQuotaExhausted")
    })
  )

  it.scopedLive("a reset connection becomes ProviderUnavailable", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      assert.strictEqual((yield* failureOf(emulator, { type: "reset" }))._tag, "ProviderUnavailable")
    })
  )

  it.scopedLive("a truncated JSON body becomes ProviderUnavailable", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      assert.strictEqual((yield* failureOf(emulator, { type: "malformed_json" }))._tag, "ProviderUnavailable")
    })
  )

  it.scopedLive("a hanging request is abandoned when the fiber is interrupted", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("anthropic.messages", Emulator.fault({ type: "hang" }))
      const model = yield* modelAt(emulator)
      const fiber = yield* Effect.fork(model.generate({ messages: [LanguageModel.user("Hi")] }))
      // Wait until the request has reached the server before interrupting it.
      yield* emulator
        .requests("anthropic.messages")
        .pipe(
          Effect.repeat({ schedule: Schedule.spaced("10 millis"), until: (requests) => requests.length > 0 }),
          Effect.timeoutFail({ duration: "5 seconds", onTimeout: () => new Error("the request never arrived") })
        )
      const exit = yield* Fiber.interrupt(fiber)
      assert.isTrue(Exit.isInterrupted(exit))
    })
  )

  it.scopedLive("interruption aborts the HTTP request itself, closing the connection", () =>
    Effect.gen(function* () {
      // A bare server that never answers and reports when the client goes away.
      const closed = yield* Deferred.make<void>()
      const arrived = yield* Deferred.make<void>()
      const server = yield* Effect.acquireRelease(
        Effect.async<Http.Server>((resume) => {
          const created = Http.createServer((request) => {
            Deferred.unsafeDone(arrived, Exit.void)
            request.socket.once("close", () => Deferred.unsafeDone(closed, Exit.void))
          })
          created.listen(0, "127.0.0.1", () => resume(Effect.succeed(created)))
        }),
        (created) =>
          Effect.async<void>((resume) => {
            created.closeAllConnections()
            created.close(() => resume(Effect.void))
          })
      )
      const address = server.address()
      if (address === null || typeof address === "string") return assert.fail("the test server has no port")
      const model = yield* AnthropicLanguageModel.make({
        apiKey: Redacted.make("sk-ant-test"),
        model: "claude-sonnet-4-6",
        baseUrl: `http://127.0.0.1:${address.port}`
      })
      const fiber = yield* Effect.fork(model.generate({ messages: [LanguageModel.user("Hi")] }))
      yield* Deferred.await(arrived)
      yield* Fiber.interrupt(fiber)
      yield* Deferred.await(closed).pipe(
        Effect.timeoutFail({ duration: "5 seconds", onTimeout: () => new Error("the connection stayed open") })
      )
    })
  )

  it.scopedLive("a hanging request fails with ProviderTimeout after the client's time limit", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("anthropic.messages", Emulator.fault({ type: "hang" }))
      const model = yield* modelAt(emulator, { timeout: "200 millis" })
      const error = yield* Effect.flip(model.generate({ messages: [LanguageModel.user("Hi")] }))
      assert.strictEqual(error._tag, "ProviderTimeout")
      if (error._tag === "ProviderTimeout") assert.deepStrictEqual(error.after, Duration.millis(200))
    })
  )
})
