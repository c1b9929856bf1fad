import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { ResearchInvalidInput } from "../src/Errors.js"
import * as Checkpoint from "../src/phases/Checkpoint.js"
import * as ResearchConfig from "../src/ResearchConfig.js"
import * as Session from "../src/Session.js"
import { SessionStore } from "../src/SessionStore.js"
import { MemorySessionStore } from "../src/testing/index.js"
import * as UsageLedger from "../src/UsageLedger.js"

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

describe("Checkpoint.make", () => {
  /** A store whose saves take a few turns of the scheduler, and refuse a session whose query ends with "!". */
  const slowStore = Layer.effect(
    SessionStore,
    Effect.map(MemorySessionStore.make, (memory) =>
      SessionStore.of({
        ...memory,
        save: (session) =>
          Effect.zipRight(
            Effect.repeatN(Effect.yieldNow(), 3),
            session.query.endsWith("!")
              ? Effect.fail(new ResearchInvalidInput({ reason: "refused" }))
              : memory.save(session)
          )
      })
    )
  )

  it.effect("changes made at once are applied and saved one at a time, in the order they came, each on the last", () =>
    Effect.gen(function* () {
      const session = yield* newSession
      const handle = yield* Checkpoint.make(session, yield* UsageLedger.make())
      const appended = (suffix: string) => (s: Session.Session) =>
        Checkpoint.patch(s, { query: `${s.query} ${suffix}` })
      const results = yield* Effect.all(
        ["1", "2", "3!", "4", "5"].map((suffix) => Effect.either(handle.update(suffix, appended(suffix)))),
        { concurrency: "unbounded" }
      )
      assert.deepStrictEqual(
        results.map((result) => result._tag),
        ["Right", "Right", "Left", "Right", "Right"],
        "a refused save fails its own change only"
      )
      const final = yield* handle.get
      assert.strictEqual(final.query, `${session.query} 1 2 4 5`)
      const stored = yield* Effect.flatMap(SessionStore, (store) => store.load(session.id))
      assert.strictEqual(stored.query, final.query)
    }).pipe(Effect.provide(slowStore))
  )
})
