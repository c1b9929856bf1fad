/**
 * The simulated researcher's last turn: told that a search's results still reach its findings, it ends in the turn of
 * that search, and its summary says where the findings are rather than that nothing was found.
 */
import { assert, describe, it } from "@effect/vitest"
import type { Conversation } from "../src/world/conversation.js"
import { decide, type Settings } from "../src/world/simulatedModel.js"

const settings: Settings = { directives: 1, supervisorRounds: 1, searchRounds: 1, resultsPerQuery: 2, refuse: {} }

const researcher = (system: string, turns: Conversation["turns"] = []): Conversation => ({
  system,
  turns: [{ role: "user", text: "## Your assignment\nTidal energy in estuaries", toolCalls: [] }, ...turns],
  tools: new Map<string, unknown>([
    ["webSearch", { type: "object", properties: { queries: { type: "array", items: { type: "string" } } } }],
    ["researchComplete", { type: "object", properties: { summary: { type: "string" } } }]
  ]),
  forcedTool: undefined,
  responseSchema: undefined,
  model: "simulated"
})

const summaryOf = (conversation: Conversation) => {
  const decision = decide(conversation, settings)
  assert.strictEqual(decision.kind, "tools")
  const calls = decision.kind === "tools" ? decision.calls : []
  const complete = calls.find((call) => call.name === "researchComplete")
  return { names: calls.map((call) => call.name), summary: (complete?.arguments as { summary?: string }).summary }
}

describe("the simulated researcher", () => {
  it("ends with its last search, its summary saying the findings are in that search's results", () => {
    const { names, summary } = summaryOf(
      researcher("You research. You may call researchComplete in the same turn as your last search.")
    )
    assert.deepStrictEqual(names, ["webSearch", "researchComplete"])
    assert.include(summary, "in the results of the search sent with this summary")
    assert.notInclude(summary, "No usable sources")
  })

  it("says that nothing was found when its searches returned nothing", () => {
    const { names, summary } = summaryOf(
      researcher("You research.", [
        { role: "assistant", text: "", toolCalls: ["webSearch"] },
        { role: "tool", text: "No results.", toolCalls: [] }
      ])
    )
    assert.deepStrictEqual(names, ["researchComplete"])
    assert.include(summary, "No usable sources were found on Tidal energy in estuaries")
  })
})
