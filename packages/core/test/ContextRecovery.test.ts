import { assert, describe, it } from "@effect/vitest"
import { Chunk, Effect, Either, Queue, Ref } from "effect"
import * as ContextRecovery from "../src/ContextRecovery.js"
import * as Errors from "../src/Errors.js"
import * as LanguageModel from "../src/LanguageModel.js"
import * as ResearchEvents from "../src/ResearchEvents.js"
import * as Tokens from "../src/Tokens.js"
import type { Section } from "../src/Truncation.js"
import { ScriptedModel } from "../src/testing/index.js"

const overflow = (limit?: number, requested?: number) =>
  new Errors.ContextWindowExceeded({
    model: "tiny",
    ...(limit === undefined ? {} : { limit }),
    ...(requested === undefined ? {} : { requested })
  })

/** An attempt that overflows until its target is at most `fitsAt`, recording every target it was given. */
const attemptRecorder = (fitsAt: number, error: () => Errors.ContextWindowExceeded = () => overflow()) =>
  Effect.map(Ref.make<ReadonlyArray<number | undefined>>([]), (targets) => ({
    targets: Ref.get(targets),
    attempt: (target: number | undefined) =>
      Effect.zipRight(
        Ref.update(targets, (all) => [...all, target]),
        target !== undefined && target <= fitsAt ? Effect.succeed(`fit at ${target}`) : Effect.fail(error())
      )
  }))

describe("ContextRecovery.recover", () => {
  it.effect("makes one attempt with the full input when it fits", () =>
    Effect.gen(function* () {
      const recorder = yield* Ref.make<ReadonlyArray<number | undefined>>([])
      const result = yield* ContextRecovery.recover({
        model: "tiny",
        inputTokens: 1_000,
        attempt: (target) =>
          Effect.as(
            Ref.update(recorder, (all) => [...all, target]),
            "ok"
          )
      })
      assert.strictEqual(result, "ok")
      assert.deepStrictEqual(yield* Ref.get(recorder), [undefined])
    })
  )

  it.effect("retries 3 times, each input 0.9 of the one before, then lets the overflow stand", () =>
    Effect.gen(function* () {
      const { attempt, targets } = yield* attemptRecorder(0)
      const result = yield* Effect.either(ContextRecovery.recover({ model: "tiny", inputTokens: 1_000, attempt }))
      assert.isTrue(Either.isLeft(result) && result.left instanceof Errors.ContextWindowExceeded)
      assert.deepStrictEqual(yield* targets, [undefined, 900, 810, 729])
    })
  )

  it.effect("succeeds with the first smaller input that fits", () =>
    Effect.gen(function* () {
      const { attempt, targets } = yield* attemptRecorder(850)
      const result = yield* ContextRecovery.recover({ model: "tiny", inputTokens: 1_000, attempt })
      assert.strictEqual(result, "fit at 810")
      assert.deepStrictEqual(yield* targets, [undefined, 900, 810])
    })
  )

  it.effect("starts from the error's limit when it is known and smaller than the input", () =>
    Effect.gen(function* () {
      const { attempt, targets } = yield* attemptRecorder(0, () => overflow(500))
      yield* Effect.either(ContextRecovery.recover({ model: "tiny", inputTokens: 1_000, attempt }))
      assert.deepStrictEqual(yield* targets, [undefined, 450, 405, 364])
    })
  )

  it.effect("scales the vendor's limit to the estimate when the vendor counted more tokens than estimated", () =>
    Effect.gen(function* () {
      // The vendor counts 1,000 where the estimate said 800: its 500 fit about 400 estimated tokens.
      const { attempt, targets } = yield* attemptRecorder(0, () => overflow(500, 1_000))
      yield* Effect.either(ContextRecovery.recover({ model: "tiny", inputTokens: 800, attempt }))
      const [first, second, third, fourth] = yield* targets
      assert.strictEqual(first, undefined)
      assert.strictEqual(second, 360)
      assert.isAtMost(third ?? Infinity, 0.9 * 360)
      assert.isAtMost(fourth ?? Infinity, 0.9 * (third ?? 0))
    })
  )

  it.effect("shrinks an input already known to be too large before the first attempt", () =>
    Effect.gen(function* () {
      const { attempt, targets } = yield* attemptRecorder(0)
      yield* Effect.either(ContextRecovery.recover({ model: "tiny", inputTokens: 1_000, limitTokens: 600, attempt }))
      assert.deepStrictEqual(yield* targets, [600, 540, 486, 437])
    })
  )

  it.effect("makes the first attempt in full when the input is within the known limit", () =>
    Effect.gen(function* () {
      const { attempt, targets } = yield* attemptRecorder(0)
      yield* Effect.either(ContextRecovery.recover({ model: "tiny", inputTokens: 500, limitTokens: 600, attempt }))
      assert.deepStrictEqual(yield* targets, [undefined, 450, 405, 364])
    })
  )

  it.effect("passes other errors through without another attempt", () =>
    Effect.gen(function* () {
      const attempts = yield* Ref.make(0)
      const result = yield* Effect.either(
        ContextRecovery.recover({
          model: "tiny",
          inputTokens: 1_000,
          attempt: () =>
            Effect.zipRight(
              Ref.update(attempts, (n) => n + 1),
              Effect.fail(new Errors.ProviderQuotaExhausted({ provider: "x" }))
            )
        })
      )
      assert.isTrue(Either.isLeft(result) && result.left._tag === "ProviderQuotaExhausted")
      assert.strictEqual(yield* Ref.get(attempts), 1)
    })
  )

  it.scoped("publishes ContextWindowRecovered when a smaller input succeeds", () =>
    Effect.gen(function* () {
      const events = yield* ResearchEvents.ResearchEvents
      const subscription = yield* events.subscribe
      const { attempt } = yield* attemptRecorder(850)
      yield* ContextRecovery.recover({ model: "tiny", inputTokens: 1_000, attempt })
      const published = Chunk.toReadonlyArray(yield* Queue.takeAll(subscription))
      assert.deepStrictEqual(
        published.map((e) => (e._tag === "ContextWindowRecovered" ? [e.model, e.attempt, e.tokens] : e._tag)),
        [["tiny", 2, 810]]
      )
    }).pipe(Effect.provide(ResearchEvents.layer))
  )
})

