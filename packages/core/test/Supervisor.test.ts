import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Option, Ref, TestClock } from "effect"
import * as Budget from "../src/Budget.js"
import { ProviderUnavailable } from "../src/Errors.js"
import * as LanguageModel from "../src/LanguageModel.js"
import * as ModelRouter from "../src/ModelRouter.js"
import * as Checkpoint from "../src/phases/Checkpoint.js"
import type * as ResearchUnit from "../src/phases/ResearchUnit.js"
import * as Supervisor from "../src/phases/Supervisor.js"
import { IssuedDirective, SupervisionRound, TopicResult, Directive } from "../src/Research.js"
import * as ResearchConfig from "../src/ResearchConfig.js"
import * as Session from "../src/Session.js"
import { Source } from "../src/Source.js"
import { MemorySessionStore, ScriptedModel } from "../src/testing/index.js"
import * as Task from "../src/Task.js"
import * as UsageLedger from "../src/UsageLedger.js"
import * as ResearchEvents from "../src/ResearchEvents.js"
import * as H from "./pipelineHarness.js"

// =============================================================================
// Harness: a scripted supervisor, a research unit that makes one scripted researcher call, a memory store
// =============================================================================

const directive = (topic: string, priority = 1) => ({
  topic,
  perspective: "neutral",
  evidenceNeeded: "primary sources",
  priority
})

const conduct = (...topics: ReadonlyArray<string | readonly [string, number]>) =>
  ScriptedModel.toolCalls(
    { name: "think", arguments: { reflection: "Plan the next directives." } },
    ...topics.map((t) => ({
      name: "conductResearch",
      arguments: typeof t === "string" ? directive(t) : directive(t[0], t[1])
    }))
  )

const complete = ScriptedModel.toolCalls({ name: "researchComplete", arguments: {} })

const newSession = (config: ResearchConfig.ResearchConfig, rounds: ReadonlyArray<SupervisionRound> = []) =>
  new Session.Session({
    version: Session.currentVersion,
    id: "supervision-test",
    query: "What should we know?",
    createdAt: 0,
    updatedAt: 0,
    config,
    status: "running",
    rounds,
    sources: [],
    metrics: [],
    usage: []
  })

const config = (fields: Partial<typeof ResearchConfig.ResearchConfig.Encoded>) =>
  ResearchConfig.decode(fields).pipe(Effect.orDie)

/** What the research units did. */
interface Probe {
  readonly inFlight: Ref.Ref<number>
  readonly maxInFlight: Ref.Ref<number>
  readonly started: Ref.Ref<ReadonlyArray<string>>
}

const makeProbe = Effect.all({
  inFlight: Ref.make(0),
  maxInFlight: Ref.make(0),
  started: Ref.make<ReadonlyArray<string>>([])
})

/** A researcher model that takes `seconds` (on the test clock) per call and counts the calls in flight. */
const researcherScript =
  (probe: Probe, seconds: number, output: string): ScriptedModel.Script =>
  () =>
    Effect.gen(function* () {
      const now = yield* Ref.updateAndGet(probe.inFlight, (n) => n + 1)
      yield* Ref.update(probe.maxInFlight, (max) => Math.max(max, now))
      yield* Effect.sleep(`${seconds} seconds`)
      yield* Ref.update(probe.inFlight, (n) => n - 1)
      return output
    })

/** A research unit over the scripted researcher: one call, one source, findings citing it. Topics with FAIL fail. */
const unit =
  (probe: Probe): ResearchUnit.Runner<ModelRouter.ModelRouter> =>
  (input) =>
    Effect.gen(function* () {
      const id = input.directive.id
      const topic = input.directive.directive.topic
      yield* Ref.update(probe.started, (xs) => [...xs, topic])
      yield* Effect.ignore(ModelRouter.generate("researcher", { messages: [LanguageModel.user(topic)] }))
      const source = new Source({
        id: `${id}-s1`,
        url: `https://${id}.example.org/page`,
        title: `Source for ${topic}`,
        content: "content",
        provider: "static",
        quality: "high",
        retrievedAt: 0,
        directiveId: id,
        rawLength: 100
      })
      const failed = topic.includes("FAIL")
      return {
        result: new TopicResult({
          directiveId: id,
          status: failed ? "failed" : "completed",
          findings: failed ? "" : `Findings about ${topic} [1].`,
          supervisorSummary: failed ? "" : `SUMMARY of ${topic}`,
          sourceIds: failed ? [] : [source.id],
          stopReason: failed ? "failed" : "complete",
          toolCalls: 1,
          turns: 1,
          compressed: true,
          ...(failed ? { error: "ProviderUnavailable: search is down" } : {})
        }),
        sources: failed ? [] : [source]
      }
    })

