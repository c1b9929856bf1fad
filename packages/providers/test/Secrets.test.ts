/**
 * The scrubber every door uses: a secret whole or cut short to a prefix that identifies it, in the forms a model or a
 * client may carry it (JSON-escaped, URL-encoded), becomes `[redacted]`; text that only looks alike is left.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Redacted from "effect/Redacted"
import * as Secrets from "../src/Secrets.js"
import { prefixLengthOf } from "../src/store/secretScrubber.js"

const tavily = "tvly-FAKETAVILY-0123456789abcdefXYZ"
const token = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822c"
const anthropic = "sk-ant-api03-ABCDEFGHIJKLMNOPQRSTUVWX"
const database = "postgres://deep:s3cr%40tPassw0rd@localhost:5432/research"
const scrub = Secrets.scrubber([tavily, token, anthropic, database].map((secret) => Redacted.make(secret)))

describe("Secrets.scrubber", () => {
  it("replaces a secret cut short to 12 characters, and leaves 11", () => {
    assert.strictEqual(scrub(`a ${token.slice(0, 12)} b`), "a [redacted] b")
    assert.strictEqual(scrub(`a ${token.slice(0, 11)} b`), `a ${token.slice(0, 11)} b`)
  })

  it("replaces the prefix a model echoed of a Tavily key (tvly- and 12 characters)", () => {
    assert.strictEqual(scrub("the key tvly-FAKETAVILY-0. was given"), "the key [redacted]. was given")
  })

  it("asks 8 characters past a key's public head: sk-ant-api03- alone is no secret", () => {
    assert.strictEqual(prefixLengthOf(anthropic), "sk-ant-api03-".length + 8)
    assert.strictEqual(scrub("keys look like sk-ant-api03-ABCDEFG"), "keys look like sk-ant-api03-ABCDEFG")
    assert.strictEqual(scrub("keys look like sk-ant-api03-ABCDEFGH"), "keys look like [redacted]")
  })

  it("replaces a secret URL-encoded, in upper or lower case escapes, and in a query string", () => {
    const secret = "pass word/with:some=chars&more"
    const own = Secrets.scrubber([Redacted.make(secret)])
    assert.notInclude(own(`q=${encodeURIComponent(secret)}`), "with")
    assert.notInclude(own(`q=${encodeURIComponent(secret).toLowerCase()}`), "with")
    assert.notInclude(own(`q=${encodeURIComponent(secret).replace(/%20/g, "+")}`), "with")
    assert.strictEqual(
      scrub(`https://x.test/?q=${encodeURIComponent(`why ${token}`)}`),
      "https://x.test/?q=why%20[redacted]"
    )
  })

  it("replaces a secret JSON-escaped, once and twice, and keeps the JSON valid", () => {
    const secret = 'quo"te\\back-slash-secret'
    const own = Secrets.scrubber([Redacted.make(secret)])
    const once = JSON.stringify({ q: secret })
    const twice = JSON.stringify({ q: once })
    assert.deepStrictEqual(JSON.parse(own(once)), { q: "[redacted]" })
    assert.deepStrictEqual(JSON.parse(own(twice)), { q: JSON.stringify({ q: "[redacted]" }) })
    // Cut short inside the JSON: the prefix goes, the JSON stays JSON.
    const cut = JSON.stringify({ q: secret.slice(0, 16) })
    assert.deepStrictEqual(JSON.parse(own(cut)), { q: "[redacted]" })
  })

  it("takes a database URL's password as the secret, not the URL's common beginning", () => {
    assert.strictEqual(
      scrub("postgres://deep@localhost:5432/research does not answer"),
      "postgres://deep@localhost:5432/research does not answer"
    )
    assert.strictEqual(scrub("password s3cr@tPassw0rd"), "password [redacted]")
    assert.strictEqual(scrub(`url ${database}`), "url [redacted]")
  })

  it("scrubValue walks a message's strings and keys, and returns the same value when nothing is secret", () => {
    const walk = Secrets.scrubValue(scrub)
    const clean = { a: ["x", { b: 1 }], c: null }
    assert.strictEqual(walk(clean), clean)
    const message: unknown = { [token]: [`id ${token}`, 2] }
    assert.deepStrictEqual(walk(message), { "[redacted]": ["id [redacted]", 2] })
  })
})
