import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Layer } from "effect"
import * as LanguageModel from "../src/LanguageModel.js"
import * as ModelRouter from "../src/ModelRouter.js"
import * as Pricing from "../src/Pricing.js"
import { Usage } from "../src/Usage.js"
import * as UsageLedger from "../src/UsageLedger.js"
import { ScriptedModel } from "../src/testing/index.js"

const ask: LanguageModel.GenerateRequest = { messages: [LanguageModel.user("What is known?")] }

/** Scripted models named after what they stand for, sharing one log. */
const models = Effect.gen(function* () {
  const log = yield* ScriptedModel.makeLog
  const named = (model: string) => ScriptedModel.make({ model, script: [`answer of ${model}`] }, log)
  return {
    log,
    fallback: yield* named("default-model"),
    frontier: yield* named("frontier-model"),
    efficient: yield* named("efficient-model"),
    researcher: yield* named("researcher-model"),
    writer: yield* named("writer-model")
  }
})

const table = new Pricing.PriceTable({
  prices: [
    new Pricing.Price({ match: "gpt-5", input: 1, cachedInput: 0.1, output: 10 }),
    new Pricing.Price({ match: "gpt-5-mini", input: 0.25, output: 2 })
  ]
})

describe("ModelRouter", () => {
  it.effect("resolves a role to its own model, else its tier's, else the default", () =>
    Effect.gen(function* () {
      const m = yield* models
      const router = ModelRouter.make({
        default: m.fallback,
        tiers: { frontier: m.frontier, efficient: m.efficient },
        roles: { researcher: m.researcher, report: m.writer }
      })
      assert.strictEqual(router.resolve("researcher").model, "researcher-model")
      // A role's own model wins over its tier's.
      assert.strictEqual(router.resolve("report").model, "writer-model")
      assert.strictEqual(router.resolve("supervisor").model, "frontier-model")
      assert.strictEqual(router.resolve("evaluation").model, "frontier-model")
      assert.strictEqual(router.resolve("summarization").model, "efficient-model")
      // The standard tier has no model of its own: its roles fall through to the default.
      for (const role of ["clarification", "brief", "compression"] as const) {
        assert.strictEqual(router.resolve(role).model, "default-model", role)
      }
    })
  )

  it("puts each role in the tier of the design", () => {
    assert.deepStrictEqual(ModelRouter.tierOf, {
      supervisor: "frontier",
      report: "frontier",
      evaluation: "frontier",
      clarification: "standard",
      brief: "standard",
      researcher: "standard",
      compression: "standard",
      summarization: "efficient"
    })
  })

  it.effect("calls the resolved model and records each call, its tokens and its cost under its role", () =>
    Effect.gen(function* () {
      const log = yield* ScriptedModel.makeLog
      const big = yield* ScriptedModel.make({ model: "gpt-5-2025-08-07", script: ["a long enough answer"] }, log)
      const small = yield* ScriptedModel.make({ model: "gpt-5-mini", script: ["short"] }, log)
      const router = ModelRouter.make({ default: big, tiers: { efficient: small } }, table)
      const ledger = yield* UsageLedger.make()
      const completions = yield* Effect.all([
        router.generate("report", ask),
        router.generate("report", ask),
        router.generate("summarization", ask)
      ]).pipe(Effect.provideService(UsageLedger.UsageLedger, ledger))
      assert.deepStrictEqual(
        (yield* log.calls).map((c) => c.model),
        ["gpt-5-2025-08-07", "gpt-5-2025-08-07", "gpt-5-mini"]
      )
      const [first, second, third] = completions
      const accounts = yield* ledger.snapshot
      assert.deepStrictEqual(
        accounts.map((a) => a.role),
        ["summarization", "report"]
      )
      const report = accounts.find((a) => a.role === "report")
      const summarization = accounts.find((a) => a.role === "summarization")
      assert.strictEqual(report?.calls, 2)
      assert.strictEqual(report?.inputTokens, first.usage.inputTokens + second.usage.inputTokens)
      assert.strictEqual(report?.outputTokens, first.usage.outputTokens + second.usage.outputTokens)
      // gpt-5 prices: 1 USD per million input tokens, 10 per million output tokens.
      const bigCost = (u: Usage) => (u.inputTokens * 1 + u.outputTokens * 10) / 1e6
      assert.closeTo(report?.costUsd ?? 0, bigCost(first.usage) + bigCost(second.usage), 1e-12)
      // gpt-5-mini is the longer match for its own name, so its own prices apply.
      assert.strictEqual(summarization?.calls, 1)
      assert.closeTo(
        summarization?.costUsd ?? 0,
        (third.usage.inputTokens * 0.25 + third.usage.outputTokens * 2) / 1e6,
        1e-12
      )
    })
  )

  it.effect("calls made without a ledger in context still succeed", () =>
    Effect.gen(function* () {
      const m = yield* models
      const completion = yield* ModelRouter.make({ default: m.fallback }).generate("brief", ask)
      assert.strictEqual(completion.text, "answer of default-model")
    })
  )

  it.effect("the layer prices calls with the Pricing table in context", () =>
    Effect.gen(function* () {
      const log = yield* ScriptedModel.makeLog
      const model = yield* ScriptedModel.make({ model: "house-model-7b", script: ["fine"] }, log)
      const house = new Pricing.PriceTable({
        prices: [new Pricing.Price({ match: "house-model", input: 5, output: 5 })]
      })
      const ledger = yield* UsageLedger.make()
      const completion = yield* ModelRouter.generate("researcher", ask).pipe(
        Effect.provide(ModelRouter.layer({ default: model }).pipe(Layer.provide(Pricing.layer(house)))),
        Effect.provideService(UsageLedger.UsageLedger, ledger)
      )
      const [account] = yield* ledger.snapshot
      assert.strictEqual(account?.role, "researcher")
      assert.closeTo(
        account?.costUsd ?? 0,
        ((completion.usage.inputTokens + completion.usage.outputTokens) * 5) / 1e6,
        1e-12
      )
    })
  )
})

