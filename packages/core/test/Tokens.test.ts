import { assert, describe, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import * as LanguageModel from "../src/LanguageModel.js"
import * as Tokens from "../src/Tokens.js"
import * as Tool from "../src/Tool.js"
import { Schema } from "effect"

describe("Tokens.estimateTokens", () => {
  it("counts by script: English by words, Chinese by characters, numbers in groups of digits", () => {
    assert.strictEqual(Tokens.estimateTokens(""), 0)
    // Ten common words: about one token each.
    const words = "the heat pump moves heat from the air to the house"
    assert.approximately(Tokens.estimateTokens(words), 11, 1)
    // Chinese runs near one token a character, where 4 characters a token counted a quarter of it.
    const chinese = "热泵并不产生热量而是搬运热量".repeat(10)
    assert.isAbove(Tokens.estimateTokens(chinese), chinese.length * 0.7)
    assert.isBelow(Tokens.estimateTokens(chinese), chinese.length)
    assert.isAbove(Tokens.estimateTokens("202520262027"), Tokens.estimateTokens("2025"))
    // A camelCase identifier splits at its capitals.
    assert.isAbove(Tokens.estimateTokens("estimateRequestTokens"), Tokens.estimateTokens("estimate"))
  })

  it("gives the characters that fit in a number of tokens, for text like a sample", () => {
    assert.strictEqual(Tokens.charactersFor(100), 400)
    const chinese = "热泵并不产生热量而是搬运热量".repeat(10)
    assert.isBelow(Tokens.charactersFor(100, chinese), 150)
    assert.isAtMost(Tokens.estimateTokens(chinese.slice(0, Tokens.charactersFor(100, chinese))), 101)
  })

  it("estimates a request over system prompt, messages, tool calls and tool definitions", () => {
    const call = new LanguageModel.ToolCall({ id: "c1", name: "webSearch", arguments: { queries: ["a"] } })
    const tool = Tool.make("webSearch", {
      description: "Search the web",
      schema: Schema.Struct({ queries: Schema.Array(Schema.String) })
    })
    const bare: LanguageModel.GenerateRequest = {
      system: "s".repeat(40),
      messages: [LanguageModel.user("u".repeat(80))]
    }
    const bareTokens = Tokens.estimateTokens("s".repeat(40)) + Tokens.estimateTokens("u".repeat(80))
    assert.strictEqual(Tokens.estimateRequestTokens(bare), bareTokens + 2 * Tokens.messageOverheadTokens)
    const result = "the result of the search ".repeat(20)
    const withTurn: LanguageModel.GenerateRequest = {
      ...bare,
      messages: [...bare.messages, LanguageModel.assistant("", [call]), LanguageModel.toolResult(call, result)]
    }
    assert.isAbove(Tokens.estimateRequestTokens(withTurn), bareTokens + Tokens.estimateTokens(result))
    const withTools = { ...withTurn, tools: [tool.definition] }
    assert.isAbove(Tokens.estimateRequestTokens(withTools), Tokens.estimateRequestTokens(withTurn))
  })

  it("counts each part as its text written out: a message with its tool calls, a tool or answer schema as JSON", () => {
    const call = new LanguageModel.ToolCall({ id: "c1", name: "webSearch", arguments: { queries: ["solar"] } })
    const raw = new LanguageModel.ToolCall({ id: "c2", name: "think", arguments: "not json" })
    const tool = Tool.make("webSearch", {
      description: "Search the web",
      schema: Schema.Struct({ queries: Schema.Array(Schema.String) })
    })
    const schema = { type: "object", properties: { answer: { type: "string" } }, required: ["answer"] } as const
    const request: LanguageModel.GenerateRequest = {
      system: "s".repeat(41),
      messages: [
        LanguageModel.user("u".repeat(81)),
        LanguageModel.assistant("a".repeat(3), [call, raw]),
        LanguageModel.toolResult(call, "r".repeat(401))
      ],
      tools: [tool.definition, tool.definition],
      responseFormat: { name: "report", schema }
    }
    const written = Tokens.estimateTokens
    const expected =
      4 * Tokens.messageOverheadTokens +
      written("s".repeat(41)) +
      written("u".repeat(81)) +
      written("a".repeat(3)) +
      written("webSearch") +
      written(JSON.stringify(call.arguments)) +
      written("think") +
      written("not json") +
      written("webSearch") +
      written("r".repeat(401)) +
      2 * (written("webSearch") + written("Search the web") + written(JSON.stringify(tool.definition.parameters))) +
      written("report") +
      written(JSON.stringify(schema))
    assert.strictEqual(Tokens.estimateRequestTokens(request), expected)
    assert.strictEqual(Tokens.estimateRequestTokens(request), expected)
  })
})

describe("Tokens.contextWindowOf", () => {
  const cases: ReadonlyArray<readonly [string, number]> = [
    ["gpt-5", 400_000],
    ["gpt-5-mini-2025-08-07", 400_000],
    ["gpt-4.1-nano", 1_047_576],
    ["gpt-4o-mini", 128_000],
    ["gpt-4", 8_192],
    ["o1-mini", 128_000],
    ["o3", 200_000],
    ["o4-mini", 200_000],
    ["claude-3-5-haiku-20241022", 200_000],
    ["claude-opus-4-5-20251101", 200_000],
    ["claude-sonnet-4-5", 200_000],
    ["claude-2.0", 100_000],
    ["gemini-1.5-pro-002", 2_097_152],
    ["gemini-2.0-flash-001", 1_048_576],
    ["gemini-2.5-pro", 1_048_576],
    ["llama3", 8_192],
    ["llama3.1:70b", 131_072],
    ["meta-llama/Llama-3.3-70B-Instruct", 131_072],
    ["qwen2.5:14b", 32_768],
    ["qwen3:32b", 40_960],
    ["mistral:7b", 32_768],
    ["mistral-nemo", 131_072],
    ["mixtral:8x22b", 65_536],
    ["gemma2:9b", 8_192],
    ["gemma3:27b", 131_072],
    ["phi3:medium-128k", 131_072],
    ["phi4:14b", 16_384],
    ["deepseek-r1:8b", 131_072],
    ["deepseek-v3", 131_072],
    ["command-r-plus", 131_072]
  ]

  it("finds the window of the common model families by longest substring match, case-insensitively", () => {
    for (const [model, tokens] of cases) {
      assert.strictEqual(Tokens.contextWindowOf(model), tokens, model)
    }
  })

  it("gives 128k to models the table does not know", () => {
    assert.strictEqual(Tokens.contextWindowOf("my-own-finetune"), 128_000)
  })

  it("prefers the longest match over the first one", () => {
    const table = new Tokens.ContextWindows({
      defaultTokens: 1_000,
      windows: [
        new Tokens.ContextWindow({ match: "model", tokens: 10 }),
        new Tokens.ContextWindow({ match: "model-large", tokens: 20 })
      ]
    })
    assert.strictEqual(Tokens.contextWindowOf("vendor/Model-Large-v2", table), 20)
    assert.strictEqual(Tokens.contextWindowOf("model-small", table), 10)
    assert.strictEqual(Tokens.contextWindowOf("other", table), 1_000)
  })

  it.effect("a user table decoded from JSON replaces the shipped one through the layer", () =>
    Effect.gen(function* () {
      const table = yield* Tokens.decodeTable(JSON.stringify({ windows: [{ match: "gpt-5", tokens: 50_000 }] }))
      assert.strictEqual(table.defaultTokens, 128_000)
      const replaced = yield* Tokens.contextWindow("gpt-5-mini").pipe(Effect.provide(Tokens.layer(table)))
      assert.strictEqual(replaced, 50_000)
      const shipped = yield* Tokens.contextWindow("gpt-5-mini")
      assert.strictEqual(shipped, 400_000)
    })
  )

  it.effect("refuses a table with a non-positive window", () =>
    Effect.gen(function* () {
      const result = yield* Effect.either(Tokens.decodeTable(JSON.stringify({ windows: [{ match: "x", tokens: 0 }] })))
      assert.isTrue(Either.isLeft(result))
    })
  )

  it("leaves the input budget after reserving output, never below zero", () => {
    assert.strictEqual(Tokens.inputBudget(128_000, 8_000), 120_000)
    assert.strictEqual(Tokens.inputBudget(4_000, 8_000), 0)
  })
})
