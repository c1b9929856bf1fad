import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Layer, Queue, Ref, Schema } from "effect"
import { ProviderUnavailable } from "../src/Errors.js"
import * as Language from "../src/internal/text/language.js"
import * as Pipeline from "../src/Pipeline.js"
import * as Pricing from "../src/Pricing.js"
import * as ResearchEvents from "../src/ResearchEvents.js"
import * as Resilience from "../src/Resilience.js"
import { SessionStore } from "../src/SessionStore.js"
import { ScriptedModel } from "../src/testing/index.js"
import * as UsageLedger from "../src/UsageLedger.js"
import * as H from "./pipelineHarness.js"

const down = new ProviderUnavailable({ provider: "scripted", status: 503 })

const rolesCalled = Effect.map(ScriptedModel.calls, (calls) => new Set(calls.map((c) => c.role)))

describe("Pipeline", () => {
  it.effect("research runs clarify, brief, supervision and synthesis into a completed, cited report", () =>
    Effect.gen(function* () {
      const session = yield* Pipeline.research("What are the latest measurements of the four topics?", {
        sessionId: "end-to-end"
      })
      assert.strictEqual(session.status, "completed")
      assert.isFalse(session.briefFallback)
      assert.strictEqual(session.rounds.length, 1)
      assert.strictEqual(session.rounds[0]?.results.filter((r) => r.status === "completed").length, 4)
      assert.strictEqual(session.supervisionStopReason, "research_complete")
      const report = session.report
      assert.isDefined(report)
      assert.include(report?.markdown ?? "", "measured 42 units [1]. The second too [2]. Invented.")
      assert.include(report?.markdown ?? "", "## Sources\n\n1. [Facts about ALPHA](https://alpha.example.org/facts)")
      assert.strictEqual(report?.droppedCitations, 1)
      assert.deepStrictEqual(
        session.metrics.map((m) => m.phase),
        ["clarification", "brief", "supervision", "synthesis", "verification"]
      )
      const supervision = session.metrics.find((m) => m.phase === "supervision")
      assert.deepStrictEqual(
        supervision?.roles.map((r) => r.role),
        ["supervisor", "researcher", "compression"]
      )
      assert.isAbove(supervision?.totalTokens ?? 0, 0)
      const store = yield* SessionStore
      const stored = yield* store.load("end-to-end")
      assert.strictEqual(stored.status, "completed")
      assert.deepStrictEqual(stored.phasesCompleted, [
        "clarification",
        "brief",
        "supervision",
        "synthesis",
        "verification"
      ])
    }).pipe(Effect.provide(H.world({})))
  )

  it.effect("a session asked for before its run starts is created at that time (never in the future)", () =>
    Effect.gen(function* () {
      const asked = yield* Pipeline.research("What are the latest measurements?", {
        sessionId: "asked-earlier",
        createdAt: -5_000
      })
      assert.strictEqual(asked.createdAt, -5_000)
      assert.isAtLeast(asked.updatedAt, 0)
      const future = yield* Pipeline.research("What are the latest measurements?", {
        sessionId: "asked-later",
        createdAt: 1e15
      })
      assert.isBelow(future.createdAt, 1e15)
    }).pipe(Effect.provide(H.world({})))
  )

  it.effect("every phase, round and directive is published and kept with the session", () =>
    Effect.gen(function* () {
      yield* Pipeline.research("What are the latest measurements?", { sessionId: "events" })
      const events = yield* Effect.flatMap(SessionStore, (store) => store.events("events"))
      const tags = events.map((e) => e._tag)
      assert.strictEqual(tags[0], "SessionStarted")
      assert.strictEqual(tags[tags.length - 1], "SessionCompleted")
      assert.deepStrictEqual(
        events.flatMap((e) => (e._tag === "PhaseCompleted" ? [e.phase] : [])),
        ["clarification", "brief", "supervision", "synthesis", "verification"]
      )
      assert.strictEqual(tags.filter((t) => t === "DirectiveIssued").length, 4)
      assert.strictEqual(tags.filter((t) => t === "ResearcherCompleted").length, 4)
      for (const tag of ["RoundStarted", "RoundCompleted", "SupervisionStopped", "ReportWritten", "Checkpointed"]) {
        assert.include(tags, tag)
      }
      assert.isTrue(events.every((e) => e.sessionId === "events"))
    }).pipe(Effect.provide(H.world({})))
  )

  it.effect(
    "the session's log holds every event as its subscribers received it, and events of no session it does not",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const queue = yield* Effect.flatMap(ResearchEvents.ResearchEvents, (events) => events.subscribe)
          yield* Pipeline.research("What are the latest measurements?", { sessionId: "as-published" })
          yield* ResearchEvents.publish({ _tag: "RoundStarted", round: 99 })
          const published = [...(yield* Queue.takeAll(queue))]
          const logged = yield* Effect.flatMap(SessionStore, (store) => store.events("as-published"))
          assert.strictEqual(published.at(-1)?._tag, "RoundStarted")
          assert.isUndefined(published.at(-1)?.sessionId)
          assert.deepStrictEqual(logged, published.slice(0, -1))
          assert.isTrue(logged.every((event) => typeof event.timestamp === "number"))
        })
      ).pipe(Effect.provide(H.world({})))
  )

  it.effect("retries and breaker changes during a run are kept in the session's event log", () =>
    Effect.gen(function* () {
      const session = yield* H.withClock(Pipeline.research("Measure ALPHA", { sessionId: "retried" }))
      assert.strictEqual(session.status, "completed")
      const events = yield* Effect.flatMap(SessionStore, (store) => store.events("retried"))
      assert.deepStrictEqual(
        events.flatMap((e) => (e._tag === "Retrying" ? [[e.sessionId, e.provider, e.attempt, e.delayMillis]] : [])),
        [
          ["retried", "scripted", 1, 1_000],
          ["retried", "scripted", 2, 2_000]
        ]
      )
      assert.deepStrictEqual(
        events.flatMap((e) => (e._tag === "CircuitChanged" ? [`${e.sessionId}:${e.state}`] : [])),
        ["retried:open", "retried:half_open", "retried:closed"]
      )
    }).pipe(
      Effect.provide(
        H.world({
          // The report model fails twice: the breaker (threshold 2) opens, half-opens 1.5 s later, and the third
          // attempt, 2 s after the second, closes it.
          scripts: H.scripts({ report: [down, down, H.report] }),
          resilience: Schema.decodeUnknownSync(Resilience.Settings)({
            model: { jitter: false, failureThreshold: 2, resetTimeout: 1_500 }
          })
        })
      )
    )
  )

  it.effect("checkpoints once after every phase, every finished research unit and every round", () =>
    Effect.gen(function* () {
      yield* Pipeline.research("Measure the topics", { sessionId: "checkpoints" })
      const events = yield* Effect.flatMap(SessionStore, (store) => store.events("checkpoints"))
      const labels = events.flatMap((e) => (e._tag === "Checkpointed" ? [e.label] : []))

      // A phase's result and its completion mark are one checkpoint; so are the round's last unit and the round.
      const units = labels.filter((label) => label.startsWith("research unit "))
      assert.deepStrictEqual(
        labels.filter((label) => !label.startsWith("research unit ")),
        [
          "clarification completed",
          "brief completed",
          "round 1 delegated",
          "supervision completed",
          "synthesis completed",
          "verification completed"
        ]
      )
      assert.deepStrictEqual(
        units.map((label) => label.replace(", round 1 completed", "")).sort(),
        ["r1-d1", "r1-d2", "r1-d3", "r1-d4"].map((id) => `research unit ${id} completed`)
      )
      // Units are saved as they finish; the last of them completes the round.
      assert.deepStrictEqual(
        units.map((label) => label.endsWith(", round 1 completed")),
        [false, false, false, true]
      )
      assert.isBelow(labels.indexOf("round 1 delegated"), labels.indexOf(units[0] ?? ""))
      const stored = yield* Effect.flatMap(SessionStore, (store) => store.load("checkpoints"))
      assert.strictEqual(stored.status, "completed")
      assert.strictEqual(stored.supervisionStopReason, "research_complete")
      assert.isDefined(stored.report)
      assert.deepStrictEqual(stored.phasesCompleted, [
        "clarification",
        "brief",
        "supervision",
        "synthesis",
        "verification"
      ])
    }).pipe(Effect.provide(H.world({})))
  )

  it.effect("the number of research units in flight reaches the cap and never exceeds it", () =>
    Effect.gen(function* () {
      const { maxInFlight, script } = yield* H.countingResearcher(5)
      const session = yield* H.withClock(
        Pipeline.research("Measure everything", {
          config: { maxConcurrentResearchUnits: 2 }
        }).pipe(Effect.provide(H.world({ scripts: H.scripts({ researcher: script }) })))
      )
      assert.strictEqual(session.rounds[0]?.results.length, 4)
      assert.strictEqual(yield* Ref.get(maxInFlight), 2)
    })
  )

  it.effect("each phase records its duration on the clock and, per role, the calls, tokens and cost spent in it", () =>
    Effect.gen(function* () {
      // Every researcher call takes 5 s; the four units run at once, two calls each.
      const { script } = yield* H.countingResearcher(5)
      const prices = new Pricing.PriceTable({ prices: [new Pricing.Price({ match: "scripted", input: 2, output: 8 })] })
      const world = H.world({ scripts: H.scripts({ researcher: script }) }).pipe(
        Layer.provideMerge(Pricing.layer(prices))
      )
      const { calls, session } = yield* H.withClock(
        Effect.all({ session: Pipeline.research("Measure the topics"), calls: ScriptedModel.calls })
      ).pipe(Effect.provide(world))
      const phase = (name: string) => session.metrics.find((m) => m.phase === name)
      assert.strictEqual(phase("supervision")?.durationMillis, 10_000)
      assert.strictEqual(phase("brief")?.durationMillis, 0)
      assert.deepStrictEqual(
        phase("supervision")?.roles.map((r) => [r.role, r.calls]),
        [
          ["supervisor", 2],
          ["researcher", 8],
          ["compression", 4]
        ]
      )
      assert.deepStrictEqual(
        phase("synthesis")?.roles.map((r) => r.role),
        ["report"]
      )
      // Every call is counted in exactly one phase, and the phases' costs add up to the session's.
      assert.strictEqual(
        session.metrics.reduce((n, m) => n + m.calls, 0),
        calls.length
      )
      const researcher = phase("supervision")?.roles.find((r) => r.role === "researcher")
      assert.closeTo(
        researcher?.costUsd ?? 0,
        ((researcher?.inputTokens ?? 0) * 2 + (researcher?.outputTokens ?? 0) * 8) / 1e6,
        1e-12
      )
      assert.closeTo(
        session.metrics.reduce((n, m) => n + m.costUsd, 0),
        session.usage.reduce((n, r) => n + r.costUsd, 0),
        1e-12
      )
      assert.isAbove(
        session.usage.reduce((n, r) => n + r.costUsd, 0),
        0
      )
    })
  )

  it.effect("a failing researcher does not stop the others, and its error never reaches the report", () =>
    Effect.gen(function* () {
      const failing: ScriptedModel.Script = (request) =>
        H.keywordOf(H.assignmentOf(request)) === "FAIL"
          ? new ProviderUnavailable({ provider: "scripted", status: 503, detail: "RESEARCHER-BROKE" })
          : H.researcherTurn(request)
      const world = H.world({
        scripts: H.scripts({ researcher: failing, supervisor: [H.delegate("ALPHA", "FAIL", "BRAVO"), H.complete] })
      })
      const { calls, session } = yield* Effect.all({
        session: Pipeline.research("Measure the topics"),
        calls: ScriptedModel.calls
      }).pipe(Effect.provide(world))
      assert.strictEqual(session.status, "completed")
      const results = session.rounds[0]?.results ?? []
      assert.deepStrictEqual(results.map((r) => r.status).sort(), ["completed", "completed", "failed"])
      assert.include(results.find((r) => r.status === "failed")?.error ?? "", "RESEARCHER-BROKE")
      assert.isDefined(session.report)
      const report = calls.find((c) => c.role === "report")
      assert.notInclude(H.requestText(report?.request ?? { messages: [] }), "RESEARCHER-BROKE")
      assert.notInclude(H.requestText(report?.request ?? { messages: [] }), "Investigate FAIL")
    })
  )

  it.effect("budget exhaustion stops research early and still yields a report from partial findings", () =>
    Effect.gen(function* () {
      // A researcher's notes cost about 10,000 tokens: research may spend 12,000 of 20,000.
      const expensive: ScriptedModel.Script = (request) => {
        const reply = H.researcherTurn(request)
        return "toolCalls" in reply ? { ...reply, text: "x".repeat(40_000) } : reply
      }
      const { events, session } = yield* Effect.gen(function* () {
        const session = yield* Pipeline.research("Measure the topics", {
          sessionId: "budget",
          config: { budget: { maxTokens: 20_000, synthesisReserve: 0.4 } }
        })
        const events = yield* Effect.flatMap(SessionStore, (store) => store.events("budget"))
        return { events, session }
      }).pipe(
        Effect.provide(
          H.world({
            scripts: H.scripts({
              researcher: expensive,
              supervisor: [H.delegate("ALPHA"), H.delegate("BRAVO"), H.complete]
            })
          })
        )
      )
      assert.isTrue(events.some((e) => e._tag === "BudgetWarning" && e.budget === "tokens" && e.limit === 20_000))
      assert.strictEqual(session.status, "completed")
      assert.strictEqual(session.supervisionStopReason, "budget")
      // The budget was planned before anything was spent: one researcher a round (BRAVO waited for the second).
      assert.strictEqual(session.config.maxDirectivesPerRound, 1)
      assert.strictEqual(session.rounds.length, 2)
      assert.include(session.report?.markdown ?? "", "[1]")
      assert.strictEqual(session.report?.citations[0]?.url, "https://alpha.example.org/facts")
    })
  )

  it.effect("a budget too small for the clarification and brief calls skips them and still writes the report", () =>
    Effect.gen(function* () {
      const session = yield* Pipeline.research("What is ALPHA measured at?", {
        config: { budget: { maxTokens: 3_000, synthesisReserve: 0.5 } }
      })
      const roles = (yield* ScriptedModel.calls).map((c) => c.role)
      assert.notInclude(roles, "clarification")
      assert.notInclude(roles, "brief")
      assert.include(roles, "report")
      assert.isTrue(session.briefFallback)
      assert.strictEqual(session.status, "completed")
      assert.isDefined(session.report)
      assert.isAtMost(UsageLedger.totals(session.usage).tokens, 3_000)
    }).pipe(Effect.provide(H.world({ scripts: H.scripts({}) })))
  )

  it.effect("a budget that cannot pay for a report of useful length says so and gives what it has, no model call", () =>
    Effect.gen(function* () {
      const session = yield* Pipeline.research("What is ALPHA measured at?", {
        sessionId: "tiny-budget",
        config: { budget: { maxTokens: 400, synthesisReserve: 0.5 } }
      })
      const events = yield* Effect.flatMap(SessionStore, (store) => store.events("tiny-budget"))
      assert.deepStrictEqual(yield* ScriptedModel.calls, [])
      assert.strictEqual(session.status, "completed")
      assert.include(session.report?.markdown ?? "", "The budget could not pay for writing a report of useful length")
      assert.isTrue(events.some((e) => e._tag === "BudgetWarning" && e.level === "report_short"))
      assert.strictEqual(UsageLedger.totals(session.usage).tokens, 0)
    }).pipe(Effect.provide(H.world({ scripts: H.scripts({}) })))
  )

  it.effect("when the brief fails the original question stands in", () =>
    Effect.gen(function* () {
      const session = yield* Pipeline.research("What is ALPHA measured at?")
      assert.isTrue(session.briefFallback)
      assert.isUndefined(session.brief)
      assert.strictEqual(session.status, "completed")
      const calls = yield* ScriptedModel.calls
      const supervisor = calls.find((c) => c.role === "supervisor")
      assert.include(H.requestText(supervisor?.request ?? { messages: [] }), "What is ALPHA measured at?")
    }).pipe(Effect.provide(H.world({ scripts: H.scripts({ brief: ["this is not a brief"] }) })))
  )

  it.effect("a Chinese question gets the report-language instruction for Chinese", () =>
    Effect.gen(function* () {
      const session = yield* Pipeline.research("这四个主题的最新测量结果是什么？")
      const calls = yield* ScriptedModel.calls
      const report = calls.find((c) => c.role === "report")
      assert.include(report?.request.system ?? "", Language.reportInstruction(Language.detect("这是中文")))
      assert.strictEqual(session.report?.language, "Chinese")
    }).pipe(Effect.provide(H.world({})))
  )

  it.effect("with allowClarification off the clarification model is never called", () =>
    Effect.gen(function* () {
      const session = yield* Pipeline.research("Measure ALPHA", { config: { allowClarification: false } })
      assert.strictEqual(session.status, "completed")
      assert.isFalse((yield* rolesCalled).has("clarification"))
      assert.notInclude(session.phasesCompleted, "clarification")
    }).pipe(Effect.provide(H.world({})))
  )

  it.effect("a clarification needed with nobody to ask proceeds with the understanding as constraints", () =>
    Effect.gen(function* () {
      const session = yield* Pipeline.research("Measure the topics")
      assert.strictEqual(session.status, "completed")
      assert.strictEqual(session.clarification?.decision.needClarification, true)
      const calls = yield* ScriptedModel.calls
      const supervisor = calls.find((c) => c.role === "supervisor")
      assert.include(H.requestText(supervisor?.request ?? { messages: [] }), "Measurements of the topics, year open.")
    }).pipe(Effect.provide(H.world({ scripts: H.scripts({ clarification: [H.clarificationNeeded] }) })))
  )

  it.effect("an invalid configuration or session id is refused before anything runs", () =>
    Effect.gen(function* () {
      const badConfig = yield* Effect.either(Pipeline.research("q", { config: { maxSupervisionRounds: -1 } }))
      assert.isTrue(Either.isLeft(badConfig) && badConfig.left._tag === "ResearchInvalidInput")
      const badId = yield* Effect.either(Pipeline.research("q", { sessionId: "../escape" }))
      assert.isTrue(Either.isLeft(badId) && badId.left._tag === "ResearchInvalidInput")
      const empty = yield* Effect.either(Pipeline.research("   "))
      assert.isTrue(Either.isLeft(empty) && empty.left._tag === "ResearchInvalidInput")
      assert.strictEqual((yield* ScriptedModel.calls).length, 0)
    }).pipe(Effect.provide(H.world({})))
  )

  it.effect("starting a second research with an existing session id is refused", () =>
    Effect.gen(function* () {
      yield* Pipeline.research("Measure ALPHA", { sessionId: "twice" })
      const again = yield* Effect.either(Pipeline.research("Measure BRAVO", { sessionId: "twice" }))
      assert.isTrue(Either.isLeft(again) && again.left._tag === "ResearchInvalidInput")
    }).pipe(Effect.provide(H.world({})))
  )
})
