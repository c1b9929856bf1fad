/**
 * The emulator refuses what the vendors refuse, in their shape. The official SDKs are the clients, and the error
 * bodies are compared with the recorded 400s of the providers' `test/fixtures/vendor-cassettes/`, field by field.
 */
import Anthropic from "@anthropic-ai/sdk"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import OpenAI from "openai"
import { Emulator } from "../src/index.js"

const cassettes = fileURLToPath(new URL("../../providers/test/fixtures/vendor-cassettes", import.meta.url))
const recorded = (path: string) => JSON.parse(readFileSync(`${cassettes}/${path}`, "utf8")).response

const openaiClient = (emulator: Emulator.Handle) =>
  new OpenAI({ apiKey: "sk-test", baseURL: emulator.baseUrl("openai"), maxRetries: 0 })
const anthropicClient = (emulator: Emulator.Handle) =>
  new Anthropic({ apiKey: "sk-ant-test", baseURL: emulator.baseUrl("anthropic"), maxRetries: 0 })

/** What an SDK call threw, or "accepted". */
const outcome = (call: () => Promise<unknown>) =>
  Effect.promise(() =>
    call().then(
      () => "accepted" as const,
      (error: unknown) => error
    )
  )

const openaiRefusal = (error: unknown) => {
  assert.instanceOf(error, OpenAI.BadRequestError)
  return error
}

const anthropicRefusal = (error: unknown) => {
  assert.instanceOf(error, Anthropic.BadRequestError)
  return error
}

const user = [{ role: "user" as const, content: "hi" }]

const Fields = Schema.Record({ key: Schema.String, value: Schema.Unknown })
const OpenAiErrorBody = Schema.Struct({ error: Fields })
const AnthropicErrorBody = Schema.Struct({ type: Schema.String, error: Fields, request_id: Schema.String })
const objectSchema = { type: "object", properties: { q: { type: "string" } }, required: ["q"] }

