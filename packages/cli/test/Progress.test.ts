import { assert, describe, it, vi } from "@effect/vitest"
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
  it("prints a long report's plan and each part as it is written, and shows them as the live phase", () => {
    const planned: ResearchEvents.ResearchEvent = {
      _tag: "ReportPlanned",
      sections: ["Costs", "Efficiency"],
      words: 4_000,
      ...at
    }
    const section: ResearchEvents.ResearchEvent = {
      _tag: "ReportSectionWritten",
      part: "section",
      title: "Efficiency",
      index: 2,
      sections: 2,
      words: 1_650,
      ...at
    }
    const framing: ResearchEvents.ResearchEvent = {
      ...section,
      part: "introduction",
      title: "introduction",
      words: 400
    }
    assert.strictEqual(Progress.plainLine(planned), "report planned: 2 sections, about 4000 words: Costs; Efficiency")
    assert.strictEqual(Progress.plainLine(section), "  section 2/2 written: Efficiency (1650 words)")
    assert.strictEqual(Progress.plainLine(framing), "  introduction written (400 words)")
    assert.strictEqual(
      Progress.reduce(Progress.initial, section).phase,
      "synthesis: section 2/2 written: Efficiency (1650 words)"
    )
  })

  it("counts a page found by two researchers once in the total, and once for each researcher", () => {
    const found = (directiveId: string, url: string): ResearchEvents.ResearchEvent => ({
      _tag: "SourceFound",
      directiveId,
      sourceId: `${directiveId}-s1`,
      url,
      title: "A",
      novelty: "new",
      ...at
    })
    const state = [
      found("r1-d1", "https://a.org/x"),
      found("r1-d2", "https://a.org/x/"),
      found("r1-d2", "https://b.org")
    ].reduce(Progress.reduce, Progress.initial)
    assert.strictEqual(state.sources, 2)
    assert.strictEqual(state.researchers.get("r1-d1")?.sources, 1)
    assert.strictEqual(state.researchers.get("r1-d2")?.sources, 2)
  })

  it("a rejected tool call is a warning naming the unit, the tool and the decode error, live and in plain lines", () => {
    const rejected: ResearchEvents.ResearchEvent = {
      _tag: "ToolCallRejected",
      unit: "supervisor",
      tool: "conductResearch",
      error:
        'This directive was not run because its arguments are invalid:\nThe arguments of conductResearch do not match its schema:\n└─ ["topic"]\n   └─ is missing',
      ...at
    }
    const plain = Progress.plainLine(rejected) ?? ""
    assert.match(
      plain,
      /^ {2}! supervisor: a conductResearch call was rejected: The arguments of conductResearch do not match/
    )
    const live = Progress.renderLive(Progress.reduce(Progress.initial, rejected), 200)
    assert.isTrue(live.some((line) => line.includes("! supervisor: a conductResearch call was rejected")))
  })

  it("research that ends as it should is no warning in the live view; one cut short by the budget is", () => {
    const stopped = (reason: string): ResearchEvents.ResearchEvent => ({
      _tag: "SupervisionStopped",
      reason,
      rounds: 2,
      ...at
    })
    const warnings = (reason: string) =>
      Progress.renderLive(Progress.reduce(Progress.initial, stopped(reason)), 200).filter((line) => line.includes("!"))
    assert.deepStrictEqual(warnings("research_complete"), [])
    assert.strictEqual(warnings("budget").length, 1)
  })

  it("each thing the budget does is one line of its own: the warning, research stopping, a report it cannot pay", () => {
    const budget = (level: "warning" | "research_stopped" | "report_short"): ResearchEvents.ResearchEvent => ({
      _tag: "BudgetWarning",
      level,
      budget: "tokens",
      spent: 4_100,
      limit: 5_000,
      ...at
    })
    const lines = (["warning", "research_stopped", "report_short"] as const).map((level) =>
      Progress.plainLine(budget(level))
    )
    assert.deepStrictEqual(lines, [
      "budget: 4100 of 5000 tokens spent, 80% of what research may use",
      "budget: 4100 of 5000 tokens spent; research stops, the rest is kept for the report",
      "budget: 4100 of 5000 tokens spent; too little is left for a report, the findings are given as they are"
    ])
  })

  it("plain lines say one of a thing in the singular and several in the plural", () => {
    const line = (event: Record<string, unknown>) =>
      Progress.plainLine({ ...event, ...at } as unknown as ResearchEvents.ResearchEvent)
    assert.strictEqual(
      line({ _tag: "SupervisionStopped", reason: "research_complete", rounds: 1 }),
      "research stopped after 1 round: research_complete"
    )
    assert.strictEqual(
      line({ _tag: "SupervisionStopped", reason: "budget", rounds: 3 }),
      "research stopped after 3 rounds: budget"
    )
    assert.strictEqual(
      line({ _tag: "ResearcherCompleted", directiveId: "r1-d1", sources: 1, toolCalls: 1, stopReason: "complete" }),
      "  r1-d1 done: 1 source, 1 tool call (complete)"
    )
    assert.strictEqual(
      line({ _tag: "ResearcherCompleted", directiveId: "r1-d1", sources: 0, toolCalls: 2, stopReason: "complete" }),
      "  r1-d1 done: 0 sources, 2 tool calls (complete)"
    )
    assert.match(
      line({ _tag: "PhaseCompleted", phase: "brief", durationMillis: 100, calls: 1, tokens: 10, costUsd: 0 }) ?? "",
      /\(1 call, 10 tokens, \$0\)$/
    )
    assert.strictEqual(
      line({ _tag: "ReportWritten", characters: 960, citations: 1, droppedCitations: 0 }),
      "report written: 960 characters, 1 citation"
    )
  })

  it("a model that lost tool calling is said once, in the plain lines", () => {
    const fallback: ResearchEvents.ResearchEvent = {
      _tag: "ModelFallback",
      provider: "ollama",
      model: "qwen3",
      capability: "toolCalling",
      reason: "ollama rejected the request: 400 registry.ollama.ai/library/qwen3:latest does not support tools",
      ...at
    }
    assert.strictEqual(
      Progress.plainLine(fallback),
      "  ! ollama qwen3 has no tool calling here; it acts through the JSON action protocol from now on"
    )
  })

  it("the live view shows the phase, the round, each researcher's action, sources, tokens and cost", () => {
    const state = events.reduce(Progress.reduce, Progress.initial)
    const lines = Progress.renderLive(state, 200)
    assert.include(lines[0]!, "s1")
    assert.include(lines[1]!, "phase supervision")
    assert.include(lines[1]!, "round 1")
    assert.include(lines[1]!, "1 source ·")
    assert.include(lines[1]!, "12.3k tokens")
    assert.include(lines[1]!, "$0.42")
    const history = lines.find((l) => l.includes("History of X"))
    assert.isDefined(history)
    assert.include(history!, "webSearch: x history")
    // What a researcher has found, said as such: not a bare "(1)" a reader has to guess at.
    assert.match(history!, / · 1 source$/)
    assert.include(
      lines.find((l) => l.includes("Economics of X"))!,
      "failed"
    )
  })

  it("says which sources a run searches, and that they need no key when no key chose them", () => {
    assert.strictEqual(Progress.searchLine(["tavily"], false), "searching tavily")
    assert.strictEqual(
      Progress.searchLine(["searxng", "wikipedia", "openalex"], true),
      "searching searxng, wikipedia, openalex: no search key is set, so the sources that need none " +
        "(choose others with --search)"
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

  it("the live view ends on the session's outcome", () => {
    const state = Progress.reduce(events.reduce(Progress.reduce, Progress.initial), {
      _tag: "SessionCompleted",
      durationMillis: 1000,
      tokens: 10,
      costUsd: 0,
      ...at
    })
    assert.include(Progress.renderLive(state, 200)[1], "phase completed")
  })

  it("in the live view a log line goes above the view, which is cleared first and drawn again after", () => {
    const err: Array<string> = []
    const renderer = Progress.makeRenderer("live", { out: () => {}, err: (t) => err.push(t), width: () => 200 }, 60_000)
    for (const event of events) renderer.onEvent(event)
    renderer.finish()
    const drawn = err.join("").split("\n").length - 1
    err.length = 0
    renderer.log("warn: the store took over a stale lock")
    renderer.finish()
    assert.strictEqual(err[0], `\x1b[${drawn}F\x1b[J`)
    assert.strictEqual(err[1], "warn: the store took over a stale lock\n")
    assert.include(err[2], "phase supervision")
  })

  it("a paused live view is taken off the screen and not drawn until it resumes", () => {
    vi.useFakeTimers()
    try {
      const err: Array<string> = []
      const renderer = Progress.makeRenderer("live", { out: () => {}, err: (t) => err.push(t), width: () => 200 }, 100)
      for (const event of events) renderer.onEvent(event)
      vi.advanceTimersByTime(1_000)
      assert.include(err.join(""), "phase supervision")
      err.length = 0
      renderer.pause()
      renderer.onEvent({ _tag: "RoundStarted", round: 2, ...at })
      vi.advanceTimersByTime(1_000)
      assert.strictEqual(err.length, 1)
      assert.match(err[0] ?? "", /^\x1b\[\d+F\x1b\[J$/)
      renderer.resume()
      vi.advanceTimersByTime(1_000)
      assert.include(err.join(""), "round 2")
    } finally {
      vi.useRealTimers()
    }
  })
})
