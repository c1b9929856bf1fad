// A model that refuses the key or cannot be reached fails the run at the first call that meets it, with that error:
// not after the clarification, the brief and the supervisor each went on without it.
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Errors from "../src/Errors.js"
import * as Pipeline from "../src/Pipeline.js"
import { SessionStore } from "../src/SessionStore.js"
import { ScriptedModel } from "../src/testing/index.js"
import * as H from "./pipelineHarness.js"

const refused = new Errors.ProviderAuthenticationFailed({ provider: "scripted", detail: "invalid key" })
const unreachable = new Errors.ProviderUnavailable({ provider: "scripted", detail: "connect ECONNREFUSED" })

describe("a run whose model cannot be used", () => {
  it.effect("fails at the clarification with the refused key, after one model call", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(Pipeline.research("What are the latest measurements?", { sessionId: "refused" }))
      assert.strictEqual(error._tag, "ProviderAuthenticationFailed")
      assert.strictEqual(error.message, refused.message)
      assert.strictEqual((yield* ScriptedModel.calls).length, 1)
      const stored = yield* (yield* SessionStore).load("refused")
      assert.strictEqual(stored.status, "failed")
      assert.strictEqual(stored.error?._tag, "ProviderAuthenticationFailed")
    }).pipe(Effect.provide(H.world({ scripts: H.scripts({ clarification: [refused] }) })))
  )

  it.effect("fails at the brief when the model cannot be reached and clarification is off", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(
        Pipeline.research("What are the latest measurements?", { config: { allowClarification: false } })
      )
      assert.strictEqual(error._tag, "ProviderUnavailable")
      assert.strictEqual(error.message, unreachable.message)
      assert.deepStrictEqual(
        (yield* ScriptedModel.calls).map((call) => call.role),
        ["brief"]
      )
    }).pipe(Effect.provide(H.world({ scripts: H.scripts({ brief: [unreachable] }) })))
  )

  it.effect("fails at the supervisor's first call when its key is refused, writing no report", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(Pipeline.research("What are the latest measurements?"))
      assert.strictEqual(error._tag, "ProviderAuthenticationFailed")
      const roles = (yield* ScriptedModel.calls).map((call) => call.role)
      assert.notInclude(roles, "report")
      assert.strictEqual(roles.filter((role) => role === "supervisor").length, 1)
    }).pipe(Effect.provide(H.world({ scripts: H.scripts({ supervisor: [refused] }) })))
  )

  it.effect("still goes on without a clarification whose request the model rejected", () =>
    Effect.gen(function* () {
      const session = yield* Pipeline.research("What are the latest measurements?")
      assert.strictEqual(session.status, "completed")
    }).pipe(
      Effect.provide(
        H.world({
          scripts: H.scripts({
            clarification: [
              new Errors.ProviderInvalidRequest({ provider: "scripted", detail: "the schema is not supported" })
            ]
          })
        })
      )
    )
  )
})