interface Run {
  readonly outcome: Supervisor.Outcome
  readonly session: Session.Session
  readonly probe: Probe
  readonly calls: ReadonlyArray<ScriptedModel.RecordedCall>
}

/** Runs supervision on the test clock, advancing it until supervision ends. */
const supervise = (options: {
  readonly supervisor: ScriptedModel.Script | ScriptedModel.Options
  readonly config: ResearchConfig.ResearchConfig
  readonly researcherSeconds?: number | undefined
  readonly researcherOutput?: string | undefined
  /** Seconds the test clock moves per step. */
  readonly clockStep?: number | undefined
  readonly rounds?: ReadonlyArray<SupervisionRound> | undefined
  /** Receives the events supervision publishes. */
  readonly events?: Ref.Ref<ReadonlyArray<ResearchEvents.EventInput>> | undefined
}) =>
  Effect.gen(function* () {
    const probe = yield* makeProbe
    const ledger = yield* UsageLedger.make()
    const budget = yield* Budget.make(options.config.budget, UsageLedger.totals([]))
    const layer = Layer.merge(
      ScriptedModel.layerRouter({
        default: [],
        roles: {
          supervisor: options.supervisor,
          researcher: researcherScript(probe, options.researcherSeconds ?? 1, options.researcherOutput ?? "notes")
        }
      }),
      MemorySessionStore.layer
    )
    const program = Effect.gen(function* () {
      const handle = yield* Checkpoint.make(newSession(options.config, options.rounds), ledger)
      const outcome = yield* handle.phase(
        "supervision",
        Supervisor.run(Task.make({ query: "What should we know?", config: options.config }), {
          session: handle,
          budget,
          runUnit: unit(probe)
        })
      )
      return { outcome, session: yield* handle.get, calls: yield* ScriptedModel.calls }
    }).pipe(
      Effect.provide(layer),
      Effect.provideService(UsageLedger.UsageLedger, ledger),
      Effect.provideService(Budget.Budget, budget),
      Effect.provideService(ResearchEvents.ResearchEvents, {
        publish: (event) =>
          options.events === undefined ? Effect.void : Ref.update(options.events, (all) => [...all, event]),
        subscribe: Effect.die("not used")
      })
    )
    const fiber = yield* Effect.fork(program)
    for (let i = 0; i < 10_000; i++) {
      if (Option.isSome(yield* Fiber.poll(fiber))) break
      yield* TestClock.adjust(`${options.clockStep ?? 1} seconds`)
    }
    const result = yield* Fiber.join(fiber)
    return { ...result, probe } satisfies Run
  })

const supervisorRequests = (run: Run) => run.calls.filter((c) => c.role === "supervisor").map((c) => c.request)

const lastUserText = (request: LanguageModel.GenerateRequest) =>
  [...request.messages].reverse().find((m) => m._tag === "user")?.content ?? ""

// =============================================================================
// Tests
// =============================================================================

