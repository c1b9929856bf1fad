import { Research, ResearchConfig, Session } from "@deep-research/core"
import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import { reportSummary } from "../src/internal/terminal/reportSummary.js"
import * as OpenAiSchema from "../src/http/OpenAiSchema.js"
import * as RunSchema from "../src/RunSchema.js"
import * as Runs from "../src/Runs.js"

const ungrounded = new Research.Grounding({ sources: 0, reason: "no_tool_call" })

const completed = (grounding: Research.Grounding | undefined) =>
  new Session.Session({
    version: Session.currentVersion,
    id: "s1",
    query: "What is X?",
    createdAt: 0,
    updatedAt: 0,
    config: ResearchConfig.defaults,
    status: "completed",
    rounds: [],
    sources: [],
    report: new Research.Report({
      title: "X",
      markdown: "# X",
      citations: [],
      language: "English",
      droppedCitations: 0,
      ...(grounding === undefined ? {} : { grounding })
    }),
    metrics: [],
    usage: []
  })

describe("grounding in what clients read", () => {
  it("the status over HTTP and MCP carries the report's grounding, encoded as data", () => {
    const status = Runs.statusOf("s1", {
      stored: completed(ungrounded),
      live: undefined,
      running: false,
      queued: false,
      query: undefined
    })
    assert.deepStrictEqual(Schema.encodeSync(RunSchema.RunStatus)(status).grounding, {
      sources: 0,
      reason: "no_tool_call"
    })
    const old = Runs.statusOf("s1", {
      stored: completed(undefined),
      live: undefined,
      running: false,
      queued: false,
      query: undefined
    })
    assert.isUndefined(old.grounding)
  })

  it("the listing line and the /v1 completion carry it too", () => {
    const summary = Session.summarize(completed(ungrounded))
    const listed = Schema.encodeSync(RunSchema.Listed)(summary)
    assert.deepStrictEqual(listed.grounding, { sources: 0, reason: "no_tool_call" })
    const decoded = Schema.decodeUnknownSync(OpenAiSchema.ChatCompletion)({
      id: "chatcmpl-s1",
      object: "chat.completion",
      created: 0,
      model: "deep-research",
      choices: [],
      usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
      grounding: { sources: 0, reason: "no_tool_call" }
    })
    assert.deepStrictEqual(decoded.grounding, ungrounded)
  })

  it("the summary ends with a warning when the report rests on no source, and only then", () => {
    const options = { out: "r.md", kept: "here", simulate: false }
    assert.match(
      reportSummary(completed(ungrounded), options),
      /\nWarning: no source was found or read \(no tool call\); the report rests on the model's own knowledge/
    )
    assert.notInclude(reportSummary(completed(new Research.Grounding({ sources: 3 })), options), "Warning")
  })
})
