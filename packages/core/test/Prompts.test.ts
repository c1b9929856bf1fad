import { assert, describe, it } from "@effect/vitest"
import * as Language from "../src/internal/text/language.js"
import * as BriefPrompt from "../src/prompts/brief.js"
import * as CompressionPrompt from "../src/prompts/compression.js"
import * as SupervisorPrompt from "../src/prompts/supervisor.js"
import * as SynthesisPrompt from "../src/prompts/synthesis.js"

// Each phase's prompt carries the directives the seeds list for it; these tests fail when one is dropped.

describe("Prompts", () => {
  it("the brief asks for specificity, open unstated dimensions, primary sources and the user's language", () => {
    const system = BriefPrompt.system("2026-01-01")
    assert.include(system, "as specific as the request allows")
    assert.include(system, "say that it is open")
    assert.include(system, "Do not invent requirements")
    assert.include(system, "prefer primary and official sources")
    assert.include(system, "Keep the user's language")
  })

  it("the report matches the question's language, adapts its structure, has no meta commentary and cites [n]", () => {
    const system = (kind: SynthesisPrompt.QuestionKind) =>
      SynthesisPrompt.system({
        today: "2026-01-01",
        language: Language.detect("气候变化的影响是什么？"),
        kind,
        hasSources: true
      })
    const comparison = system("comparison")
    assert.include(comparison, "请用中文撰写整篇报告")
    assert.include(comparison, "Never write meta commentary")
    assert.include(comparison, "inline as [n]")
    assert.include(comparison, "one section per item compared")
    assert.include(system("howto"), "numbered steps")
    assert.notStrictEqual(system("enumeration"), system("literature_review"))
  })

  it("compression preserves, does not summarise away, and cites", () => {
    const system = CompressionPrompt.system(1_500)
    assert.include(system, "reformatting, not summarising")
    assert.include(system, "keep every relevant fact")
    assert.include(system, "Cite inline with the source numbers")
    assert.include(system, "at most 1500 characters")
    assert.include(CompressionPrompt.instruction(1_500), "inline [n] citations")
  })

  it("the supervisor thinks before delegating, writes paragraph directives, one per compared item", () => {
    const system = SupervisorPrompt.system("2026-01-01", {
      maxRounds: 6,
      maxDirectivesPerRound: 5,
      maxConcurrentResearchUnits: 5
    })
    assert.include(system, "Call think first in each turn, then delegate")
    assert.include(system, "A topic is a standalone paragraph")
    assert.include(system, "A comparison needs one directive per item compared")
    assert.include(system, "at most 5 directives per round")
  })
})
