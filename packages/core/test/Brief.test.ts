import { assert, describe, it } from "@effect/vitest"
import { Effect, Queue } from "effect"
import { Clarification, ClarificationRecord } from "../src/Research.js"
import * as Brief from "../src/phases/Brief.js"
import * as ResearchEvents from "../src/ResearchEvents.js"
import { ScriptedModel } from "../src/testing/index.js"

const brief = {
  brief: "I want to know how German freelancers are taxed in 2025, covering income tax and VAT.",
  scope: { include: ["income tax", "VAT"], exclude: ["corporate tax"] },
  sourcePreferences: ["Federal Ministry of Finance", "official tax code"],
  language: "English"
}

const clarification = new ClarificationRecord({
  decision: new Clarification({
    needClarification: true,
    question: "Which country do you mean?",
    verification: "Freelancer taxation, country open."
  }),
  answer: "Germany"
})

describe("Brief", () => {
  it.effect("decodes a structured brief from the model", () =>
    Effect.gen(function* () {
      const outcome = yield* Brief.run({ query: "How are freelancers taxed?", clarification: undefined }).pipe(
        Effect.provide(ScriptedModel.layerRouter({ default: [ScriptedModel.json(brief)] }))
      )
      assert.isFalse(outcome.fallback)
      assert.strictEqual(outcome.brief?.brief, brief.brief)
      assert.deepStrictEqual(outcome.brief?.scope.exclude, ["corporate tax"])
    })
  )

  it.effect("gives the brief model the clarifying question and the user's answer", () =>
    Effect.gen(function* () {
      yield* Brief.run({ query: "How are freelancers taxed?", clarification })
      const calls = yield* ScriptedModel.calls
      const call = calls.find((c) => c.role === "brief")
      const text = call?.request.messages.map((m) => m.content).join("\n") ?? ""
      assert.include(text, "Which country do you mean?")
      assert.include(text, "Germany")
      assert.include(call?.request.system ?? "", "primary")
    }).pipe(Effect.provide(ScriptedModel.layerRouter({ default: [ScriptedModel.json(brief)] })))
  )

  it.scoped("falls back to the original question when the brief cannot be had", () =>
    Effect.gen(function* () {
      const events = yield* ResearchEvents.make
      const queue = yield* events.subscribe
      const outcome = yield* Brief.run({ query: "How are freelancers taxed?", clarification: undefined }).pipe(
        Effect.provide(ScriptedModel.layerRouter({ default: ["not json at all"] })),
        Effect.provideService(ResearchEvents.ResearchEvents, events)
      )
      assert.isTrue(outcome.fallback)
      assert.isUndefined(outcome.brief)
      const written = [...(yield* Queue.takeAll(queue))].find((e) => e._tag === "BriefWritten")
      assert.deepStrictEqual(written?._tag === "BriefWritten" ? [written.brief, written.fallback] : [], [
        "How are freelancers taxed?",
        true
      ])
    })
  )
})
