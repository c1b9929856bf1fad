import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Either, Fiber, Ref, Schema } from "effect"
import { ProviderUnavailable } from "../src/Errors.js"
import * as Pipeline from "../src/Pipeline.js"
import * as Research from "../src/Research.js"
import type * as ResearchEvents from "../src/ResearchEvents.js"
import * as ResearchConfig from "../src/ResearchConfig.js"
import * as Session from "../src/Session.js"
import { SessionStore } from "../src/SessionStore.js"
import { ScriptedModel } from "../src/testing/index.js"
import { UserInput } from "../src/UserInput.js"
import * as H from "./pipelineHarness.js"

/** Yields until `condition` holds (the run under test makes progress on other fibers meanwhile). */
const eventually = <E, R>(condition: Effect.Effect<boolean, E, R>) =>
  Effect.gen(function* () {
    for (let i = 0; i < 10_000; i++) {
      if (yield* Effect.orElseSucceed(condition, () => false)) return
      yield* Effect.yieldNow()
    }
    return yield* Effect.dieMessage("the condition never held")
  })

const stored = (id: string) => Effect.flatMap(SessionStore, (store) => store.load(id))

const finishedUnits = (session: Session.Session) => session.rounds.flatMap((r) => r.results).length

const keywordsOf = (calls: ReadonlyArray<ScriptedModel.RecordedCall>, role: string) =>
  calls.filter((c) => c.role === role).map((c) => H.keywordOf(H.assignmentOf(c.request)))

/**
 * A researcher whose CHARLIE and DELTA calls hang while `hold` is set, after telling `waiting` they started: with two
 * units at a time, ALPHA and BRAVO finish while CHARLIE and DELTA are still researching.
 */
const holdingResearcher = Effect.gen(function* () {
  const hold = yield* Ref.make(true)
  const waiting = yield* Ref.make(0)
  const script: ScriptedModel.Script = (request) =>
    Effect.gen(function* () {
      const keyword = H.keywordOf(H.assignmentOf(request))
      if ((keyword === "CHARLIE" || keyword === "DELTA") && (yield* Ref.get(hold))) {
        yield* Ref.update(waiting, (n) => n + 1)
        return yield* Effect.never
      }
      return H.researcherTurn(request)
    })
  return { hold, script, waiting }
})

