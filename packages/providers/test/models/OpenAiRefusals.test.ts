/**
 * Which refusals of OpenAI-compatible servers mean "no tools" or "no JSON schemas", as those servers word them, and
 * that OpenAI's own refusals of a bad schema or request are not taken for one. Each refusal reaches the real SDK
 * client from the emulator, as it would from the server.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { makeClient } from "../../src/models/OpenAiLanguageModel.js"
import { refusedCapability } from "../../src/models/openaiErrors.js"
import { Emulator } from "@deep-research/emulator"

/** What `refusedCapability` makes of the error the SDK throws for this answer. */
const classify = (status: number, body: Record<string, unknown>) =>
  Effect.gen(function* () {
    const emulator = yield* Emulator.start()
    yield* emulator.respond("openai.chat", Emulator.json(body, { status }))
    const client = makeClient({ baseUrl: emulator.baseUrl("openai") })
    const error = yield* Effect.promise(() =>
      client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi" }] }).then(
        () => undefined,
        (thrown: unknown) => thrown
      )
    )
    return refusedCapability(error)
  }).pipe(Effect.scoped)

describe("refusals of compatible servers", () => {
  it.live("tools refused by Ollama, vLLM, llama.cpp (as a 500, two wordings) and in LM Studio's words", () =>
    Effect.gen(function* () {
      const refusals: ReadonlyArray<readonly [number, Record<string, unknown>]> = [
        [400, { error: { message: "registry.ollama.ai/library/gemma3:4b does not support tools", type: "api_error" } }],
        [
          400,
          {
            object: "error",
            message: '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',
            type: "BadRequestError",
            code: 400
          }
        ],
        [500, { error: { code: 500, message: "tools param requires --jinja flag", type: "server_error" } }],
        [500, { code: 500, message: "Unsupported param: tools", type: "server_error" }],
        [400, { error: { message: "This model does not support tool calling" } }]
      ]
      for (const [status, body] of refusals) {
        assert.strictEqual(yield* classify(status, body), "toolCalling", JSON.stringify(body))
      }
    })
  )

  it.live("JSON schemas refused", () =>
    Effect.gen(function* () {
      const body = {
        error: { message: 'response_format type must be one of "text" or "json_object"', type: "invalid_request_error" }
      }
      assert.strictEqual(yield* classify(400, body), "structuredOutput")
    })
  )

  it.live("OpenAI's refusal of a bad schema, a rate limit and an unknown model are no capability refusals", () =>
    Effect.gen(function* () {
      const others: ReadonlyArray<readonly [number, Record<string, unknown>]> = [
        [
          400,
          {
            error: {
              message:
                "Invalid schema for response_format 'answer': In context=(), 'additionalProperties' is required to be supplied and to be false.",
              type: "invalid_request_error",
              param: "response_format",
              code: "invalid_json_schema"
            }
          }
        ],
        [
          400,
          {
            error: {
              message: `Invalid schema for function 'lookup': schema must be a JSON Schema of 'type: "object"', got 'type: "None"'.`,
              type: "invalid_request_error",
              param: "tools[0].function.parameters",
              code: "invalid_function_parameters"
            }
          }
        ],
        [429, { error: { message: "Rate limit reached", type: "rate_limit_error" } }],
        [404, { error: { message: "model 'qwen9' not found", type: "api_error" } }]
      ]
      for (const [status, body] of others) assert.isUndefined(yield* classify(status, body), JSON.stringify(body))
    })
  )
})
