import { assert, describe, it } from "@effect/vitest"
import type { ResearchEvents } from "@deep-research/core"
import * as Progress from "../src/Progress.js"

const at = { timestamp: 0, sessionId: "s1" }
const events: ReadonlyArray<ResearchEvents.ResearchEvent> = [
  { _tag: "SessionStarted", query: "What is X?", ...at },
  { _tag: "PhaseStarted", phase: "supervision", ...at },
  { _tag: "RoundStarted", round: 1, ...at },
  { _tag: "ResearcherStarted", directiveId: "r1-d1", topic: "History of X", ...at },
  { _tag: "ResearcherStarted", directiveId: "r1-d2", topic: "Economics of X", ...at },
  { _tag: "ToolCalled", directiveId: "r1-d1", tool: "webSearch", detail: "x history", ...at },
  {
    _tag: "SourceFound",
    directiveId: "r1-d1",
    sourceId: "r1-d1-s1",
    url: "https://a",
    title: "A",
    novelty: "new",
    ...at
  },
  { _tag: "ResearcherFailed", directiveId: "r1-d2", error: "openai is unavailable", ...at },
  { _tag: "UsageUpdated", tokens: 12_345, costUsd: 0.42, ...at }
]

describe("Progress", () => {
  it("the live view shows the phase, the round, each researcher's action, sources, tokens and cost", () => {
    const state = events.reduce(Progress.reduce, Progress.initial)
    const lines = Progress.renderLive(state, 200)
    assert.include(lines[0]!, "s1")
    assert.include(lines[1]!, "phase supervision")
    assert.include(lines[1]!, "round 1")
    assert.include(lines[1]!, "1 sources")
    assert.include(lines[1]!, "12.3k tokens")
    assert.include(lines[1]!, "$0.42")
    const history = lines.find((l) => l.includes("History of X"))
    assert.isDefined(history)
    assert.include(history!, "webSearch: x history")
    assert.include(
      lines.find((l) => l.includes("Economics of X"))!,
      "failed"
    )
  })

  it("lines never exceed the terminal width", () => {
    const state = Progress.reduce(Progress.initial, {
      _tag: "ResearcherStarted",
      directiveId: "d",
      topic: "a very long topic ".repeat(20),
      ...at
    })
    for (const line of Progress.renderLive(state, 40)) assert.isAtMost(line.length, 40)
  })

  it("json mode writes every event as one JSON line on stdout and nothing on stderr", () => {
    const out: Array<string> = []
    const err: Array<string> = []
    const renderer = Progress.makeRenderer("json", {
      out: (t) => out.push(t),
      err: (t) => err.push(t),
      width: () => 80
    })
    for (const event of events) renderer.onEvent(event)
    renderer.finish()
    assert.strictEqual(out.length, events.length)
    for (const line of out) {
      assert.isTrue(line.endsWith("\n"))
      assert.strictEqual(JSON.parse(line).sessionId, "s1")
    }
    assert.strictEqual(err.length, 0)
  })

  it("plain mode writes readable lines to stderr only", () => {
    const out: Array<string> = []
    const err: Array<string> = []
    const renderer = Progress.makeRenderer("plain", {
      out: (t) => out.push(t),
      err: (t) => err.push(t),
      width: () => 80
    })
    for (const event of events) renderer.onEvent(event)
    assert.strictEqual(out.length, 0)
    assert.isTrue(err.some((l) => l.includes("r1-d1 webSearch: x history")))
    assert.isTrue(err.some((l) => l.includes("r1-d2 failed: openai is unavailable")))
  })
})
