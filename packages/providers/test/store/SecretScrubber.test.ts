/** The secret scrubber every store writes through: known secrets and anything shaped like a vendor's key, removed. */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { makeScrubbed } from "../../src/store/secretScrubber.js"

describe("the secret scrubber", () => {
  it.effect("replaces known secrets, raw and JSON-escaped, and vendor-shaped keys; leaves ordinary words", () =>
    Effect.gen(function* () {
      const scrub = makeScrubbed("test", ['pa"ss-word-1234', "short"])
      const text = yield* scrub(
        "x",
        `a pa"ss-word-1234 b ${JSON.stringify('pa"ss-word-1234')} c sk-abcdefghijklmnopqrstu1vwxyz d sk-learn short`
      )
      assert.notInclude(text, "ss-word-1234")
      assert.notInclude(text, "sk-abcdefghijklmnopqrstu1vwxyz")
      assert.include(text, "sk-learn")
      // Too short to be a key: replacing it would mangle ordinary text.
      assert.include(text, "short")
      assert.strictEqual(text.split("[redacted]").length - 1, 3)
    })
  )

  it.effect("a text without secrets is returned as it is", () =>
    Effect.gen(function* () {
      const text = "nothing to see; tvly-short"
      assert.strictEqual(yield* makeScrubbed("test", ["a-long-secret"])("x", text), text)
    })
  )
})
