import { LanguageModel, ModelRouter } from "@deep-research/core"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Either, Layer, Redacted } from "effect"
import * as ModelSpec from "../../src/models/ModelSpec.js"
import { Emulator } from "@deep-research/emulator"

const reasonOf = (spec: string): string => {
  const parsed = ModelSpec.parse(spec)
  if (Either.isRight(parsed)) return assert.fail(`expected ${spec} to be refused`)
  assert.strictEqual(parsed.left._tag, "ResearchInvalidInput")
  return parsed.left.reason
}

const noConfig = Effect.withConfigProvider(ConfigProvider.fromMap(new Map()))

/** Settings that reach the emulator for every provider, so no environment variable is read. */
const providersAt = (emulator: Emulator.Handle): ModelSpec.RouterSpecs["providers"] => ({
  openai: { apiKey: Redacted.make("sk-emulator"), baseUrl: emulator.baseUrl("openai") },
  anthropic: { apiKey: Redacted.make("sk-ant-emulator"), baseUrl: emulator.baseUrl("anthropic") },
  ollama: { baseUrl: emulator.baseUrl("openai") }
})

const bodyField = (body: unknown, field: string): unknown =>
  typeof body === "object" && body !== null && field in body
    ? Object.getOwnPropertyDescriptor(body, field)?.value
    : undefined

describe("ModelSpec.parse", () => {
  it("reads the provider and the model of the three providers", () => {
    assert.deepStrictEqual(ModelSpec.parse("openai:gpt-4.1"), Either.right({ provider: "openai", model: "gpt-4.1" }))
    assert.deepStrictEqual(
      ModelSpec.parse("anthropic:claude-sonnet-4-5"),
      Either.right({ provider: "anthropic", model: "claude-sonnet-4-5" })
    )
    assert.deepStrictEqual(ModelSpec.parse("ollama:qwen3"), Either.right({ provider: "ollama", model: "qwen3" }))
  })

  it("splits at the first colon only, so a model's tag stays part of its name", () => {
    assert.deepStrictEqual(ModelSpec.parse("ollama:qwen3:8b"), Either.right({ provider: "ollama", model: "qwen3:8b" }))
  })

  it("ignores surrounding blanks and the provider's case", () => {
    assert.deepStrictEqual(
      ModelSpec.parse("  Anthropic:claude-haiku-4-5 "),
      Either.right({ provider: "anthropic", model: "claude-haiku-4-5" })
    )
  })

  it("refuses a spec without a provider, saying how to write one", () => {
    assert.include(reasonOf("gpt-4.1"), "write provider:model")
    assert.include(reasonOf(":gpt-4.1"), "write provider:model")
    assert.include(reasonOf("openai:"), "write provider:model")
  })

  it("refuses an unknown provider and lists the known ones", () => {
    const reason = reasonOf("gemini:gemini-2.5-pro")
    assert.include(reason, 'unknown model provider "gemini"')
    assert.include(reason, "openai, anthropic, ollama")
  })

  it("refuses a model name with blanks in it", () => {
    assert.include(reasonOf("openai:gpt 4"), "no valid model name")
  })
})

describe("ModelSpec.makeModels", () => {
  it.scopedLive("resolves roles through role, tier and default specs", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      const models = yield* ModelSpec.makeModels({
        default: "anthropic:claude-haiku-4-5",
        tiers: { frontier: "openai:gpt-4.1" },
        roles: { summarization: "ollama:qwen3:8b" },
        providers: providersAt(emulator)
      })
      const of = (role: Parameters<typeof ModelRouter.resolveModel>[1]) => {
        const model = ModelRouter.resolveModel(models, role)
        return `${model.provider}:${model.model}`
      }
      assert.strictEqual(of("summarization"), "ollama:qwen3:8b")
      assert.strictEqual(of("report"), "openai:gpt-4.1")
      assert.strictEqual(of("supervisor"), "openai:gpt-4.1")
      assert.strictEqual(of("brief"), "anthropic:claude-haiku-4-5")
    })
  )

  it.scopedLive("builds each distinct model once, whatever the number of roles naming it", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      const models = yield* ModelSpec.makeModels({
        default: "openai:gpt-4.1",
        tiers: { frontier: "anthropic:claude-sonnet-4-6", standard: " openai:gpt-4.1" },
        roles: { report: "anthropic:claude-sonnet-4-6", brief: "OpenAI:gpt-4.1" },
        providers: providersAt(emulator)
      })
      assert.strictEqual(models.tiers?.standard, models.default)
      assert.strictEqual(models.roles?.brief, models.default)
      assert.strictEqual(models.roles?.report, models.tiers?.frontier)
      assert.notStrictEqual(models.tiers?.frontier, models.default)
    })
  )

  it.scopedLive("fails with ResearchInvalidInput naming a malformed role spec", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      const error = yield* Effect.flip(
        ModelSpec.makeModels({
          default: "openai:gpt-4.1",
          roles: { report: "mistral:large" },
          providers: providersAt(emulator)
        })
      )
      assert.strictEqual(error._tag, "ResearchInvalidInput")
      assert.include(error.reason, "mistral")
    })
  )

  it.effect("fails with ResearchInvalidInput when a provider's key is neither given nor configured", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(ModelSpec.makeModels({ default: "anthropic:claude-haiku-4-5" }))
      assert.strictEqual(error._tag, "ResearchInvalidInput")
      assert.include(error.reason, "anthropic:claude-haiku-4-5")
      assert.include(error.reason, "ANTHROPIC_API_KEY")
    }).pipe(noConfig)
  )

  it.effect("refuses an output limit that is not a positive integer", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(
        ModelSpec.makeModels({
          default: "anthropic:claude-haiku-4-5",
          maxOutputTokens: { report: 0 },
          providers: { anthropic: { apiKey: Redacted.make("k"), baseUrl: "http://127.0.0.1:9" } }
        })
      )
      assert.include(error.reason, "report")
    })
  )
})

