import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import * as LanguageModel from "../src/LanguageModel.js"
import * as ActionProtocol from "../src/phases/ActionProtocol.js"
import * as Tool from "../src/Tool.js"
import { ScriptedModel } from "../src/testing/index.js"
import { callsOf, runUnit } from "./support/researchUnit.js"

const search = Tool.make("webSearch", {
  description: "Searches the web.",
  schema: Schema.Struct({ queries: Schema.Array(Schema.String) })
})

const nrel = "https://www.nrel.gov/pv/cell-efficiency"

const actions = (...list: ReadonlyArray<{ readonly tool: string; readonly arguments: unknown }>) =>
  JSON.stringify({ actions: list })

describe("ActionProtocol", () => {
  it("renders a tool conversation as text: tools in the system prompt, calls as JSON, results as user text", () => {
    const call = new LanguageModel.ToolCall({ id: "c1", name: "webSearch", arguments: { queries: ["x"] } })
    const rendered = ActionProtocol.render({
      system: "You research.",
      messages: [
        LanguageModel.user("Task"),
        LanguageModel.assistant("", [call]),
        LanguageModel.toolResult(call, "Results for x", false),
        LanguageModel.user("[Turn 2] calls left: 1")
      ],
      tools: [search.definition],
      toolChoice: "auto"
    })
    assert.isUndefined(rendered.tools)
    assert.isUndefined(rendered.toolChoice)
    assert.include(rendered.system, "You research.")
    assert.include(rendered.system, "- webSearch: Searches the web.")
    assert.include(rendered.system, '{"actions": [{"tool": "<tool name>"')
    assert.deepStrictEqual(
      rendered.messages.map((message) => message._tag),
      ["user", "assistant", "user"]
    )
    assert.strictEqual(
      rendered.messages[1]?.content,
      '{"actions":[{"tool":"webSearch","arguments":{"queries":["x"]}}]}'
    )
    assert.strictEqual(
      rendered.messages[2]?.content,
      "Results of your actions:\n\n### webSearch [c1]\nResults for x\n\n[Turn 2] calls left: 1"
    )
  })

  it("reads the actions of an answer, with ids by turn", () => {
    const calls = ActionProtocol.parse(
      `<think>hmm</think>Sure:\n\`\`\`json\n${actions({ tool: "think", arguments: { reflection: "r" } }, { tool: "webSearch", arguments: { queries: ["q"] } })}\n\`\`\``,
      3
    )
    assert.deepStrictEqual(
      calls.map((call) => [call.id, call.name, call.arguments]),
      [
        ["action_3_0", "think", { reflection: "r" }],
        ["action_3_1", "webSearch", { queries: ["q"] }]
      ]
    )
  })

  it("accepts a single action without the list", () => {
    const [call] = ActionProtocol.parse('{"tool": "researchComplete", "arguments": {"summary": "s"}}', 1)
    assert.strictEqual(call?.name, "researchComplete")
  })

  it("reads no action from prose or from an empty list", () => {
    assert.deepStrictEqual(ActionProtocol.parse("I am done, the answer is 42.", 1), [])
    assert.deepStrictEqual(ActionProtocol.parse('{"actions": []}', 1), [])
  })

  it.effect("keeps closing prose with [n] citations as text, with no action", () =>
    Effect.gen(function* () {
      const log = yield* ScriptedModel.makeLog
      const findings = "ALPHA was measured at 42 units [1], confirmed by a second lab [2]."
      const model = ActionProtocol.wrap(
        yield* ScriptedModel.make({ script: [findings], capabilities: { toolCalling: false } }, log)
      )
      const answer = yield* model.generate({ messages: [LanguageModel.user("Task")], tools: [search.definition] })
      assert.deepStrictEqual([answer.text, answer.toolCalls.length], [findings, 0])
    })
  )

  it("turns an unreadable answer into one invalid_actions call carrying the reason", () => {
    const [call, ...rest] = ActionProtocol.parse('{"actions": [{"arguments": {}}]}', 2)
    assert.strictEqual(rest.length, 0)
    assert.strictEqual(call?.name, ActionProtocol.invalidActionsTool)
    assert.include(JSON.stringify(call?.arguments), "could not be read as actions")
  })

  it.effect("leaves a tool-calling model as it is", () =>
    Effect.gen(function* () {
      const log = yield* ScriptedModel.makeLog
      const model = yield* ScriptedModel.make({ script: ["x"], capabilities: { toolCalling: true } }, log)
      assert.strictEqual(ActionProtocol.wrap(model), model)
    })
  )

  it.effect("gives read actions as tool calls without text, and keeps prose as text", () =>
    Effect.gen(function* () {
      const log = yield* ScriptedModel.makeLog
      const model = ActionProtocol.wrap(
        yield* ScriptedModel.make(
          {
            script: [actions({ tool: "think", arguments: { reflection: "r" } }), '{"actions": []}', "All done."],
            capabilities: { toolCalling: false }
          },
          log
        )
      )
      const ask = { messages: [LanguageModel.user("Task")], tools: [search.definition] }
      const first = yield* model.generate(ask)
      assert.strictEqual(first.text, "")
      assert.strictEqual(first.finishReason, "tool_calls")
      assert.deepStrictEqual(
        first.toolCalls.map((call) => call.name),
        ["think"]
      )
      const empty = yield* model.generate(ask)
      assert.deepStrictEqual([empty.text, empty.toolCalls.length], ["", 0])
      const prose = yield* model.generate(ask)
      assert.deepStrictEqual([prose.text, prose.toolCalls.length], ["All done.", 0])
      const [call] = yield* log.calls
      assert.isUndefined(call?.request.tools)
    })
  )

  it.effect("runs the researcher loop through JSON actions for a model without tool calling", () =>
    Effect.gen(function* () {
      const { calls, output } = yield* runUnit({
        researcher: {
          capabilities: { toolCalling: false },
          script: [
            actions(
              { tool: "think", arguments: { reflection: "search first" } },
              { tool: "webSearch", arguments: { queries: ["record"] } }
            ),
            "Let me try { this",
            actions({ tool: "researchComplete", arguments: { summary: "47.6% [1]" } })
          ]
        },
        web: { route: () => [nrel] }
      })
      assert.strictEqual(output.result.stopReason, "complete")
      assert.strictEqual(output.result.turns, 3)
      assert.strictEqual(output.result.toolCalls, 1)
      assert.deepStrictEqual(
        output.sources.map((source) => source.url),
        [nrel]
      )
      const requests = callsOf(calls, "researcher").map((call) => call.request)
      assert.isTrue(requests.every((request) => request.tools === undefined))
      assert.include(requests[0]?.system, "answer with a single JSON object")
      const second = requests[1]?.messages.at(-1)
      assert.strictEqual(second?._tag, "user")
      assert.include(second?.content, "### think [action_1_0]\nReflection recorded.")
      assert.include(second?.content, "### webSearch [action_1_1]")
      assert.include(second?.content, "[1] NEW\n<untrusted_data")
      const third = requests[2]?.messages.at(-1)
      assert.include(third?.content, `### ${ActionProtocol.invalidActionsTool} (error) [action_2_0]`)
    })
  )
})
