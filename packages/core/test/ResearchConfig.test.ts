import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Either, Schema } from "effect"
import * as ResearchConfig from "../src/ResearchConfig.js"

describe("ResearchConfig", () => {
  it("has the defaults of the design", () => {
    const d = ResearchConfig.defaults
    assert.deepStrictEqual(
      {
        allowClarification: d.allowClarification,
        maxSupervisionRounds: d.maxSupervisionRounds,
        maxConcurrentResearchUnits: d.maxConcurrentResearchUnits,
        maxDirectivesPerRound: d.maxDirectivesPerRound,
        researcherMaxToolCalls: d.researcherMaxToolCalls,
        maxQueriesPerSearch: d.maxQueriesPerSearch,
        maxUrlsPerExtract: d.maxUrlsPerExtract,
        searchResultsPerQuery: d.searchResultsPerQuery,
        summarizationInputCap: d.summarizationInputCap,
        summarizationTimeout: Duration.toMillis(d.summarizationTimeout),
        minSummarizeLength: d.minSummarizeLength,
        titleDedupMinLength: d.titleDedupMinLength,
        contentDuplicateThreshold: d.contentDuplicateThreshold,
        contentLengthRatioFloor: d.contentLengthRatioFloor,
        noveltyDuplicate: d.noveltyDuplicate,
        noveltyRelated: d.noveltyRelated,
        compressionMinRatio: d.compressionMinRatio,
        supervisorSummaryMaxChars: d.supervisorSummaryMaxChars
      },
      {
        allowClarification: true,
        maxSupervisionRounds: 6,
        maxConcurrentResearchUnits: 5,
        maxDirectivesPerRound: 5,
        researcherMaxToolCalls: 10,
        maxQueriesPerSearch: 5,
        maxUrlsPerExtract: 2,
        searchResultsPerQuery: 5,
        summarizationInputCap: 50_000,
        summarizationTimeout: 60_000,
        minSummarizeLength: 300,
        titleDedupMinLength: 20,
        contentDuplicateThreshold: 0.8,
        contentLengthRatioFloor: 0.3,
        noveltyDuplicate: 0.7,
        noveltyRelated: 0.3,
        compressionMinRatio: 0.1,
        supervisorSummaryMaxChars: 1_500
      }
    )
    assert.isUndefined(d.budget.maxTokens)
    assert.isUndefined(d.budget.maxUsd)
  })

  it("has no switch that turns a phase off except allowClarification and verify", () => {
    const encoded = Schema.encodeSync(ResearchConfig.ResearchConfig)(ResearchConfig.defaults)
    const switches = Object.entries(encoded).filter(([, value]) => typeof value === "boolean")
    // requireSources turns no phase off: it makes a run that found no source fail.
    assert.deepStrictEqual(
      switches.map(([name]) => name).filter((name) => name !== "requireSources"),
      ["allowClarification", "verify"]
    )
  })

  it.effect("a partial configuration keeps the defaults for what it does not give", () =>
    Effect.gen(function* () {
      const config = yield* ResearchConfig.decode({ maxSupervisionRounds: 2, budget: { maxUsd: 1.5 } })
      assert.strictEqual(config.maxSupervisionRounds, 2)
      assert.strictEqual(config.maxConcurrentResearchUnits, 5)
      assert.strictEqual(config.budget.maxUsd, 1.5)
      assert.strictEqual(config.budget.synthesisReserve, 0.15)
    })
  )

  it.effect("a stored configuration with a setting this version does not know still decodes", () =>
    Effect.gen(function* () {
      const stored = { ...Schema.encodeSync(ResearchConfig.ResearchConfig)(ResearchConfig.defaults), retired: 180_000 }
      const decoded = yield* Effect.either(ResearchConfig.decode(stored))
      assert.isTrue(Either.isRight(decoded))
    })
  )

  it.effect("refuses values out of range", () =>
    Effect.gen(function* () {
      for (const bad of [{ maxConcurrentResearchUnits: 0 }, { noveltyRelated: 1.5 }, { budget: { maxTokens: -1 } }]) {
        assert.isTrue(Either.isLeft(yield* Effect.either(ResearchConfig.decode(bad))), JSON.stringify(bad))
      }
    })
  )
})