/** A scripted model with a context window: it overflows on any request estimated above `limit`. */
const modelWithWindow = (limit: number) =>
  Effect.gen(function* () {
    const log = yield* ScriptedModel.makeLog
    const model = yield* ScriptedModel.make(
      {
        model: "tiny",
        script: (request) =>
          Tokens.estimateRequestTokens(request) > limit
            ? new Errors.ContextWindowExceeded({
                model: "tiny",
                limit,
                requested: Tokens.estimateRequestTokens(request)
              })
            : "the answer"
      },
      log
    )
    return { model, log }
  })

const prose = (length: number): string =>
  "Evidence sentence number one. ".repeat(Math.ceil(length / 30)).slice(0, length)

describe("ContextRecovery.generateSectioned", () => {
  const sections: ReadonlyArray<Section> = [
    { name: "instructions", kind: "instruction", content: "Write the report. Cite sources as [n]." },
    { name: "question", kind: "question", content: "What changed in solar panel efficiency since 2010?" },
    { name: "brief", kind: "brief", content: "Focus on commercial silicon modules." },
    { name: "source 1", kind: "source", content: prose(20_000), quality: 0.9 },
    { name: "source 2", kind: "source", content: prose(20_000), quality: 0.3 },
    { name: "findings", kind: "findings", content: prose(8_000) }
  ]
  const build = (shown: ReadonlyArray<Section>): LanguageModel.GenerateRequest => ({
    system: shown
      .filter((s) => s.kind === "instruction")
      .map((s) => s.content)
      .join("\n"),
    messages: [
      LanguageModel.user(
        shown
          .filter((s) => s.kind !== "instruction")
          .map((s) => `## ${s.name}\n${s.content}`)
          .join("\n\n")
      )
    ]
  })

  it.effect("shrinks the sections until the model accepts them, keeping instructions, question and brief", () =>
    Effect.gen(function* () {
      const { log, model } = yield* modelWithWindow(8_000)
      const completion = yield* ContextRecovery.generateSectioned(model, sections, build)
      assert.strictEqual(completion.text, "the answer")
      const calls = yield* log.calls
      assert.isAbove(calls.length, 1)
      assert.isAtMost(calls.length, 4)
      assert.deepStrictEqual(calls[0]?.request, build(sections))
      for (const call of calls) {
        const prompt = call.request.messages.map((m) => m.content).join("\n")
        assert.strictEqual(call.request.system, sections[0]?.content)
        assert.include(prompt, sections[1]?.content)
        assert.include(prompt, sections[2]?.content)
      }
      const sizes = calls.map((call) => Tokens.estimateRequestTokens(call.request))
      for (let i = 1; i < sizes.length; i++) assert.isAtMost(sizes[i] ?? Infinity, 0.9 * (sizes[i - 1] ?? 0))
    })
  )

  it.effect("fails with the overflow after 3 smaller attempts when nothing fits", () =>
    Effect.gen(function* () {
      const { log, model } = yield* modelWithWindow(10)
      const result = yield* Effect.either(ContextRecovery.generateSectioned(model, sections, build))
      assert.isTrue(Either.isLeft(result) && result.left._tag === "ContextWindowExceeded")
      assert.strictEqual((yield* log.calls).length, 4)
    })
  )
  it.effect("fits a prompt larger than the model's window before the first call", () =>
    Effect.gen(function* () {
      const log = yield* ScriptedModel.makeLog
      const model = yield* ScriptedModel.make({ model: "tiny", contextWindow: 6_000, script: ["the answer"] }, log)
      const completion = yield* ContextRecovery.generateSectioned(model, sections, (shown) => ({
        ...build(shown),
        maxOutputTokens: 1_000
      }))
      assert.strictEqual(completion.text, "the answer")
      const calls = yield* log.calls
      assert.strictEqual(calls.length, 1)
      assert.isAtMost(Tokens.estimateRequestTokens(calls[0]!.request), 5_000)
    })
  )
})

