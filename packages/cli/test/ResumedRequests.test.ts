/**
 * What was fetched survives a resume: a run killed while its researchers are still working, then resumed on the same
 * store, sends none of the searches and fetch-time summaries the killed run was answered, counted at the emulator.
 */
import { Pipeline } from "@deep-research/core"
import { Emulator } from "@deep-research/emulator"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Predicate } from "effect"
import { researchLayer } from "./support/wire.js"

const isSummary = (request: Emulator.RecordedRequest): boolean => {
  const body = Predicate.isRecord(request.body) ? request.body : {}
  return JSON.stringify(body["response_format"] ?? null).includes('"source_summary"')
}

const keyOf = (request: Emulator.RecordedRequest): string => {
  const body = Predicate.isRecord(request.body) ? request.body : {}
  return request.endpoint === "openai.chat" ? JSON.stringify(body["messages"]) : JSON.stringify(body)
}

/** The searches and summaries the emulator answered (not those whose client went away first), in two parts. */
const answered = (emulator: Emulator.Handle, cut: number) =>
  Effect.gen(function* () {
    const abandoned = new Set(yield* emulator.abandoned())
    const all = yield* emulator.requests()
    const kept = (requests: ReadonlyArray<Emulator.RecordedRequest>) =>
      requests.filter(
        (request) =>
          !abandoned.has(request) &&
          (request.endpoint === "tavily.search" || (request.endpoint === "openai.chat" && isSummary(request)))
      )
    return { before: kept(all.slice(0, cut)), after: kept(all.slice(cut)) }
  })

/** Waits until the emulator has received no request for half a second. */
const quiet = (emulator: Emulator.Handle) =>
  Effect.gen(function* () {
    let seen = -1
    for (;;) {
      const now = (yield* emulator.requests()).length
      if (now === seen) return
      seen = now
      yield* Effect.sleep("500 millis")
    }
  })

describe("requests of a resumed session", () => {
  it.live(
    "a resumed run sends none of the searches and summaries the killed run was answered",
    () =>
      Effect.gen(function* () {
        const emulator = yield* Emulator.start()
        yield* Emulator.simulate(emulator, { directives: 4, searchRounds: 2 })
        const question = "How do heat pumps compare with gas boilers?"
        const config = { maxSupervisionRounds: 1, maxDirectivesPerRound: 4, maxConcurrentResearchUnits: 4 }

        const session = yield* Effect.gen(function* () {
          // The model answers after 150 ms, so that the run is still researching when the loop below sees the first
          // summaries come back: without it, the loop's timer, late in a busy test worker, could see them only once
          // every unit had searched and summarised all it would, leaving the resumed run nothing to send.
          yield* emulator.setLatency("openai.chat", "150 millis")
          const fiber = yield* Effect.fork(Pipeline.research(question, { sessionId: "resumed-wire", config }))
          // Once researchers have searched and summaries have come back, the model stops answering: no unit can
          // finish, and nothing new is asked.
          for (;;) {
            if ((yield* emulator.requests("openai.chat")).filter(isSummary).length >= 2) break
            yield* Effect.sleep("10 millis")
          }
          yield* emulator.setLatency("openai.chat", "1 hour")
          yield* quiet(emulator)
          yield* Fiber.interrupt(fiber)
          const cut = (yield* emulator.requests()).length

          yield* emulator.setLatency("openai.chat", 0)
          const resumed = yield* Pipeline.resume("resumed-wire")
          const { after, before } = yield* answered(emulator, cut)
          // The killed run was answered searches and summaries, and the resumed run made requests of its own.
          assert.isAbove(before.filter((request) => request.endpoint === "tavily.search").length, 0)
          assert.isAbove(before.filter(isSummary).length, 0)
          assert.isAbove(after.length, 0)
          const sentBefore = new Set(before.map(keyOf))
          assert.deepStrictEqual(after.filter((request) => sentBefore.has(keyOf(request))).map(keyOf), [])
          return resumed
        }).pipe(Effect.provide(researchLayer(emulator, "openai")))

        assert.strictEqual(session.status, "completed")
        assert.isDefined(session.report)
      }).pipe(Effect.scoped),
    60_000
  )
})
