// A page found by two researchers of one round is one source of the session: stored once, and the later unit's
// result points at the source kept.
import { assert, describe, it } from "@effect/vitest"
import { TopicResult } from "../src/Research.js"
import { Source } from "../src/Source.js"
import { mergeUnitSources } from "../src/internal/research/sessionSources.js"

const source = (id: string, url: string) =>
  new Source({
    id,
    url,
    title: id,
    content: `content of ${id}`,
    provider: "static",
    quality: "medium",
    retrievedAt: 0,
    rawLength: 100
  })

const result = (directiveId: string, sourceIds: ReadonlyArray<string>) =>
  new TopicResult({
    directiveId,
    status: "completed",
    findings: "A claim [1], another [2].",
    supervisorSummary: "",
    sourceIds,
    stopReason: "complete",
    toolCalls: 1,
    turns: 1,
    compressed: true
  })

describe("the session's sources", () => {
  it("keep a page another unit found once, and the unit's result cites the kept one in the same position", () => {
    const first = [source("r1-d1-s1", "https://example.org/tides"), source("r1-d1-s2", "https://example.org/moon")]
    const found = [source("r1-d2-s1", "https://EXAMPLE.org/tides/"), source("r1-d2-s2", "https://example.org/sun")]
    const merged = mergeUnitSources(first, found, result("r1-d2", ["r1-d2-s1", "r1-d2-s2"]))
    assert.deepStrictEqual(
      merged.sources.map((s) => s.id),
      ["r1-d1-s1", "r1-d1-s2", "r1-d2-s2"]
    )
    assert.deepStrictEqual(merged.result.sourceIds, ["r1-d1-s1", "r1-d2-s2"])
  })

  it("leave a unit whose sources are all new as it is", () => {
    const unit = result("r1-d1", ["r1-d1-s1"])
    const merged = mergeUnitSources([], [source("r1-d1-s1", "https://example.org/a")], unit)
    assert.strictEqual(merged.result, unit)
    assert.strictEqual(merged.sources.length, 1)
  })
})
