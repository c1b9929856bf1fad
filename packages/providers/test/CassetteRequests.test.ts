/**
 * The request direction of the recorded cassettes: the library builds the request each recording made (the same tools,
 * tool choice and response format, from Effect Schemas as a user of the library would write them), sends it through
 * the real SDK to the emulator, and what arrives is compared field by field with what the vendor accepted. A field we
 * send that the recording does not have, or a structural keyword that differs, fails the test.
 */
import { LanguageModel, StructuredOutput, Tool } from "@deep-research/core"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Predicate, Redacted, Schema } from "effect"
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { AnthropicLanguageModel, AnthropicWebSearch, OpenAiLanguageModel, OpenAiWebSearch } from "../src/index.js"
import { Emulator } from "@deep-research/emulator"

const cassettes = fileURLToPath(new URL("./fixtures/vendor-cassettes", import.meta.url))
const cassettePath = (name: string) => `${cassettes}/${name}`

const recordedRequest = (name: string): Readonly<Record<string, unknown>> => {
  const request: unknown = JSON.parse(readFileSync(cassettePath(name), "utf8")).request
  if (!Predicate.isRecord(request)) throw new Error(`${name} has no request`)
  return request
}

/** Keywords that describe without constraining: present on one side only is no difference to a vendor. */
const annotations: ReadonlySet<string> = new Set(["title", "description"])

/**
 * Where `ours` differs from `recorded`: a field one has and the other lacks (annotations aside), or a value that
 * differs. Returns the paths of the differences.
 */
const differences = (ours: unknown, recorded: unknown, path = "$"): ReadonlyArray<string> => {
  if (Array.isArray(recorded)) {
    if (!Array.isArray(ours) || ours.length !== recorded.length) return [`${path}: ${JSON.stringify(ours)}`]
    return recorded.flatMap((item, i) => differences(ours[i], item, `${path}[${i}]`))
  }
  if (Predicate.isRecord(recorded)) {
    if (!Predicate.isRecord(ours)) return [`${path}: ${JSON.stringify(ours)}`]
    const keys = new Set([...Object.keys(recorded), ...Object.keys(ours)])
    return [...keys].flatMap((key) => {
      const inOurs = key in ours
      const inRecorded = key in recorded
      if (inOurs !== inRecorded) {
        return annotations.has(key)
          ? []
          : [`${path}.${key}: ${inOurs ? "sent but not recorded" : "recorded but not sent"}`]
      }
      return differences(ours[key], recorded[key], `${path}.${key}`)
    })
  }
  return Object.is(ours, recorded) ? [] : [`${path}: ${JSON.stringify(ours)} instead of ${JSON.stringify(recorded)}`]
}

/** Fields we send must be fields the recording carried, each with a value of the same kind. */
const subsetDifferences = (ours: Readonly<Record<string, unknown>>, recorded: Readonly<Record<string, unknown>>) =>
  Object.entries(ours).flatMap(([key, value]) =>
    !(key in recorded)
      ? [`${key}: sent but not recorded`]
      : recorded[key] !== null && typeof recorded[key] !== typeof value
        ? [`${key}: ${typeof value} instead of ${typeof recorded[key]}`]
        : []
  )

/**
 * One client's quirk: ruby_llm writes `"strict": true` inside the parameters schema itself (not on the function),
 * where the API reads it as an unknown keyword and ignores it. It is no field of the request shape.
 */
const withoutRubyStrict = (schema: unknown): unknown => {
  if (!Predicate.isRecord(schema)) return schema
  const { strict: _strict, ...rest } = schema
  return rest
}

const lastBody = (emulator: Emulator.Handle) =>
  Effect.map(emulator.requests(), (requests) => {
    const body = requests.at(-1)?.body
    if (!Predicate.isRecord(body)) throw new Error("no request body arrived")
    return body
  })

const field = (value: unknown, key: string): unknown => (Predicate.isRecord(value) ? value[key] : undefined)
const list = (value: unknown): ReadonlyArray<unknown> => (Array.isArray(value) ? value : [])

// The tools of the recordings, as Effect Schemas.
const weather = Tool.make("weather", {
  description: "Gets current weather for a location",
  schema: Schema.Struct({
    latitude: Schema.String.annotations({ description: "Latitude (e.g., 52.5200)" }),
    longitude: Schema.String.annotations({ description: "Longitude (e.g., 13.4050)" })
  })
})
const bestLanguage = Tool.make("best_language_to_learn", {
  description: "Gets the best language to learn",
  schema: Schema.Struct({})
})
const entityInfo = Tool.make("retrieve_entity_info", {
  description: "Get the knowledge about the given entity.",
  schema: Schema.Struct({ name: Schema.String })
})
const capital = Tool.make("get_capital", { description: "", schema: Schema.Struct({ country: Schema.String }) })

