import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type * as LanguageModel from "../src/LanguageModel.js"
import * as Pipeline from "../src/Pipeline.js"
import { SessionStore } from "../src/SessionStore.js"
import { ScriptedModel } from "../src/testing/index.js"
import * as UsageLedger from "../src/UsageLedger.js"
import * as H from "./pipelineHarness.js"

/** Prose far longer than any call may write: every call that writes text spends all of its output limit. */
const endless = "The measurements agree with the institute's figures. ".repeat(4_000)

/** A researcher that thinks aloud at length every turn, then searches and completes as the harness's does. */
const verboseResearcher: ScriptedModel.Script = (request: LanguageModel.GenerateRequest) => {
  const turn = H.researcherTurn(request)
  return "toolCalls" in turn ? { ...turn, text: endless } : turn
}

/** Compression that keeps the claim, then goes on for as long as it may. */
const verboseCompression: ScriptedModel.Script = (request) => {
  const keyword = H.keywordOf(H.assignmentOf(request))
  return `## Findings\n${keyword} was measured at 42 units in 2024 [1]. ${endless}`
}

const scripts = H.scripts({
  researcher: verboseResearcher,
  compression: verboseCompression,
  report: [`# Report\n\nALPHA was measured at 42 units [1].\n\n${endless}`]
})

describe("Budget ceiling", () => {
  for (const maxTokens of [6_000, 12_000, 25_000, 60_000]) {
    it.effect(`a run of parallel researchers that spend all they may never goes past ${maxTokens} tokens`, () =>
      Effect.gen(function* () {
        const sessionId = `ceiling-${maxTokens}`
        const session = yield* Pipeline.research("Measure the topics", {
          sessionId,
          config: { budget: { maxTokens, synthesisReserve: 0.15 } }
        })
        const spent = UsageLedger.totals(session.usage).tokens
        assert.isAtMost(spent, maxTokens)
        assert.strictEqual(session.status, "completed")
        assert.isDefined(session.report)
        // The budget is spent, not left idle: research ran until it could not go on.
        if (maxTokens >= 12_000) assert.isAbove(spent, maxTokens * 0.5)
        const events = yield* Effect.flatMap(SessionStore, (store) => store.events(sessionId))
        const levels = events.flatMap((e) => (e._tag === "BudgetWarning" ? [e.level] : []))
        assert.strictEqual(new Set(levels).size, levels.length, `each budget line once: ${levels.join(", ")}`)
      }).pipe(Effect.provide(H.world({ scripts })))
    )
  }
})