describe("Supervisor", () => {
  it.effect("runs research units up to the concurrency cap and never above it", () =>
    Effect.gen(function* () {
      const run = yield* supervise({
        supervisor: [conduct("a", "b", "c", "d", "e", "f", "g"), complete],
        config: yield* config({ maxConcurrentResearchUnits: 3, maxDirectivesPerRound: 10 })
      })
      assert.strictEqual(yield* Ref.get(run.probe.maxInFlight), 3)
      assert.strictEqual((yield* Ref.get(run.probe.started)).length, 7)
      assert.strictEqual(run.session.rounds[0]?.results.length, 7)
      assert.strictEqual(run.outcome.reason, "research_complete")
    })
  )

  it.effect("runs higher priorities first and defers directives over the per-round limit", () =>
    Effect.gen(function* () {
      const run = yield* supervise({
        supervisor: [conduct(["low", 3], ["first", 1], ["middle", 2], ["second", 1]), complete],
        config: yield* config({ maxConcurrentResearchUnits: 1, maxDirectivesPerRound: 3 })
      })
      assert.deepStrictEqual(yield* Ref.get(run.probe.started), ["first", "second", "middle"])
      assert.deepStrictEqual(
        run.session.rounds[0]?.deferred.map((d) => d.topic),
        ["low"]
      )
      const second = supervisorRequests(run)[1]
      assert.include(second ? lastUserText(second) : "", "over the limit")
    })
  )

  it.effect("a failing research unit is recorded and the others' work goes on", () =>
    Effect.gen(function* () {
      const run = yield* supervise({
        supervisor: [conduct("ok one", "FAIL this", "ok two"), conduct("ok three"), complete],
        config: yield* config({})
      })
      const first = run.session.rounds[0]
      assert.deepStrictEqual(first?.results.map((r) => r.status).sort(), ["completed", "completed", "failed"])
      // Research went on to a second round, and the supervisor was told which unit failed.
      assert.strictEqual(run.session.rounds.length, 2)
      assert.strictEqual(run.outcome.reason, "research_complete")
      const second = supervisorRequests(run)[1]
      const toolTexts = second?.messages.filter((m) => m._tag === "tool").map((m) => m.content) ?? []
      assert.isTrue(toolTexts.some((t) => t.includes("FAIL this") && t.includes("failed")))
      assert.isFalse(toolTexts.some((t) => t.includes("search is down")))
    })
  )

  it.effect("the supervisor reads every topic's summary and an evidence inventory after a round", () =>
    Effect.gen(function* () {
      const run = yield* supervise({
        supervisor: [conduct("alpha", "beta"), complete],
        config: yield* config({})
      })
      const second = supervisorRequests(run)[1]
      const toolTexts = second?.messages.filter((m) => m._tag === "tool").map((m) => m.content) ?? []
      assert.isTrue(toolTexts.some((t) => t.includes("SUMMARY of alpha")))
      assert.isTrue(toolTexts.some((t) => t.includes("SUMMARY of beta")))
      const inventory = second ? lastUserText(second) : ""
      assert.include(inventory, "Evidence inventory")
      assert.include(inventory, "r1-d1.example.org")
      assert.include(inventory, "Total: 2 sources from 2 domains")
    })
  )

  it.effect("stops on researchComplete", () =>
    Effect.gen(function* () {
      const run = yield* supervise({ supervisor: [conduct("a"), complete], config: yield* config({}) })
      assert.strictEqual(run.outcome.reason, "research_complete")
      assert.strictEqual(run.session.rounds.length, 1)
    })
  )

  it.effect("stops when the supervisor calls no tool", () =>
    Effect.gen(function* () {
      const run = yield* supervise({ supervisor: [conduct("a"), "I am done."], config: yield* config({}) })
      assert.strictEqual(run.outcome.reason, "no_tool_call")
      assert.strictEqual(run.session.rounds.length, 1)
    })
  )

  it.effect("runs directives given together with researchComplete, then stops", () =>
    Effect.gen(function* () {
      const both = ScriptedModel.toolCalls(
        { name: "conductResearch", arguments: directive("last one") },
        { name: "researchComplete", arguments: {} }
      )
      const run = yield* supervise({ supervisor: [both], config: yield* config({}) })
      assert.strictEqual(run.outcome.reason, "research_complete")
      assert.deepStrictEqual(yield* Ref.get(run.probe.started), ["last one"])
      assert.strictEqual(supervisorRequests(run).length, 1)
    })
  )

  it.effect("a first answer in prose gets one reminder of the tools before research starts", () =>
    Effect.gen(function* () {
      const run = yield* supervise({
        supervisor: ["Here is what I know about it...", conduct("after reminder"), complete],
        config: yield* config({})
      })
      assert.strictEqual(run.outcome.reason, "research_complete")
      assert.deepStrictEqual(yield* Ref.get(run.probe.started), ["after reminder"])
      const second = supervisorRequests(run)[1]
      assert.include(second ? lastUserText(second) : "", "conductResearch")
    })
  )

  it.effect("stops at the round limit", () =>
    Effect.gen(function* () {
      const run = yield* supervise({
        supervisor: [conduct("again")],
        config: yield* config({ maxSupervisionRounds: 3 })
      })
      assert.strictEqual(run.outcome.reason, "max_rounds")
      assert.strictEqual(run.session.rounds.length, 3)
      assert.strictEqual(supervisorRequests(run).length, 3)
    })
  )

  it.effect("stops at the wall-clock limit and interrupts units that overrun it", () =>
    Effect.gen(function* () {
      // Each researcher call takes 10 minutes; research may take 15.
      const run = yield* supervise({
        supervisor: [conduct("slow")],
        config: yield* config({ maxResearchDuration: 15 * 60_000 }),
        researcherSeconds: 600,
        clockStep: 30
      })
      assert.strictEqual(run.outcome.reason, "time_limit")
      assert.strictEqual(run.session.rounds.length, 2)
      assert.strictEqual(run.session.rounds[0]?.results.length, 1)
      // The second round's unit would have ended at 20 minutes: it was stopped after the grace period.
      assert.strictEqual(run.session.rounds[1]?.results.length, 0)
      assert.isTrue(run.session.rounds[1]?.completed)
    })
  )

  it.effect("stops when the budget runs low", () =>
    Effect.gen(function* () {
      // The researcher of the first round writes as much as its call may (4,000 tokens): with the supervisor's first
      // call, the second cannot be covered by what research may spend of 12,000.
      const run = yield* supervise({
        supervisor: [conduct("a"), conduct("b"), complete],
        config: yield* config({ budget: { maxTokens: 12_000, synthesisReserve: 0.5 } }),
        researcherOutput: "word ".repeat(10_000)
      })
      assert.strictEqual(run.outcome.reason, "budget")
      assert.strictEqual(run.session.rounds.length, 1)
    })
  )

  it.effect("stops when the supervisor keeps thinking without delegating", () =>
    Effect.gen(function* () {
      const thinking = ScriptedModel.toolCalls({ name: "think", arguments: { reflection: "hmm" } })
      const run = yield* supervise({ supervisor: [thinking], config: yield* config({}) })
      assert.strictEqual(run.outcome.reason, "no_directives")
      assert.strictEqual(supervisorRequests(run).length, Supervisor.maxTurnsWithoutDelegation)
    })
  )

  it.effect("a malformed directive becomes a tool error the supervisor sees", () =>
    Effect.gen(function* () {
      const bad = ScriptedModel.toolCalls({ name: "conductResearch", arguments: { topic: "no priority" } })
      const run = yield* supervise({ supervisor: [bad, conduct("fixed"), complete], config: yield* config({}) })
      const second = supervisorRequests(run)[1]
      const errors = second?.messages.filter((m) => m._tag === "tool" && m.isError).map((m) => m.content) ?? []
      assert.isTrue(errors.some((t) => t.includes("invalid")))
      assert.deepStrictEqual(yield* Ref.get(run.probe.started), ["fixed"])
    })
  )

  it.effect("a rejected directive is reported as an event naming the tool, the unit and the decode error", () =>
    Effect.gen(function* () {
      const events = yield* Ref.make<ReadonlyArray<ResearchEvents.EventInput>>([])
      const bad = ScriptedModel.toolCalls({ name: "conductResearch", arguments: { value: directive("wrapped") } })
      yield* supervise({ supervisor: [bad, conduct("fixed"), complete], config: yield* config({}), events })
      const rejected = (yield* Ref.get(events)).filter((e) => e._tag === "ToolCallRejected")
      assert.strictEqual(rejected.length, 1)
      const [event] = rejected
      assert.strictEqual(event?._tag === "ToolCallRejected" ? event.unit : undefined, "supervisor")
      assert.strictEqual(event?._tag === "ToolCallRejected" ? event.tool : undefined, "conductResearch")
      assert.include(event?._tag === "ToolCallRejected" ? event.error : "", "topic")
    })
  )

  it.effect(
    "every directive rejected in the first two turns fails supervision instead of completing with nothing",
    () =>
      Effect.gen(function* () {
        const bad = ScriptedModel.toolCalls(
          { name: "conductResearch", arguments: { value: directive("a") } },
          { name: "conductResearch", arguments: { value: directive("b") } },
          { name: "researchComplete", arguments: {} }
        )
        const run = yield* supervise({ supervisor: [bad, bad, complete], config: yield* config({}) })
        assert.strictEqual(run.outcome.reason, "supervisor_failed")
        assert.strictEqual(run.outcome.error?._tag, "ModelMalformedOutput")
        assert.include(run.outcome.error?.message ?? "", "conductResearch")
        assert.strictEqual(supervisorRequests(run).length, Supervisor.maxRejectedTurns)
        assert.deepStrictEqual(yield* Ref.get(run.probe.started), [])
        // The second turn saw every call of the first answered, researchComplete included.
        const second = supervisorRequests(run)[1]
        assert.strictEqual(second?.messages.filter((m) => m._tag === "tool").length, 3)
      })
  )

  it.effect("a failing supervisor model ends supervision with its error", () =>
    Effect.gen(function* () {
      const run = yield* supervise({
        supervisor: [new ProviderUnavailable({ provider: "scripted", status: 503 })],
        config: yield* config({})
      })
      assert.strictEqual(run.outcome.reason, "supervisor_failed")
      assert.strictEqual(run.outcome.error?._tag, "ProviderUnavailable")
    })
  )

  it.effect("a supervisor model without tool calling delegates through the JSON action protocol", () =>
    Effect.gen(function* () {
      const actions = (...list: ReadonlyArray<unknown>) => JSON.stringify({ actions: list })
      const run = yield* supervise({
        supervisor: {
          capabilities: { toolCalling: false },
          script: [
            actions(
              { tool: "think", arguments: { reflection: "One researcher is enough." } },
              { tool: "conductResearch", arguments: directive("json topic") }
            ),
            "I think {this is not json",
            actions({ tool: "researchComplete" })
          ]
        },
        config: yield* config({})
      })
      assert.strictEqual(run.outcome.reason, "research_complete")
      assert.deepStrictEqual(yield* Ref.get(run.probe.started), ["json topic"])
      const requests = supervisorRequests(run)
      assert.include(requests[0]?.system ?? "", '{"actions"')
      assert.include(H.requestText(requests[2] ?? { messages: [] }), "could not be read as actions")
    })
  )

  it.effect("an interrupted round re-runs only its unfinished directives", () =>
    Effect.gen(function* () {
      const issued = ["done", "pending one", "pending two"].map(
        (topic, i) => new IssuedDirective({ id: `r1-d${i + 1}`, round: 1, directive: new Directive(directive(topic)) })
      )
      const finished = new TopicResult({
        directiveId: "r1-d1",
        status: "completed",
        findings: "Findings [1].",
        supervisorSummary: "summary",
        sourceIds: [],
        stopReason: "complete",
        toolCalls: 1,
        turns: 1,
        compressed: true
      })
      const run = yield* supervise({
        supervisor: [complete],
        config: yield* config({}),
        rounds: [new SupervisionRound({ round: 1, directives: issued, results: [finished], completed: false })]
      })
      assert.deepStrictEqual(yield* Ref.get(run.probe.started), ["pending one", "pending two"])
      assert.strictEqual(run.session.rounds[0]?.results.length, 3)
      assert.isTrue(run.session.rounds[0]?.completed)
    })
  )
})