const userText = (request: Readonly<Record<string, unknown>>): string => {
  const content = field(list(request["messages"])[0], "content")
  return typeof content === "string" ? content : String(field(list(content)[0], "text"))
}

describe("requests the library builds, against the recorded ones", () => {
  it("the comparison sees a field sent but not recorded, a changed keyword, and lets an annotation be", () => {
    const recorded = { type: "object", properties: { q: { type: "string" } }, required: ["q"] }
    assert.deepStrictEqual(differences({ ...recorded, description: "d" }, recorded), [])
    assert.deepStrictEqual(differences({ ...recorded, $ref: "#/x" }, recorded), ["$.$ref: sent but not recorded"])
    assert.deepStrictEqual(differences({ ...recorded, properties: { q: { type: "integer" } } }, recorded), [
      '$.properties.q.type: "integer" instead of "string"'
    ])
  })

  it.scoped("OpenAI chat: function tools as chat-parallel-tool-calls sent them", () =>
    Effect.gen(function* () {
      const name = "openai/chat-parallel-tool-calls.json"
      const recorded = recordedRequest(name)
      const emulator = yield* Emulator.start()
      yield* emulator.replay(cassettePath(name))
      const model = yield* OpenAiLanguageModel.make({
        apiKey: Redacted.make("sk-test"),
        baseUrl: emulator.baseUrl("openai"),
        model: "gpt-4.1-nano",
        parallelToolCalls: true
      })
      yield* model.generate({
        messages: [LanguageModel.user(userText(recorded))],
        tools: [weather.definition, bestLanguage.definition]
      })
      const ours = yield* lastBody(emulator)
      const expected = list(recorded["tools"]).map((tool) => ({
        ...Object(tool),
        function: {
          ...Object(field(tool, "function")),
          parameters: withoutRubyStrict(field(field(tool, "function"), "parameters"))
        }
      }))
      assert.deepStrictEqual(differences(ours["tools"], expected), [])
    })
  )

  it.scoped(
    "OpenAI chat, streamed and strict: the tool, tool_choice and stream options of chat-stream-tool-call-usage",
    () =>
      Effect.gen(function* () {
        const name = "openai/chat-stream-tool-call-usage.json"
        const recorded = recordedRequest(name)
        const emulator = yield* Emulator.start()
        yield* emulator.replay(cassettePath(name))
        const model = yield* OpenAiLanguageModel.make({
          apiKey: Redacted.make("sk-test"),
          baseUrl: emulator.baseUrl("openai"),
          model: "gpt-4o-mini",
          stream: true,
          strictTools: true
        })
        yield* model.generate({
          messages: [LanguageModel.user(userText(recorded))],
          tools: [capital.definition],
          toolChoice: "auto"
        })
        const ours = yield* lastBody(emulator)
        assert.deepStrictEqual(differences(ours["tools"], recorded["tools"]), [])
        assert.deepStrictEqual(differences(ours["tool_choice"], recorded["tool_choice"]), [])
        assert.deepStrictEqual(differences(ours["stream_options"], recorded["stream_options"]), [])
        assert.strictEqual(ours["stream"], true)
      })
  )

  it.scoped("OpenAI chat: the json_schema response format of chat-structured-output-json-schema", () =>
    Effect.gen(function* () {
      const name = "openai/chat-structured-output-json-schema.json"
      const recorded = recordedRequest(name)
      const emulator = yield* Emulator.start()
      yield* emulator.replay(cassettePath(name))
      const model = yield* OpenAiLanguageModel.make({
        apiKey: Redacted.make("sk-test"),
        baseUrl: emulator.baseUrl("openai"),
        model: "gpt-4.1-nano"
      })
      const Person = Schema.Struct({ name: Schema.String, age: Schema.Int })
      const answer = yield* StructuredOutput.generateObject(
        model,
        Person,
        { messages: [LanguageModel.user(userText(recorded))] },
        { name: "response" }
      )
      assert.strictEqual(answer.value.name, "John")
      const ours = yield* lastBody(emulator)
      assert.deepStrictEqual(differences(ours["response_format"], recorded["response_format"]), [])
    })
  )

  for (const name of ["anthropic/messages-parallel-tool-use.json", "anthropic/messages-stream-tool-use.json"]) {
    it.scoped(`Anthropic: tools and max_tokens as ${name} sent them`, () =>
      Effect.gen(function* () {
        const recorded = recordedRequest(name)
        const emulator = yield* Emulator.start()
        yield* emulator.replay(cassettePath(name))
        const model = yield* AnthropicLanguageModel.make({
          apiKey: Redacted.make("sk-ant-test"),
          baseUrl: emulator.baseUrl("anthropic"),
          model: "claude-haiku-4-5-20251001",
          stream: recorded["stream"] === true
        })
        const tools = list(recorded["tools"]).length === 2 ? [weather, bestLanguage] : [weather]
        yield* model.generate({
          messages: [LanguageModel.user(userText(recorded))],
          tools: tools.map((tool) => tool.definition),
          maxOutputTokens: Number(recorded["max_tokens"])
        })
        const ours = yield* lastBody(emulator)
        const expected = list(recorded["tools"]).map((tool) => ({
          ...Object(tool),
          input_schema: withoutRubyStrict(field(tool, "input_schema"))
        }))
        assert.deepStrictEqual(differences(ours["tools"], expected), [])
        assert.strictEqual(ours["max_tokens"], recorded["max_tokens"])
        assert.deepStrictEqual(differences(ours["messages"], recorded["messages"]), [])
      })
    )
  }

  it.scoped("Anthropic: tool_choice, system and tools of messages-text-and-tool-use", () =>
    Effect.gen(function* () {
      const name = "anthropic/messages-text-and-tool-use.json"
      const recorded = recordedRequest(name)
      const emulator = yield* Emulator.start()
      yield* emulator.replay(cassettePath(name))
      const model = yield* AnthropicLanguageModel.make({
        apiKey: Redacted.make("sk-ant-test"),
        baseUrl: emulator.baseUrl("anthropic"),
        model: "claude-haiku-4-5"
      })
      yield* model.generate({
        system: String(recorded["system"]),
        messages: [LanguageModel.user(userText(recorded))],
        tools: [entityInfo.definition],
        toolChoice: "auto",
        maxOutputTokens: Number(recorded["max_tokens"])
      })
      const ours = yield* lastBody(emulator)
      for (const key of ["tools", "tool_choice", "system", "max_tokens", "messages"]) {
        assert.deepStrictEqual(differences(ours[key], recorded[key]), [], key)
      }
    })
  )

  it.scoped("OpenAI Responses web search: the web_search tool and tool_choice carry only recorded fields", () =>
    Effect.gen(function* () {
      const name = "openai/responses-web-search-stream.json"
      const recorded = recordedRequest(name)
      const emulator = yield* Emulator.start()
      yield* emulator.replay(cassettePath("openai/responses-web-search-url-citation.json"))
      const search = yield* OpenAiWebSearch.make({
        apiKey: Redacted.make("sk-test"),
        baseUrl: emulator.baseUrl("openai"),
        searchContextSize: "medium"
      })
      yield* search.search("top news", { maxResults: 3 })
      const ours = yield* lastBody(emulator)
      const [tool] = list(ours["tools"])
      const [recordedTool] = list(recorded["tools"])
      assert.deepStrictEqual(subsetDifferences(Object(tool), Object(recordedTool)), [])
      assert.deepStrictEqual(differences(ours["tool_choice"], recorded["tool_choice"]), [])
      // No function tool or response format travels with a web search: there is no schema to get wrong here.
      assert.isFalse(list(ours["tools"]).some((t) => field(t, "type") === "function"))
      assert.isUndefined(ours["text"])
    })
  )

  it.scoped("Anthropic web search: the server tool carries only recorded fields, with the recorded type and name", () =>
    Effect.gen(function* () {
      const name = "anthropic/messages-web-search.json"
      const recorded = recordedRequest(name)
      const emulator = yield* Emulator.start()
      yield* emulator.replay(cassettePath(name))
      const search = yield* AnthropicWebSearch.make({
        apiKey: Redacted.make("sk-ant-test"),
        baseUrl: emulator.baseUrl("anthropic")
      })
      yield* search.search("weather in San Francisco", { maxResults: 3, includeDomains: ["example.org"] })
      const ours = yield* lastBody(emulator)
      const [tool] = list(ours["tools"])
      const [recordedTool] = list(recorded["tools"])
      assert.deepStrictEqual(subsetDifferences(Object(tool), Object(recordedTool)), [])
      assert.strictEqual(field(tool, "type"), field(recordedTool, "type"))
      assert.strictEqual(field(tool, "name"), field(recordedTool, "name"))
      assert.strictEqual(typeof ours["max_tokens"], "number")
    })
  )
})