describe("Pricing", () => {
  it("charges cached input at its own price and the rest at the input price", () => {
    const usage = new Usage({ inputTokens: 1_000_000, cachedInputTokens: 400_000, outputTokens: 100_000 })
    assert.closeTo(Pricing.costOf(table, "gpt-5", usage), 0.6 * 1 + 0.4 * 0.1 + 0.1 * 10, 1e-9)
  })

  it("charges cached input at the input price when the table gives no cached price", () => {
    const usage = new Usage({ inputTokens: 1_000_000, cachedInputTokens: 1_000_000, outputTokens: 0 })
    assert.closeTo(Pricing.costOf(table, "gpt-5-mini", usage), 0.25, 1e-9)
  })

  it("costs nothing for a model the table does not know (a local model)", () => {
    const usage = new Usage({ inputTokens: 10_000, outputTokens: 10_000 })
    assert.strictEqual(Pricing.costOf(Pricing.defaultTable, "llama3.1:8b", usage), 0)
  })

  it("the shipped table knows the current OpenAI, Anthropic and Google families, longest match first", () => {
    assert.strictEqual(Pricing.priceOf(Pricing.defaultTable, "gpt-5-mini-2025-08-07")?.match, "gpt-5-mini")
    assert.strictEqual(Pricing.priceOf(Pricing.defaultTable, "claude-sonnet-4-5")?.match, "claude-sonnet-4")
    assert.strictEqual(Pricing.priceOf(Pricing.defaultTable, "claude-opus-4-5-20251101")?.match, "claude-opus-4-5")
    assert.strictEqual(Pricing.priceOf(Pricing.defaultTable, "gemini-2.5-flash")?.match, "gemini-2.5-flash")
  })

  it.effect("a table decoded from JSON text replaces the shipped one; a malformed one is refused", () =>
    Effect.gen(function* () {
      const decoded = yield* Pricing.decodeTable(JSON.stringify({ prices: [{ match: "mine", input: 1, output: 2 }] }))
      assert.strictEqual(Pricing.priceOf(decoded, "mine-v2")?.output, 2)
      const refused = yield* Effect.either(Pricing.decodeTable(JSON.stringify({ prices: [{ match: "mine" }] })))
      assert.isTrue(Either.isLeft(refused))
    })
  )
})
