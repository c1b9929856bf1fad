// What a runner does with a follow-up message delivered again (its runner died after the work, before the reply): an
// `Ask` finds its answer kept and replies with it, and a `Continue` finds its continuation begun; neither pays twice.
// The runner's handlers over the scripted model and a memory store, as the cluster's entity calls them.
import { Pipeline, SessionStore } from "@deep-research/core"
import { ScriptedRun } from "@deep-research/core/testing"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { askSession, continueSession } from "../src/internal/cluster/sessionWork.js"

const script = {
  pages: [
    {
      url: "https://tides.example/moon",
      title: "How the Moon raises tides",
      content: "The Moon's gravity raises two tidal bulges; most coasts see two high tides a day."
    }
  ],
  rounds: [[{ topic: "Tides and the Moon", extract: ["https://tides.example/moon"], findings: "Two bulges [1]." }]],
  report: "# Tides\n\n## The Moon\n\nThe Moon raises two tidal bulges [1].",
  answer: { covered: true, answer: "Most coasts see two high tides a day [1].", direction: "" },
  continuationRounds: [[{ topic: "Tidal power", extract: ["https://tides.example/moon"], findings: "Bulges [1]." }]],
  continuationReport: "# Tides\n\n## The Moon\n\nThe Moon raises two tidal bulges [1].\n\n## Power\n\nBulges [1]."
} satisfies ScriptedRun.Script

describe("a follow-up message delivered again", () => {
  it.effect("an ask replies with the answer kept after it was sent, with no model call", () =>
    Effect.gen(function* () {
      const session = yield* Pipeline.research("How do tides work?")
      const payload = { question: "How many high tides a day?", answered: session.answers.length }
      const first = yield* askSession(session.id, payload)
      const calls = (yield* ScriptedRun.calls).length
      const again = yield* askSession(session.id, payload)
      assert.deepStrictEqual(again, first)
      assert.strictEqual((yield* ScriptedRun.calls).length, calls)
      const stored = yield* Effect.flatMap(SessionStore.SessionStore, (store) => store.load(session.id))
      assert.strictEqual(stored.answers.length, 1)
      // Asked again by a client (a new message): answered again.
      yield* askSession(session.id, { ...payload, answered: stored.answers.length })
      assert.isAbove((yield* ScriptedRun.calls).length, calls)
    }).pipe(Effect.provide(ScriptedRun.layer(script)))
  )

  it.effect("a continuation goes deeper once, and its message delivered again starts no other", () =>
    Effect.gen(function* () {
      const session = yield* Pipeline.research("How do tides work?")
      const payload = { direction: "tidal power", rounds: 1, continuations: session.continuations.length }
      yield* continueSession(session.id, payload)
      const store = yield* SessionStore.SessionStore
      const deeper = yield* store.load(session.id)
      assert.strictEqual(deeper.status, "completed")
      assert.strictEqual(deeper.continuations.length, 1)
      const calls = (yield* ScriptedRun.calls).length
      yield* continueSession(session.id, payload)
      const after = yield* store.load(session.id)
      assert.strictEqual(after.continuations.length, 1)
      assert.strictEqual(after.reportVersions.length, 1)
      assert.strictEqual((yield* ScriptedRun.calls).length, calls)
    }).pipe(Effect.provide(ScriptedRun.layer(script)))
  )
})
