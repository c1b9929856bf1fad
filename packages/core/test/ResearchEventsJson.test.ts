/**
 * `ResearchEvents.encodeJson`: each kind of event encoded by its own schema, giving the same line as the union's
 * `parseJson` encoding, and refusing what it refuses with the same error.
 */
import { assert, describe, it } from "@effect/vitest"
import { Arbitrary, Effect, FastCheck, Schema } from "effect"
import * as ResearchEvents from "../src/ResearchEvents.js"

const byUnion = Schema.encodeSync(Schema.parseJson(ResearchEvents.ResearchEvent))

/** The error a throwing encoder throws, as text. */
const thrown = (encode: () => unknown): string => {
  try {
    encode()
  } catch (error) {
    return error instanceof Error ? error.message : String(error)
  }
  return assert.fail("the encoding did not refuse the event")
}

describe("ResearchEvents.encodeJson", () => {
  it.effect("gives any event the line the union's JSON encoding gives", () =>
    Effect.sync(() =>
      FastCheck.assert(
        FastCheck.property(Arbitrary.make(ResearchEvents.ResearchEvent), (event) => {
          assert.strictEqual(ResearchEvents.encodeJson(event), byUnion(event))
        }),
        { numRuns: 500, seed: 15 }
      )
    )
  )

  it.effect("refuses an event of no known kind, or of a kind with a wrong field, with the union's error", () =>
    Effect.sync(() => {
      const unknownKind = Schema.decodeUnknownSync(Schema.Any)({ _tag: "Nothing", timestamp: 1 })
      assert.strictEqual(
        thrown(() => ResearchEvents.encodeJson(unknownKind)),
        thrown(() => byUnion(unknownKind))
      )
      const wrongField = Schema.decodeUnknownSync(Schema.Any)({ _tag: "Checkpointed", label: 7, timestamp: 1 })
      assert.strictEqual(
        thrown(() => ResearchEvents.encodeJson(wrongField)),
        thrown(() => byUnion(wrongField))
      )
    })
  )
})
