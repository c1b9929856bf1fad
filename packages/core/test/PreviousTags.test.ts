/**
 * Errors stored before the tags had their prefix (`Timeout` before `ProviderTimeout`): a session that kept one reads
 * back with the error it is now, and messages name an error's kind by the word they always used.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Schema } from "effect"
import * as Errors from "../src/Errors.js"
import * as ResearchConfig from "../src/ResearchConfig.js"
import * as Session from "../src/Session.js"

/** One error of each renamed class, with the tag it was stored under before. */
const renamed: ReadonlyArray<readonly [Errors.ResearchError, string]> = [
  [new Errors.ProviderTimeout({ provider: "tavily", after: Duration.seconds(30) }), "Timeout"],
  [new Errors.ProviderRateLimited({ provider: "openai", retryAfter: Duration.seconds(7) }), "RateLimited"],
  [new Errors.ProviderQuotaExhausted({ provider: "openai", until: 1_000 }), "QuotaExhausted"],
  [new Errors.ProviderAuthenticationFailed({ provider: "openai", detail: "401" }), "AuthenticationFailed"],
  [new Errors.ProviderInvalidRequest({ provider: "tavily", detail: "422 bad field" }), "InvalidRequest"],
  [new Errors.ProviderCircuitOpen({ provider: "openai", retryAt: 1_000 }), "CircuitOpen"],
  [new Errors.ModelMalformedOutput({ reason: "not JSON", raw: "hello" }), "MalformedOutput"],
  [new Errors.ResearchBudgetExhausted({ budget: "usd", limit: 1, spent: 1.2 }), "BudgetExhausted"],
  [new Errors.ResearchSessionNotFound({ sessionId: "abc" }), "SessionNotFound"],
  [new Errors.ResearchSessionCorrupt({ sessionId: "abc", path: "/x/session.json", reason: "cut" }), "SessionCorrupt"],
  [new Errors.ResearchSessionBusy({ sessionId: "abc", holder: "pid 4" }), "SessionBusy"],
  [new Errors.ResearchInvalidInput({ reason: "empty question" }), "InvalidInput"]
]

const failedSession = new Session.Session({
  version: Session.currentVersion,
  id: "failed-before",
  query: "What failed?",
  createdAt: 1_700_000_000_000,
  updatedAt: 1_700_000_000_000,
  config: ResearchConfig.defaults,
  status: "failed",
  rounds: [],
  sources: [],
  metrics: [],
  usage: [],
  error: new Errors.ProviderInvalidRequest({ provider: "openai", detail: "unused" })
})

describe("errors stored under their previous tags", () => {
  it.effect("every renamed error decodes from its previous tag as the error it is now, message and all", () =>
    Effect.gen(function* () {
      for (const [error, previous] of renamed) {
        const stored = { ...(yield* Schema.encode(Errors.ResearchError)(error)), _tag: previous }
        const decoded = yield* Schema.decodeUnknown(Errors.ResearchError)(JSON.parse(JSON.stringify(stored)))
        assert.strictEqual(decoded._tag, error._tag)
        assert.strictEqual(decoded.constructor, error.constructor)
        assert.strictEqual(decoded.message, error.message)
      }
    })
  )

  it.effect(
    "a failed session stored before reads back with today's error and its cause, and is written as today's",
    () =>
      Effect.gen(function* () {
        const encoded = yield* Schema.encode(Session.Session)(failedSession)
        const storedBefore = JSON.parse(
          JSON.stringify({
            ...encoded,
            error: {
              _tag: "CircuitOpen",
              provider: "openai",
              retryAt: 1_800_000_000_000,
              cause: { _tag: "AuthenticationFailed", provider: "openai", detail: "invalid key" }
            }
          })
        )
        const session = yield* Schema.decodeUnknown(Session.Session)(storedBefore)
        const error = session.error
        assert.isTrue(error instanceof Errors.ProviderCircuitOpen)
        if (!(error instanceof Errors.ProviderCircuitOpen)) return
        assert.isTrue(error.cause instanceof Errors.ProviderAuthenticationFailed)
        assert.strictEqual(
          error.message,
          "openai is failing repeatedly (openai refused the credentials: invalid key; check the API key); calls are " +
            "paused until 2027-01-15T08:00:00.000Z"
        )
        const written = yield* Schema.encode(Session.Session)(session)
        assert.deepStrictEqual(written.error, {
          _tag: "ProviderCircuitOpen",
          provider: "openai",
          retryAt: 1_800_000_000_000,
          cause: { _tag: "ProviderAuthenticationFailed", provider: "openai", detail: "invalid key" }
        })
      })
  )

  it("a tag that is no error's, then or now, is still refused", () => {
    const decoded = Schema.decodeUnknownEither(Errors.ResearchError)({ _tag: "Exploded", reason: "x" })
    assert.isTrue(decoded._tag === "Left")
  })

  it("messages name an error's kind by its previous word, and an error that kept its tag by its tag", () => {
    for (const [error, previous] of renamed) assert.strictEqual(Errors.kindOf(error), previous)
    assert.strictEqual(Errors.kindOf(new Errors.ProviderUnavailable({ provider: "openai" })), "ProviderUnavailable")
    assert.strictEqual(Errors.kindOf({ _tag: "RunConflict" }), "RunConflict")
  })
})
