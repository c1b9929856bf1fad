import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Checkpoint from "../src/phases/Checkpoint.js"
import * as ResearchConfig from "../src/ResearchConfig.js"
import * as Session from "../src/Session.js"

const newSession = Effect.map(
  ResearchConfig.decode({}).pipe(Effect.orDie),
  (config) =>
    new Session.Session({
      version: Session.currentVersion,
      id: "checkpoint-test",
      query: "What should we know?",
      createdAt: 0,
      updatedAt: 0,
      config,
      status: "running",
      rounds: [],
      sources: [],
      metrics: [],
      usage: []
    })
)

describe("Checkpoint.patch", () => {
  it.effect("changes the given fields and keeps the others", () =>
    Effect.gen(function* () {
      const session = yield* newSession
      const next = Checkpoint.patch(session, { status: "completed", updatedAt: 5 })
      assert.instanceOf(next, Session.Session)
      assert.strictEqual(next.status, "completed")
      assert.strictEqual(next.updatedAt, 5)
      assert.strictEqual(next.query, session.query)
      assert.strictEqual(next.config, session.config)
      assert.deepStrictEqual(next.phasesCompleted, [])
    })
  )

  it.effect("refuses a changed field that the Session schema refuses, as the whole session's validation would", () =>
    Effect.gen(function* () {
      const session = yield* newSession
      // A valid patch with other fields first, so that a validator made for another set of fields is not reused.
      Checkpoint.patch(session, { status: "running" })
      assert.throws(() => Checkpoint.patch(session, { id: "../elsewhere" }), /SessionId|pattern|elsewhere/)
      assert.throws(() => Checkpoint.patch(session, { status: "running", id: "" }))
    })
  )
})