describe("Supervisor steps", () => {
  const call = (name: string, args: unknown, id = name) => new LanguageModel.ToolCall({ id, name, arguments: args })

  it("read answers every call but the directives that run, and reports what it rejects", () => {
    const reading = Supervisor.read([
      call("think", { reflection: "plan" }),
      call("conductResearch", directive("a"), "d1"),
      call("conductResearch", { topic: "missing fields" }, "d2"),
      call("researchComplete", {}),
      call("browse", {})
    ])
    assert.deepStrictEqual(
      reading.directives.map((d) => d.topic),
      ["a"]
    )
    assert.strictEqual(reading.rejectedDirectives.length, 1)
    assert.deepStrictEqual(
      reading.rejected.map((r) => r.tool),
      ["conductResearch", "browse"]
    )
    assert.deepStrictEqual(
      reading.results.map((r) => r.toolCallId),
      ["think", "d2", "researchComplete", "browse"]
    )
    assert.isTrue(reading.completes)
    assert.deepStrictEqual(reading.reflections, ["plan"])
  })

  it("newRound issues the highest priorities up to the cap and defers the rest", () => {
    const directives = [
      new Directive(directive("low", 3)),
      new Directive(directive("high", 1)),
      new Directive(directive("mid", 2))
    ]
    const round = Supervisor.newRound(4, directives, ["first thought", "second"], 2)
    assert.deepStrictEqual(
      round.directives.map((d) => [d.id, d.directive.topic]),
      [
        ["r4-d1", "high"],
        ["r4-d2", "mid"]
      ]
    )
    assert.deepStrictEqual(
      round.deferred.map((d) => d.topic),
      ["low"]
    )
    assert.strictEqual(round.reflection, "first thought\n\nsecond")
  })
})