describe("ModelSpec.layer against the emulator", () => {
  it.scopedLive("layerConfig takes the Anthropic key and base URL from the configuration the settings leave out", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("anthropic.messages", Emulator.anthropicText("configured"))
      const completion = yield* ModelRouter.generate("brief", { messages: [LanguageModel.user("q")] }).pipe(
        Effect.provide(ModelSpec.layerConfig({ default: "anthropic:claude-haiku-4-5" })),
        Effect.withConfigProvider(
          ConfigProvider.fromMap(
            new Map([
              ["ANTHROPIC_API_KEY", "sk-ant-from-config"],
              ["ANTHROPIC_BASE_URL", emulator.baseUrl("anthropic")]
            ])
          )
        )
      )
      assert.strictEqual(completion.text, "configured")
      const [request] = yield* emulator.requests("anthropic.messages")
      const headers = request?.headers ?? {}
      assert.isTrue(
        headers["authorization"] === "Bearer sk-ant-from-config" || headers["x-api-key"] === "sk-ant-from-config"
      )
    })
  )

  it.effect("layer takes the key and base URL from its argument only, never from the configuration", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(
        Layer.build(ModelSpec.layer({ default: "anthropic:claude-haiku-4-5" })).pipe(
          Effect.scoped,
          Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["ANTHROPIC_API_KEY", "sk-ant-from-config"]])))
        )
      )
      assert.strictEqual(error._tag, "ResearchInvalidInput")
      assert.include(error.message, "anthropic:claude-haiku-4-5")
    })
  )

  it.scopedLive("takes the OpenAI base URL from the configuration when the settings give only the key", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("openai.chat", Emulator.openaiText("configured"))
      const model = yield* ModelSpec.makeModel(
        { provider: "openai", model: "gpt-4.1" },
        { apiKey: Redacted.make("sk-from-settings") }
      ).pipe(
        Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["OPENAI_BASE_URL", emulator.baseUrl("openai")]])))
      )
      const completion = yield* model.generate({ messages: [LanguageModel.user("q")] })
      assert.strictEqual(completion.text, "configured")
      const [request] = yield* emulator.requests("openai.chat")
      assert.strictEqual(request?.headers["authorization"], "Bearer sk-from-settings")
    })
  )

  it.scopedLive("gives a role its own output limit and leaves the other roles of the same model alone", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("anthropic.messages", Emulator.anthropicText("ok"))
      const routed = ModelSpec.layer({
        default: "anthropic:claude-haiku-4-5",
        maxOutputTokens: { report: 32_000 },
        providers: providersAt(emulator)
      })
      yield* Effect.all([
        ModelRouter.generate("report", { messages: [LanguageModel.user("long")] }),
        ModelRouter.generate("brief", { messages: [LanguageModel.user("short")] }),
        ModelRouter.generate("report", { messages: [LanguageModel.user("set")], maxOutputTokens: 500 })
      ]).pipe(Effect.provide(routed))
      const requests = yield* emulator.requests("anthropic.messages")
      assert.deepStrictEqual(
        requests.map((request) => bodyField(request.body, "max_tokens")),
        [32_000, 16_384, 500]
      )
    })
  )

  it.scopedLive("an ollama spec talks to an OpenAI-compatible server under the ollama provider name", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("openai.chat", Emulator.openaiText("from qwen", { model: "qwen3:8b" }))
      const model = yield* ModelSpec.makeModel(
        { provider: "ollama", model: "qwen3:8b" },
        { baseUrl: emulator.baseUrl("openai") }
      )
      assert.strictEqual(model.provider, "ollama")
      assert.isFalse(model.capabilities.structuredOutput)
      const completion = yield* model.generate({ messages: [LanguageModel.user("q")], maxOutputTokens: 64 })
      assert.strictEqual(completion.text, "from qwen")
      const [request] = yield* emulator.requests("openai.chat")
      assert.strictEqual(bodyField(request?.body, "model"), "qwen3:8b")
      assert.strictEqual(bodyField(request?.body, "max_tokens"), 64)
    }).pipe(noConfig)
  )
})