describe("Resume", () => {
  it.effect("a run interrupted midway through a round resumes without redoing finished researchers", () =>
    Effect.gen(function* () {
      const { hold, script, waiting } = yield* holdingResearcher
      const world = H.world({ scripts: H.scripts({ researcher: script }) })
      yield* Effect.gen(function* () {
        const fiber = yield* Effect.fork(
          Pipeline.research("Measure the four topics", {
            sessionId: "interrupted",
            config: { maxConcurrentResearchUnits: 2 }
          })
        )
        // Two units are checkpointed and the other two are researching: the run is killed there.
        yield* eventually(Effect.map(stored("interrupted"), (s) => finishedUnits(s) === 2))
        yield* eventually(Effect.map(Ref.get(waiting), (n) => n === 2))
        yield* Fiber.interrupt(fiber)
        const killed = yield* stored("interrupted")
        assert.strictEqual(killed.status, "cancelled")
        assert.deepStrictEqual(killed.rounds[0]?.results.map((r) => r.directiveId).sort(), ["r1-d1", "r1-d2"])
        assert.isFalse(killed.rounds[0]?.completed)
        const before = (yield* ScriptedModel.calls).length

        yield* Ref.set(hold, false)
        const resumed = yield* Pipeline.resume("interrupted")
        const after = (yield* ScriptedModel.calls).slice(before)

        assert.strictEqual(resumed.status, "completed")
        // Only CHARLIE's and DELTA's researchers ran again; ALPHA's and BRAVO's made no call at all.
        const researched = keywordsOf(after, "researcher")
        assert.notInclude(researched, "ALPHA")
        assert.notInclude(researched, "BRAVO")
        assert.includeMembers(researched, ["CHARLIE", "DELTA"])
        assert.deepStrictEqual(keywordsOf(after, "compression").sort(), ["CHARLIE", "DELTA"])
        // Finished phases were not redone either.
        assert.isFalse(after.some((c) => c.role === "clarification" || c.role === "brief"))
        // The report is complete: all four topics' findings reached it, with their sources.
        const report = after.find((c) => c.role === "report")
        const prompt = H.requestText(report?.request ?? { messages: [] })
        for (const keyword of H.topics) assert.include(prompt, `${keyword} was measured`)
        assert.strictEqual(resumed.rounds[0]?.results.length, 4)
        assert.strictEqual(resumed.sources.length, 4)
        assert.isDefined(resumed.report)
        // The account continued from the stored usage: every researcher call that finished is counted once.
        const all = yield* ScriptedModel.calls
        const researcherUsage = resumed.usage.find((u) => u.role === "researcher")
        assert.strictEqual(researcherUsage?.calls, all.filter((c) => c.role === "researcher").length - 2)
      }).pipe(Effect.provide(world))
    })
  )

  it.effect("a session awaiting clarification is stored as such and continues with the answer", () =>
    Effect.gen(function* () {
      const waiting = yield* Pipeline.research("Measure ALPHA", { sessionId: "asking", clarification: "await" })
      assert.strictEqual(waiting.status, "awaiting_clarification")
      assert.strictEqual((yield* stored("asking")).status, "awaiting_clarification")
      assert.strictEqual(waiting.clarification?.decision.question, "Which year do you care about?")
      assert.isFalse((yield* ScriptedModel.calls).some((c) => c.role === "brief"))

      const done = yield* Pipeline.resume("asking", { answer: "2024 only" })
      assert.strictEqual(done.status, "completed")
      assert.strictEqual(done.clarification?.answer, "2024 only")
      const calls = yield* ScriptedModel.calls
      assert.strictEqual(calls.filter((c) => c.role === "clarification").length, 1)
      const brief = calls.find((c) => c.role === "brief")
      assert.include(H.requestText(brief?.request ?? { messages: [] }), "2024 only")
    }).pipe(Effect.provide(H.world({ scripts: H.scripts({ clarification: [H.clarificationNeeded] }) })))
  )

  it.effect("resuming a session awaiting clarification without an answer asks the UserInput in context", () =>
    Effect.gen(function* () {
      yield* Pipeline.research("Measure ALPHA", { sessionId: "ask-later", clarification: "await" })
      const done = yield* Pipeline.resume("ask-later").pipe(
        Effect.provideService(UserInput, { ask: (question) => Effect.succeed(`About "${question}": 2023`) })
      )
      assert.strictEqual(done.status, "completed")
      assert.strictEqual(done.clarification?.answer, 'About "Which year do you care about?": 2023')
    }).pipe(Effect.provide(H.world({ scripts: H.scripts({ clarification: [H.clarificationNeeded] }) })))
  )

  it.effect("an answer for a session that is not waiting for one is refused, not dropped", () =>
    Effect.gen(function* () {
      yield* Pipeline.research("Measure ALPHA", { sessionId: "answered-twice" })
      const error = yield* Effect.flip(Pipeline.resume("answered-twice", { answer: "2024 only" }))
      assert.strictEqual(error._tag, "ResearchInvalidInput")
      assert.include(error.message, "not waiting for an answer")
    }).pipe(Effect.provide(H.world({ scripts: H.scripts({}) })))
  )

  it.effect("a completed session is returned as it is, without any model call", () =>
    Effect.gen(function* () {
      const first = yield* Pipeline.research("Measure ALPHA", { sessionId: "finished" })
      const before = (yield* ScriptedModel.calls).length
      const again = yield* Pipeline.resume("finished")
      assert.strictEqual(again.status, "completed")
      assert.strictEqual(again.report?.markdown, first.report?.markdown)
      assert.strictEqual((yield* ScriptedModel.calls).length, before)
    }).pipe(Effect.provide(H.world({})))
  )

  it.effect("a run that failed in synthesis is stored as failed and resumes at synthesis", () =>
    Effect.gen(function* () {
      const failed = yield* Effect.either(Pipeline.research("Measure ALPHA", { sessionId: "synthesis-failed" }))
      assert.isTrue(Either.isLeft(failed) && failed.left._tag === "ProviderUnavailable")
      const stuck = yield* stored("synthesis-failed")
      assert.strictEqual(stuck.status, "failed")
      assert.strictEqual(stuck.error?._tag, "ProviderUnavailable")
      assert.deepStrictEqual(stuck.phasesCompleted, ["clarification", "brief", "supervision"])

      const before = (yield* ScriptedModel.calls).length
      const resumed = yield* Pipeline.resume("synthesis-failed")
      assert.strictEqual(resumed.status, "completed")
      assert.isDefined(resumed.report)
      // The report, then its citation check (on the summarization role): nothing of research again.
      const after = (yield* ScriptedModel.calls).slice(before)
      assert.deepStrictEqual(
        after.filter((c) => c.role !== "summarization").map((c) => c.role),
        ["report"]
      )
      assert.strictEqual(after[0]?.role, "report")
    }).pipe(
      Effect.provide(
        H.world({
          scripts: H.scripts({ report: [new ProviderUnavailable({ provider: "scripted", status: 503 }), H.report] })
        })
      )
    )
  )

  it.effect("a resumed run that completes no longer carries the failure of the run before", () =>
    Effect.gen(function* () {
      yield* Effect.either(Pipeline.research("Measure ALPHA", { sessionId: "failed-once" }))
      assert.isDefined((yield* stored("failed-once")).error)
      const resumed = yield* Pipeline.resume("failed-once")
      assert.strictEqual(resumed.status, "completed")
      assert.isUndefined(resumed.error)
      assert.isUndefined((yield* stored("failed-once")).error)
    }).pipe(
      Effect.provide(
        H.world({
          scripts: H.scripts({ report: [new ProviderUnavailable({ provider: "scripted", status: 503 }), H.report] })
        })
      )
    )
  )

  it.effect("a brief saved just before a crash is not written again", () =>
    Effect.gen(function* () {
      const store = yield* SessionStore
      const decoded = yield* Schema.decodeUnknown(Research.Brief)(JSON.parse(String(H.brief)))
      yield* store.save(
        new Session.Session({
          version: Session.currentVersion,
          id: "crashed-after-brief",
          query: "Measure ALPHA",
          createdAt: 0,
          updatedAt: 0,
          config: ResearchConfig.defaults,
          status: "running",
          brief: decoded,
          phasesCompleted: ["clarification"],
          rounds: [],
          sources: [],
          metrics: [],
          usage: []
        })
      )
      const resumed = yield* Pipeline.resume("crashed-after-brief")
      assert.strictEqual(resumed.status, "completed")
      const roles = (yield* ScriptedModel.calls).map((c) => c.role)
      assert.notInclude(roles, "brief")
      assert.notInclude(roles, "clarification")
      assert.include(roles, "report")
    }).pipe(Effect.provide(H.world({})))
  )

  it.effect("a defect leaves the session marked failed and resumable", () =>
    Effect.gen(function* () {
      const broken = yield* Ref.make(true)
      const report: ScriptedModel.Script = () =>
        Effect.flatMap(Ref.get(broken), (isBroken) =>
          isBroken ? Effect.dieMessage("bug in a provider") : Effect.succeed(H.report)
        )
      yield* Effect.gen(function* () {
        const exit = yield* Effect.exit(Pipeline.research("Measure ALPHA", { sessionId: "defect" }))
        assert.isTrue(exit._tag === "Failure")
        assert.strictEqual((yield* stored("defect")).status, "failed")
        yield* Ref.set(broken, false)
        const resumed = yield* Pipeline.resume("defect")
        assert.strictEqual(resumed.status, "completed")
      }).pipe(Effect.provide(H.world({ scripts: H.scripts({ report }) })))
    })
  )

  it.effect("a session cannot be resumed while another run holds it", () =>
    Effect.gen(function* () {
      const { script, waiting } = yield* holdingResearcher
      yield* Effect.gen(function* () {
        const fiber = yield* Effect.fork(Pipeline.research("Measure the topics", { sessionId: "busy" }))
        yield* eventually(Effect.map(Ref.get(waiting), (n) => n > 0))
        const second = yield* Effect.either(Pipeline.resume("busy"))
        assert.isTrue(Either.isLeft(second) && second.left._tag === "ResearchSessionBusy")
        yield* Fiber.interrupt(fiber)
      }).pipe(Effect.provide(H.world({ scripts: H.scripts({ researcher: script }) })))
    })
  )

  it.effect(
    "resuming an unknown session fails with ResearchSessionNotFound before the store locks anything for it",
    () =>
      Effect.gen(function* () {
        const store = yield* SessionStore
        const locked = yield* Ref.make<ReadonlyArray<string>>([])
        // A lock is a write (the file store makes the session's folder for it): an unknown id must not get one.
        const watched = {
          ...store,
          lock: (id: string) =>
            Effect.zipRight(
              Ref.update(locked, (ids) => [...ids, id]),
              store.lock(id)
            )
        }
        const missing = yield* Effect.either(
          Pipeline.resume("no-such-session").pipe(Effect.provideService(SessionStore, watched))
        )
        assert.isTrue(Either.isLeft(missing) && missing.left._tag === "ResearchSessionNotFound")
        assert.deepStrictEqual(yield* Ref.get(locked), [])
      }).pipe(Effect.provide(H.world({})))
  )

  it.effect("a run stopped between storing its session and its first phase leaves it cancelled, not running", () =>
    Effect.gen(function* () {
      const store = yield* SessionStore
      const started = yield* Deferred.make<void>()
      // The run's first event waits forever: the session is stored, the research has not begun.
      const stalled = {
        ...store,
        appendEvents: (id: string, events: ReadonlyArray<ResearchEvents.ResearchEvent>) =>
          events.some((event) => event._tag === "SessionStarted")
            ? Effect.zipRight(Deferred.succeed(started, undefined), Effect.never)
            : store.appendEvents(id, events)
      }
      const fiber = yield* Effect.fork(
        Pipeline.research("Measure ALPHA", { sessionId: "stopped-early" }).pipe(
          Effect.provideService(SessionStore, stalled)
        )
      )
      yield* Deferred.await(started)
      yield* Fiber.interrupt(fiber)
      const left = yield* stored("stopped-early")
      assert.strictEqual(left.status, "cancelled")
      assert.include(
        (yield* store.events("stopped-early")).map((event) => event._tag),
        "SessionCancelled"
      )
      const resumed = yield* Pipeline.resume("stopped-early")
      assert.strictEqual(resumed.status, "completed")
    }).pipe(Effect.provide(H.world({})))
  )

  it.effect("a cancel that comes while a new session is being stored waits for it, then finds it cancelled", () =>
    Effect.gen(function* () {
      const store = yield* SessionStore
      const saving = yield* Deferred.make<void>()
      const gate = yield* Deferred.make<void>()
      // The first checkpoint takes as long as the test says.
      const slow = {
        ...store,
        save: (session: Session.Session) =>
          session.id === "cancelled-at-once" && session.rounds.length === 0 && session.status === "running"
            ? Effect.zipRight(
                Effect.zipRight(Deferred.succeed(saving, undefined), Deferred.await(gate)),
                store.save(session)
              )
            : store.save(session)
      }
      const fiber = yield* Effect.fork(
        Pipeline.research("Measure ALPHA", { sessionId: "cancelled-at-once" }).pipe(
          Effect.provideService(SessionStore, slow)
        )
      )
      yield* Deferred.await(saving)
      const cancel = yield* Effect.fork(Fiber.interrupt(fiber))
      yield* Effect.yieldNow()
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(cancel)
      // Not a session the client was told of and that then was nowhere: it is stored, cancelled, and resumable.
      assert.strictEqual((yield* stored("cancelled-at-once")).status, "cancelled")
      const resumed = yield* Pipeline.resume("cancelled-at-once")
      assert.strictEqual(resumed.status, "completed")
    }).pipe(Effect.provide(H.world({})))
  )

  it.effect(
    "recordCancelled keeps a session cancelled before it ran, for resume to run it, and leaves a stored one be",
    () =>
      Effect.gen(function* () {
        yield* Pipeline.recordCancelled("Measure ALPHA", {
          sessionId: "never-ran",
          config: { maxSupervisionRounds: 2 }
        })
        const kept = yield* stored("never-ran")
        assert.strictEqual(kept.status, "cancelled")
        assert.strictEqual(kept.query, "Measure ALPHA")
        assert.strictEqual(kept.config.maxSupervisionRounds, 2)
        assert.deepStrictEqual(kept.rounds, [])
        const resumed = yield* Pipeline.resume("never-ran")
        assert.strictEqual(resumed.status, "completed")
        // Recorded again, a stored session is left as it is.
        yield* Pipeline.recordCancelled("Measure ALPHA", { sessionId: "never-ran" })
        assert.strictEqual((yield* stored("never-ran")).status, "completed")
        const empty = yield* Effect.flip(Pipeline.recordCancelled("  ", { sessionId: "blank" }))
        assert.strictEqual(empty._tag, "ResearchInvalidInput")
      }).pipe(Effect.provide(H.world({})))
  )
})