describe("ContextRecovery.generateConversation", () => {
  const calls = [1, 2, 3, 4].map(
    (n) =>
      new LanguageModel.ToolCall({ id: `c${n}`, name: "extractContent", arguments: { urls: [`https://e.org/${n}`] } })
  )
  const request: LanguageModel.GenerateRequest = {
    system: "You compress research notes.",
    messages: [
      LanguageModel.user("Topic: battery recycling in the EU."),
      ...calls.flatMap((call) => [LanguageModel.assistant("", [call]), LanguageModel.toolResult(call, prose(6_000))]),
      LanguageModel.user("Rewrite all the findings above with inline citations.")
    ]
  }

  it.effect("drops the oldest turns until the model accepts, never the task or the final instruction", () =>
    Effect.gen(function* () {
      const { log, model } = yield* modelWithWindow(4_000)
      const completion = yield* ContextRecovery.generateConversation(model, request)
      assert.strictEqual(completion.text, "the answer")
      const recorded = yield* log.calls
      assert.isAbove(recorded.length, 1)
      for (const call of recorded) {
        const messages = call.request.messages
        assert.strictEqual(messages[0], request.messages[0])
        assert.strictEqual(messages[messages.length - 1], request.messages[request.messages.length - 1])
        assert.strictEqual(call.request.system, request.system)
      }
      const last = recorded[recorded.length - 1]!.request.messages
      const kept = last.flatMap((m) => (m._tag === "assistant" ? m.toolCalls.map((c) => c.id) : []))
      assert.include(kept, "c4")
      assert.notInclude(kept, "c1")
    })
  )
})
