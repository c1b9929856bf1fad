import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Queue, Ref } from "effect"
import { ResearchInvalidInput, ProviderInvalidRequest, ProviderUnavailable } from "../src/Errors.js"
import * as Clarify from "../src/phases/Clarify.js"
import * as ResearchEvents from "../src/ResearchEvents.js"
import { ScriptedModel } from "../src/testing/index.js"
import { UserInput } from "../src/UserInput.js"

const needed = ScriptedModel.json({
  needClarification: true,
  question: "Which country's tax rules do you mean?",
  verification: "Research income tax rules for freelancers, country not stated."
})

const notNeeded = ScriptedModel.json({
  needClarification: false,
  question: "",
  verification: "Research the history of the printing press in Europe."
})

const router = (reply: ScriptedModel.Script) => ScriptedModel.layerRouter({ default: reply })

/** A person who answers (or declines) and remembers what they were asked. */
const person = (answer: string | undefined) =>
  Effect.gen(function* () {
    const asked = yield* Ref.make<ReadonlyArray<string>>([])
    const layer = Layer.succeed(UserInput, {
      ask: (question) =>
        Effect.zipRight(
          Ref.update(asked, (qs) => [...qs, question]),
          answer === undefined ? Effect.fail(new ResearchInvalidInput({ reason: "declined" })) : Effect.succeed(answer)
        )
    })
    return { asked, layer }
  })

describe("Clarify", () => {
  it.effect("goes on without asking when no clarification is needed", () =>
    Effect.gen(function* () {
      const { asked, layer } = yield* person("unused")
      const outcome = yield* Clarify.run("History of the printing press", "ask").pipe(
        Effect.provide(Layer.merge(router([notNeeded]), layer))
      )
      assert.isFalse(outcome.awaiting)
      assert.isFalse(outcome.record?.decision.needClarification)
      assert.deepStrictEqual(yield* Ref.get(asked), [])
    })
  )

  it.effect("asks the UserInput in mode ask and keeps the answer", () =>
    Effect.gen(function* () {
      const { asked, layer } = yield* person("Germany")
      const outcome = yield* Clarify.run("How are freelancers taxed?", "ask").pipe(
        Effect.provide(Layer.merge(router([needed]), layer))
      )
      assert.deepStrictEqual(yield* Ref.get(asked), ["Which country's tax rules do you mean?"])
      assert.strictEqual(outcome.record?.answer, "Germany")
      assert.isFalse(outcome.awaiting)
      assert.include(Clarify.constraints(outcome.record), "Germany")
    })
  )

  it.effect("keeps the verification as constraints when the person declines to answer", () =>
    Effect.gen(function* () {
      const { layer } = yield* person(undefined)
      const outcome = yield* Clarify.run("How are freelancers taxed?", "ask").pipe(
        Effect.provide(Layer.merge(router([needed]), layer))
      )
      assert.isUndefined(outcome.record?.answer)
      assert.strictEqual(
        Clarify.constraints(outcome.record),
        "Research income tax rules for freelancers, country not stated."
      )
    })
  )

  it.effect("never asks in mode proceed and keeps the verification as constraints", () =>
    Effect.gen(function* () {
      const { asked, layer } = yield* person("Germany")
      const outcome = yield* Clarify.run("How are freelancers taxed?", "proceed").pipe(
        Effect.provide(Layer.merge(router([needed]), layer))
      )
      assert.deepStrictEqual(yield* Ref.get(asked), [])
      assert.isFalse(outcome.awaiting)
      assert.strictEqual(
        Clarify.constraints(outcome.record),
        "Research income tax rules for freelancers, country not stated."
      )
    })
  )

  it.effect("mode ask without a UserInput in context does not block", () =>
    Effect.gen(function* () {
      const outcome = yield* Clarify.run("How are freelancers taxed?", "ask").pipe(Effect.provide(router([needed])))
      assert.isFalse(outcome.awaiting)
      assert.isUndefined(outcome.record?.answer)
    })
  )

  it.scoped("mode await stops with the question and announces it", () =>
    Effect.gen(function* () {
      const events = yield* ResearchEvents.make
      const queue = yield* events.subscribe
      const outcome = yield* Clarify.run("How are freelancers taxed?", "await").pipe(
        Effect.provide(router([needed])),
        Effect.provideService(ResearchEvents.ResearchEvents, events)
      )
      assert.isTrue(outcome.awaiting)
      assert.strictEqual(outcome.record?.decision.question, "Which country's tax rules do you mean?")
      const tags = [...(yield* Queue.takeAll(queue))].map((e) => e._tag)
      assert.deepStrictEqual(tags, ["ClarificationAsked", "SessionAwaitingClarification"])
    })
  )

  it.effect("a clarification request the model rejects never stops the run", () =>
    Effect.gen(function* () {
      const outcome = yield* Clarify.run("How are freelancers taxed?", "await").pipe(
        Effect.provide(
          router([new ProviderInvalidRequest({ provider: "scripted", detail: "the schema is not supported" })])
        )
      )
      assert.isFalse(outcome.awaiting)
      assert.isUndefined(outcome.record)
    })
  )

  it.effect("a clarification model that cannot be reached fails the phase with its error", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(
        Clarify.run("How are freelancers taxed?", "await").pipe(
          Effect.provide(router([new ProviderUnavailable({ provider: "scripted", status: 503 })]))
        )
      )
      assert.strictEqual(error._tag, "ProviderUnavailable")
    })
  )

  it.effect("defaults to ask with a UserInput in context and to proceed without", () =>
    Effect.gen(function* () {
      const { layer } = yield* person("x")
      assert.strictEqual(yield* Clarify.defaultMode.pipe(Effect.provide(layer)), "ask")
      assert.strictEqual(yield* Clarify.defaultMode, "proceed")
    })
  )
})
