/**
 * No identical request twice in a session: a run whose researchers overlap (the simulated world's researchers all
 * search for the question itself) sends each search and each fetch-time summary once, counted at the emulator.
 */
import { Emulator } from "@deep-research/emulator"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Predicate } from "effect"
import { researchAndEvaluate } from "./support/wire.js"

const duplicates = (keys: ReadonlyArray<string>): ReadonlyArray<string> =>
  keys.filter((key, i) => keys.indexOf(key) !== i)

describe("requests of one session", () => {
  it.live("researchers that overlap share their searches and summaries: no request is sent twice", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* Emulator.simulate(emulator, { directives: 4, searchRounds: 2 })
      const { session } = yield* researchAndEvaluate(emulator, "openai", "How do heat pumps compare with gas boilers?")
      assert.strictEqual(session.status, "completed")
      assert.isAtLeast(session.rounds[0]?.directives.length ?? 0, 4)

      const searches = (yield* emulator.requests("tavily.search")).map((request) => JSON.stringify(request.body))
      assert.isAbove(searches.length, 0)
      assert.deepStrictEqual(duplicates(searches), [])

      const summaries = (yield* emulator.requests("openai.chat")).flatMap((request) => {
        const body = Predicate.isRecord(request.body) ? request.body : {}
        return JSON.stringify(body["response_format"] ?? null).includes('"source_summary"')
          ? [JSON.stringify(body["messages"])]
          : []
      })
      assert.isAbove(summaries.length, 0)
      assert.deepStrictEqual(duplicates(summaries), [])
    }).pipe(Effect.scoped)
  )
})
