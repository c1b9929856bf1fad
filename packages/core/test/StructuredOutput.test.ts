import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Schema } from "effect"
import * as Errors from "../src/Errors.js"
import * as StructuredOutput from "../src/StructuredOutput.js"
import * as LanguageModel from "../src/LanguageModel.js"
import { ScriptedModel } from "../src/testing/index.js"

const Answer = Schema.Struct({ title: Schema.String, year: Schema.Int })

const withModel = (script: ScriptedModel.Script, capabilities?: Partial<LanguageModel.Capabilities>) =>
  Effect.gen(function* () {
    const log = yield* ScriptedModel.makeLog
    const model = yield* ScriptedModel.make({ script, capabilities }, log)
    return { model, log }
  })

const ask = { system: "You extract facts.", messages: [LanguageModel.user("When was it published?")] }

describe("StructuredOutput", () => {
  it("extractJson takes a fence, the outermost braces, and skips think blocks", () => {
    assert.strictEqual(StructuredOutput.extractJson('Sure!\n```json\n{"a": 1}\n```\nDone.'), '{"a": 1}')
    assert.strictEqual(StructuredOutput.extractJson('The answer is {"a": {"b": "}"}} as asked'), '{"a": {"b": "}"}}')
    assert.strictEqual(StructuredOutput.extractJson('<think>maybe {"a": 0}</think>\n{"a": 2}'), '{"a": 2}')
    assert.strictEqual(StructuredOutput.stripThinking("<think>unfinished reasoning {"), "")
  })

  it.effect("decodes an answer given in prose around the JSON", () =>
    Effect.gen(function* () {
      const { model } = yield* withModel(['Here you go: {"title": "On Growth", "year": 1917} hope it helps'])
      const result = yield* StructuredOutput.generateObject(model, Answer, ask)
      assert.deepStrictEqual(result.value, { title: "On Growth", year: 1917 })
      assert.strictEqual(result.attempts, 1)
    })
  )

  it.effect("decodes JSON that follows bracketed prose, without asking again", () =>
    Effect.gen(function* () {
      const { model } = yield* withModel([
        'From the page [1] (and its appendix {see p. 4}): {"title": "On Growth", "year": 1917}'
      ])
      const result = yield* StructuredOutput.generateObject(model, Answer, ask)
      assert.deepStrictEqual(result.value, { title: "On Growth", year: 1917 })
      assert.strictEqual(result.attempts, 1)
    })
  )

  it.effect("decodes an answer in a fence after a think block", () =>
    Effect.gen(function* () {
      const { model } = yield* withModel([
        '<think>The user wants {"title": "wrong"}</think>\n```json\n{"title": "On Growth", "year": 1917}\n```'
      ])
      const result = yield* StructuredOutput.generateObject(model, Answer, ask)
      assert.deepStrictEqual(result.value, { title: "On Growth", year: 1917 })
    })
  )

  it.effect("retries with the decode error shown to the model, then succeeds", () =>
    Effect.gen(function* () {
      const { log, model } = yield* withModel([
        '{"title": "On Growth", "year": "nineteen seventeen"}',
        '{"title": "On Growth", "year": 1917}'
      ])
      const result = yield* StructuredOutput.generateObject(model, Answer, ask)
      assert.strictEqual(result.attempts, 2)
      const calls = yield* log.calls
      assert.strictEqual(calls.length, 2)
      const retry = calls[1]!.request.messages
      const last = retry[retry.length - 1]!
      assert.strictEqual(last._tag, "user")
      assert.include(last.content, "year")
      assert.include(last.content, "Expected")
    })
  )

  it.effect("fails with ModelMalformedOutput after 3 retries of wrong fields", () =>
    Effect.gen(function* () {
      const { log, model } = yield* withModel(['{"name": "On Growth"}'])
      const result = yield* Effect.either(StructuredOutput.generateObject(model, Answer, ask))
      assert.isTrue(Either.isLeft(result))
      if (Either.isLeft(result)) {
        assert.instanceOf(result.left, Errors.ModelMalformedOutput)
        assert.strictEqual((result.left as Errors.ModelMalformedOutput).raw, '{"name": "On Growth"}')
      }
      assert.strictEqual((yield* log.calls).length, 4)
    })
  )

  it.effect("uses native structured output when the model has it, and prompted JSON otherwise", () =>
    Effect.gen(function* () {
      const native = yield* withModel(['{"title": "A", "year": 1}'], { structuredOutput: true })
      yield* StructuredOutput.generateObject(native.model, Answer, ask, { name: "publication" })
      const nativeRequest = (yield* native.log.calls)[0]!.request
      assert.strictEqual(nativeRequest.responseFormat?.name, "publication")
      assert.strictEqual(nativeRequest.system, "You extract facts.")

      const prompted = yield* withModel(['{"title": "A", "year": 1}'])
      yield* StructuredOutput.generateObject(prompted.model, Answer, ask)
      const promptedRequest = (yield* prompted.log.calls)[0]!.request
      assert.isUndefined(promptedRequest.responseFormat)
      assert.include(promptedRequest.system ?? "", "JSON schema")
      assert.include(promptedRequest.system ?? "", '"year"')
    })
  )

  it.effect("passes provider errors through untouched", () =>
    Effect.gen(function* () {
      const { model } = yield* withModel([new Errors.ProviderQuotaExhausted({ provider: "scripted" })])
      const error = yield* Effect.flip(StructuredOutput.generateObject(model, Answer, ask))
      assert.strictEqual(error._tag, "ProviderQuotaExhausted")
    })
  )
})
