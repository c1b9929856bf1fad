/**
 * A local model behind an OpenAI-compatible server that has no tool calling (or no JSON schemas) still researches:
 * the server's refusal is recognised, the model goes on through the JSON action protocol (and prompted JSON) for the
 * rest of the process, and the switch is announced once.
 */
import { Pipeline, ResearchEvents, Resilience, Summarizer } from "@deep-research/core"
import { MemorySessionStore } from "@deep-research/core/testing"
import { ModelSpec, Tavily } from "@deep-research/providers"
import { Emulator } from "@deep-research/emulator"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Predicate, Redacted, Ref } from "effect"

const question = "What do heat pumps cost to run compared with gas boilers?"

/** Ollama by name (tools on, JSON schemas prompted), or any OpenAI-compatible server at a base URL (both on). */
const specsOf = (emulator: Emulator.Handle, server: "ollama" | "compatible"): ModelSpec.RouterSpecs =>
  server === "ollama"
    ? { default: "ollama:qwen3", providers: { ollama: { baseUrl: emulator.baseUrl("openai") } } }
    : { default: "openai:local-model", providers: { openai: { baseUrl: emulator.baseUrl("openai") } } }

const run = (emulator: Emulator.Handle, server: "ollama" | "compatible" = "ollama") =>
  Effect.gen(function* () {
    const events = yield* Ref.make<ReadonlyArray<ResearchEvents.EventInput>>([])
    const layer = Layer.mergeAll(
      Summarizer.layer,
      Tavily.layer({ apiKey: Redacted.make("tvly-local"), baseUrl: emulator.baseUrl("tavily") }),
      MemorySessionStore.layer
    ).pipe(Layer.provideMerge(ModelSpec.layer(specsOf(emulator, server))), Layer.provide(Resilience.layerDefault))
    const session = yield* Pipeline.research(question, { config: { maxSupervisionRounds: 2 } }).pipe(
      Effect.provide(layer),
      Effect.provideService(ResearchEvents.ResearchEvents, {
        publish: (event) => Ref.update(events, (all) => [...all, event]),
        subscribe: Effect.die("the test reads the events it collects")
      })
    )
    return { session, events: yield* Ref.get(events) }
  })

const chatBodies = (emulator: Emulator.Handle) =>
  Effect.map(emulator.requests("openai.chat"), (requests) =>
    requests.map((request) => (Predicate.isRecord(request.body) ? request.body : {}))
  )

describe("a local model without tool calling", () => {
  for (const server of ["ollama", "vllm", "llamacpp"] as const) {
    it.live(`researches to a cited report when the server refuses tools as ${server} does`, () =>
      Effect.gen(function* () {
        const emulator = yield* Emulator.start()
        yield* Emulator.simulate(emulator, { refuse: { tools: server } })
        const { session, events } = yield* run(emulator)
        assert.strictEqual(session.status, "completed")
        assert.isAbove(session.rounds[0]?.directives.length ?? 0, 0)
        assert.isAbove(session.report?.citations.length ?? 0, 0)
        const fallbacks = events.filter((e) => e._tag === "ModelFallback")
        assert.deepStrictEqual(
          fallbacks.map((e) => (e._tag === "ModelFallback" ? e.capability : "")),
          ["toolCalling"]
        )
        // Tools were refused once; every later request went out without them, as actions in the prompt.
        const bodies = yield* chatBodies(emulator)
        const withTools = bodies.filter((body) => Array.isArray(body["tools"]))
        assert.strictEqual(withTools.length, 1)
        assert.isTrue(bodies.some((body) => JSON.stringify(body["messages"]).includes("You act through tools.")))
      }).pipe(Effect.scoped)
    )
  }

  it.live("falls back to prompted JSON when the server refuses JSON schemas, and says so once", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* Emulator.simulate(emulator, { refuse: { tools: "vllm", jsonSchema: true } })
      const { session, events } = yield* run(emulator, "compatible")
      assert.strictEqual(session.status, "completed")
      assert.isDefined(session.brief)
      assert.isAbove(session.report?.citations.length ?? 0, 0)
      const capabilities = events.flatMap((e) => (e._tag === "ModelFallback" ? [e.capability] : []))
      assert.sameMembers(capabilities, ["toolCalling", "structuredOutput"])
      const bodies = yield* chatBodies(emulator)
      assert.strictEqual(bodies.filter((body) => body["response_format"] !== undefined).length, 1)
    }).pipe(Effect.scoped)
  )
})
