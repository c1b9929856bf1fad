import { LanguageModel, Tokens } from "@deep-research/core"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import { OpenAiLanguageModel, OpenAiTokenizer } from "../../src/index.js"

const sample = (name: string): string =>
  fs.readFileSync(new URL(`../fixtures/token-samples/${name}`, import.meta.url), "utf8")

describe("OpenAiTokenizer", () => {
  it.effect("core's estimate holds English, Chinese and code within 15% of o200k", () =>
    Effect.gen(function* () {
      for (const name of ["english.txt", "chinese.txt", "code.txt"]) {
        const text = sample(name)
        const counted = yield* OpenAiTokenizer.countText(text)
        const estimated = Tokens.estimateTokens(text)
        assert.isAtMost(Math.abs(estimated - counted) / counted, 0.15, `${name}: ${estimated} against ${counted}`)
      }
    })
  )

  it.effect("counts a Chinese text near one token a character, where 4 characters a token saw a quarter of it", () =>
    Effect.gen(function* () {
      const text = sample("chinese.txt")
      const counted = yield* OpenAiTokenizer.countText(text)
      assert.isAbove(counted, text.length * 0.6)
      assert.isAbove(Tokens.estimateTokens(text), text.length * 0.6)
    })
  )

  it.effect("counts a special token written in a text as text, never failing on it", () =>
    Effect.gen(function* () {
      assert.isAbove(yield* OpenAiTokenizer.countText("a page that says <|endoftext|> in its body"), 5)
    })
  )

  it.effect("an OpenAI model of the o200k families counts its requests; another served model is estimated", () =>
    Effect.gen(function* () {
      const request: LanguageModel.GenerateRequest = {
        system: "Answer briefly.",
        messages: [LanguageModel.user(sample("chinese.txt"))]
      }
      const gpt = yield* OpenAiLanguageModel.make({ model: "gpt-4.1-mini", apiKey: "sk-test" })
      const local = yield* OpenAiLanguageModel.make({ model: "qwen3:8b", apiKey: "sk-test" })
      assert.isDefined(gpt.countTokens)
      assert.isUndefined(local.countTokens)
      const text =
        (yield* OpenAiTokenizer.countText("Answer briefly.")) +
        (yield* OpenAiTokenizer.countText(sample("chinese.txt")))
      assert.strictEqual(yield* Tokens.countRequestTokens(gpt, request), text + 2 * Tokens.messageOverheadTokens)
      assert.strictEqual(yield* Tokens.countRequestTokens(local, request), Tokens.estimateRequestTokens(request))
      for (const name of ["gpt-4o", "gpt-5-mini", "o3", "o4-mini", "azure/gpt-4.1", "gpt-oss-20b"]) {
        assert.isTrue(OpenAiTokenizer.usesO200k(name), name)
      }
      for (const name of ["gpt-4", "gpt-3.5-turbo", "llama3", "simulated-gpt", "pro1"]) {
        assert.isFalse(OpenAiTokenizer.usesO200k(name), name)
      }
    })
  )
})
