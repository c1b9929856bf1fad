/**
 * `Session.encode`: what `Schema.encode(Session)` gives, field for field and in the same order, with the same errors,
 * while the parts an earlier checkpoint encoded are not encoded again.
 */
import { assert, describe, it } from "@effect/vitest"
import { Arbitrary, Effect, Either, FastCheck, ParseResult, Schema } from "effect"
import * as Research from "../src/Research.js"
import * as Session from "../src/Session.js"

const bySchema = Schema.encode(Session.Session)

/** The encoded forms as text: equal texts mean the same fields, values and order. */
const asText = (encoded: unknown) => JSON.stringify(encoded, null, 2)

const sessions = Arbitrary.make(Session.Session)

describe("Session.encode", () => {
  it.effect("encodes any session exactly as the Session schema does", () =>
    Effect.sync(() =>
      FastCheck.assert(
        FastCheck.property(sessions, (session) => {
          const encoded = Effect.runSync(Session.encode(session))
          assert.deepStrictEqual(encoded, Effect.runSync(bySchema(session)))
          assert.strictEqual(asText(encoded), asText(Effect.runSync(bySchema(session))))
        }),
        { numRuns: 60, seed: 15 }
      )
    )
  )

  it.effect("a later checkpoint reuses the encoded form of the parts it shares with an earlier one", () =>
    Effect.gen(function* () {
      const [first] = FastCheck.sample(
        sessions.filter((s) => (s.rounds[0]?.results.length ?? 0) > 0 && s.sources.length > 0),
        { numRuns: 1, seed: 7 }
      )
      if (first === undefined) return assert.fail("no session sampled")
      const round = first.rounds[0]
      if (round === undefined) return assert.fail("no round")
      const earlier = yield* Session.encode(first)
      const next = new Session.Session(
        {
          ...first,
          status: "completed",
          updatedAt: first.updatedAt + 1,
          rounds: [...first.rounds, new Research.SupervisionRound({ ...round, round: round.round + 1 })]
        },
        true
      )
      const later = yield* Session.encode(next)
      assert.strictEqual(asText(later), asText(yield* bySchema(next)))
      assert.strictEqual(later.config, earlier.config)
      assert.strictEqual(later.rounds[0], earlier.rounds[0])
      assert.strictEqual(later.sources[0], earlier.sources[0])
      // A changed round is encoded again, but the results it shares with the earlier one are not.
      assert.notStrictEqual(later.rounds.at(-1), earlier.rounds[0])
      assert.strictEqual(later.rounds.at(-1)?.results[0], earlier.rounds[0]?.results[0])
    })
  )

  it.effect("refuses what the schema refuses, with the same error", () =>
    Effect.gen(function* () {
      const [valid] = FastCheck.sample(
        sessions.filter((s) => s.rounds.length > 0),
        { numRuns: 1, seed: 3 }
      )
      if (valid === undefined) return assert.fail("no session sampled")
      // Made without validation, as a bug could: a round number that is not an integer, in an otherwise valid session.
      yield* Session.encode(valid)
      const round = valid.rounds[0]
      if (round === undefined) return assert.fail("no round")
      const invalid = new Session.Session(
        { ...valid, rounds: [new Research.SupervisionRound({ ...round, round: 1.5 }, true), ...valid.rounds.slice(1)] },
        true
      )
      const error = yield* Effect.flip(Session.encode(invalid))
      const expected = yield* Effect.flip(bySchema(invalid))
      assert.strictEqual(
        ParseResult.TreeFormatter.formatErrorSync(error),
        ParseResult.TreeFormatter.formatErrorSync(expected)
      )
      const badId = new Session.Session({ ...valid, id: "../elsewhere" }, true)
      assert.isTrue(Either.isLeft(yield* Effect.either(Session.encode(badId))))
      assert.strictEqual(
        ParseResult.TreeFormatter.formatErrorSync(yield* Effect.flip(Session.encode(badId))),
        ParseResult.TreeFormatter.formatErrorSync(yield* Effect.flip(bySchema(badId)))
      )
    })
  )
})
