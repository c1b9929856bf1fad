// docs/library.md's example of a user testing their own program with the testing layers, kept runnable here.
import { LanguageModel, ModelRouter, StructuredOutput } from "@deep-research/core"
import { ScriptedModel } from "@deep-research/core/testing"
import { assert, it } from "@effect/vitest"
import { Effect, Schema } from "effect"

// The program under test: asks the brief role for a title.
const title = Effect.gen(function* () {
  const model = yield* ModelRouter.forRole("brief")
  const answer = yield* StructuredOutput.generateObject(model, Schema.Struct({ title: Schema.String }), {
    messages: [LanguageModel.user("Title this report")]
  })
  return answer.value.title
})

it.effect("titles the report", () =>
  Effect.gen(function* () {
    assert.strictEqual(yield* title, "Capital rules after 2008")
    const calls = yield* ScriptedModel.calls
    assert.strictEqual(calls[0]?.role, "brief")
  }).pipe(
    Effect.provide(ScriptedModel.layerRouter({ default: [ScriptedModel.json({ title: "Capital rules after 2008" })] }))
  )
)