describe("Emulator refuses what OpenAI refuses", () => {
  it.scoped("a function whose parameters are not an object at the root, with OpenAI's code, param and words", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("openai.chat", Emulator.openaiText("ok"))
      const client = openaiClient(emulator)
      for (const parameters of [{ $ref: "#/$defs/X", $defs: { X: objectSchema } }, { anyOf: [objectSchema] }]) {
        const error = openaiRefusal(
          yield* outcome(() =>
            client.chat.completions.create({
              model: "gpt-4.1",
              messages: user,
              tools: [{ type: "function", function: { name: "lookup", parameters } }]
            })
          )
        )
        assert.strictEqual(error.status, 400)
        assert.strictEqual(error.code, "invalid_function_parameters")
        assert.strictEqual(error.param, "tools[0].function.parameters")
        assert.strictEqual(
          error.error !== undefined && typeof error.error === "object" && "message" in error.error
            ? error.error.message
            : undefined,
          `Invalid schema for function 'lookup': schema must be a JSON Schema of 'type: "object"', got 'type: "None"'.`
        )
      }
      // Nothing scripted was consumed by the refused requests, and a good request is answered.
      const ok = yield* outcome(() =>
        client.chat.completions.create({
          model: "gpt-4.1",
          messages: user,
          tools: [{ type: "function", function: { name: "lookup", parameters: objectSchema } }]
        })
      )
      assert.strictEqual(ok, "accepted")
    })
  )

  it.scoped("the refusal body has the fields of the recorded 400, with the same types", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      const response = yield* Effect.promise(() =>
        fetch(`${emulator.baseUrl("openai")}/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({
            model: "m",
            messages: user,
            response_format: { type: "json_schema", json_schema: { name: "a", schema: { type: "array" } } }
          })
        }).then(async (r) => ({ status: r.status, body: await r.json() }))
      )
      const cassette = recorded("openai/chat-error-400-unsupported-value.json")
      assert.strictEqual(response.status, cassette.status)
      const mine = Schema.decodeUnknownSync(OpenAiErrorBody)(response.body).error
      const theirs = cassette.body.error
      assert.deepStrictEqual(Object.keys(mine).sort(), Object.keys(theirs).sort())
      for (const key of Object.keys(theirs)) assert.strictEqual(typeof mine[key], typeof theirs[key], key)
      assert.strictEqual(mine["code"], "invalid_json_schema")
    })
  )

  it.scoped("a strict schema that breaks the strict rules: additionalProperties, required, keywords", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("openai.chat", Emulator.openaiText("{}"))
      const client = openaiClient(emulator)
      const cases: ReadonlyArray<readonly [Record<string, unknown>, string]> = [
        [objectSchema, "In context=(), 'additionalProperties' is required to be supplied and to be false."],
        [
          {
            type: "object",
            properties: { q: { type: "string" }, r: { type: "string" } },
            required: ["q"],
            additionalProperties: false
          },
          "In context=(), 'required' is required to be supplied and to be an array including every key in properties. Missing 'r'."
        ],
        [
          {
            type: "object",
            properties: { q: { type: "string", minLength: 1 } },
            required: ["q"],
            additionalProperties: false
          },
          "In context=('properties', 'q'), 'minLength' is not permitted."
        ],
        [
          {
            type: "object",
            properties: { q: { type: "object", properties: { x: { type: "string" } }, required: ["x"] } },
            required: ["q"],
            additionalProperties: false
          },
          "In context=('properties', 'q'), 'additionalProperties' is required to be supplied and to be false."
        ]
      ]
      for (const [schema, words] of cases) {
        const asFormat = openaiRefusal(
          yield* outcome(() =>
            client.chat.completions.create({
              model: "gpt-4.1",
              messages: user,
              response_format: { type: "json_schema", json_schema: { name: "answer", strict: true, schema } }
            })
          )
        )
        assert.include(asFormat.message, `Invalid schema for response_format 'answer': ${words}`)
        assert.strictEqual(asFormat.code, "invalid_json_schema")
        const asTool = openaiRefusal(
          yield* outcome(() =>
            client.chat.completions.create({
              model: "gpt-4.1",
              messages: user,
              tools: [{ type: "function", function: { name: "lookup", strict: true, parameters: schema } }]
            })
          )
        )
        assert.include(asTool.message, `Invalid schema for function 'lookup': ${words}`)
        // Without `strict` the same schema is taken.
        const loose = yield* outcome(() =>
          client.chat.completions.create({
            model: "gpt-4.1",
            messages: user,
            response_format: { type: "json_schema", json_schema: { name: "answer", schema } }
          })
        )
        assert.strictEqual(loose, "accepted")
      }
    })
  )

  it.scoped("tool calls that are not all answered, and a tool message that answers nothing", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("openai.chat", Emulator.openaiText("ok"))
      const client = openaiClient(emulator)
      const calls = [
        { id: "call_a", type: "function" as const, function: { name: "lookup", arguments: "{}" } },
        { id: "call_b", type: "function" as const, function: { name: "lookup", arguments: "{}" } }
      ]
      const unanswered = openaiRefusal(
        yield* outcome(() =>
          client.chat.completions.create({
            model: "gpt-4.1",
            messages: [
              ...user,
              { role: "assistant", content: null, tool_calls: calls },
              { role: "tool", tool_call_id: "call_a", content: "a" },
              { role: "user", content: "and?" }
            ]
          })
        )
      )
      assert.include(unanswered.message, "did not have response messages: call_b")
      const floating = openaiRefusal(
        yield* outcome(() =>
          client.chat.completions.create({
            model: "gpt-4.1",
            messages: [...user, { role: "tool", tool_call_id: "call_x", content: "x" }]
          })
        )
      )
      assert.include(floating.message, "must be a response to a preceeding message with 'tool_calls'")
    })
  )
})

describe("Emulator refuses what Anthropic refuses", () => {
  it.scoped(
    "a request without max_tokens, and a tool whose input_schema is not an object, as invalid_request_error",
    () =>
      Effect.gen(function* () {
        const emulator = yield* Emulator.start()
        yield* emulator.respond("anthropic.messages", Emulator.anthropicText("ok"))
        const response = yield* Effect.promise(() =>
          fetch(`${emulator.baseUrl("anthropic")}/v1/messages`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ model: "claude-haiku-4-5", messages: user })
          }).then(async (r) => ({ status: r.status, body: await r.json() }))
        )
        const cassette = recorded("anthropic/messages-error-400-prompt-too-long.json")
        assert.strictEqual(response.status, cassette.status)
        const body = Schema.decodeUnknownSync(AnthropicErrorBody)(response.body)
        assert.deepStrictEqual(Object.keys(body).sort(), Object.keys(cassette.body).sort())
        assert.deepStrictEqual(Object.keys(body.error).sort(), Object.keys(cassette.body.error).sort())
        assert.strictEqual(body.error["type"], "invalid_request_error")
        assert.strictEqual(body.error["message"], "max_tokens: Field required")

        const client = anthropicClient(emulator)
        const error = anthropicRefusal(
          yield* outcome(() =>
            client.messages.create({
              model: "claude-haiku-4-5",
              max_tokens: 64,
              messages: user,
              // A root reference, as Effect makes for a class: the API wants `type: "object"`.
              tools: [{ name: "lookup", input_schema: { $ref: "#/$defs/X", $defs: { X: objectSchema } } as never }]
            })
          )
        )
        assert.strictEqual(error.status, 400)
        assert.include(error.message, "tools.0.custom.input_schema.type: Input should be 'object'")
      })
  )

  it.scoped("tool_use ids without tool_result blocks right after, and a tool_result that answers nothing", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("anthropic.messages", Emulator.anthropicText("ok"))
      const client = anthropicClient(emulator)
      const unanswered = anthropicRefusal(
        yield* outcome(() =>
          client.messages.create({
            model: "claude-haiku-4-5",
            max_tokens: 64,
            messages: [
              ...user,
              {
                role: "assistant",
                content: [
                  { type: "tool_use", id: "toolu_a", name: "lookup", input: {} },
                  { type: "tool_use", id: "toolu_b", name: "lookup", input: {} }
                ]
              },
              { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_a", content: "a" }] }
            ]
          })
        )
      )
      assert.include(
        unanswered.message,
        "`tool_use` ids were found without `tool_result` blocks immediately after: toolu_b"
      )
      const floating = anthropicRefusal(
        yield* outcome(() =>
          client.messages.create({
            model: "claude-haiku-4-5",
            max_tokens: 64,
            messages: [{ role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_x", content: "x" }] }]
          })
        )
      )
      assert.include(floating.message, "unexpected `tool_use_id` found in `tool_result` blocks: toolu_x")
    })
  )
})
