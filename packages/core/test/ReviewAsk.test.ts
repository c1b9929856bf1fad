/**
 * The review of a plan on a terminal: an edit that drops every directive and adds none would research nothing. The
 * person is asked for one directive, or the planned ones stay; the run never fails on it, as it did (and a failed run
 * resumed went on unreviewed). A run stopped while the person reads the plan (Ctrl-C, a killed process) has not had it
 * reviewed: resumed, it asks again, or waits, and searches nothing first.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Option } from "effect"
import * as Pipeline from "../src/Pipeline.js"
import * as Review from "../src/phases/Review.js"
import { UserInput } from "../src/UserInput.js"
import * as H from "./pipelineHarness.js"

const plan: Review.Plan = { brief: "Tides.", directives: ["The Moon's pull", "Tide gauges since 1990"] }

/** A person who gives these answers in turn, then empty ones. */
const answering = (answers: ReadonlyArray<string>) => {
  let next = 0
  return Effect.provideService(UserInput, { ask: () => Effect.succeed(answers[next++] ?? "") })
}

describe("a plan edited on a terminal", () => {
  it.effect("with every directive dropped and none added, asks for one and researches it", () =>
    Effect.gen(function* () {
      const decision = yield* Review.askNow(plan).pipe(answering(["e", "", "-", "-", "", "Spring and neap tides"]))
      assert.deepStrictEqual(Option.getOrUndefined(decision), {
        action: "edit",
        directives: ["Spring and neap tides"]
      })
    })
  )

  it.effect("with every directive dropped and nothing given when asked, keeps the planned ones", () =>
    Effect.gen(function* () {
      const decision = yield* Review.askNow(plan).pipe(answering(["e", "A new brief", "-", "-", "", ""]))
      assert.deepStrictEqual(Option.getOrUndefined(decision), {
        action: "edit",
        brief: "A new brief",
        directives: plan.directives
      })
    })
  )
})

describe("a plan asked about on a terminal", () => {
  it.effect("stopped while the person reads it, is asked about again when resumed, nothing searched before", () => {
    const searched: Array<string> = []
    const world = H.world({
      web: {
        failSearch: (query) => {
          searched.push(query)
          return undefined
        }
      }
    })
    return Effect.gen(function* () {
      const asked = yield* Deferred.make<void>()
      const person = { ask: () => Effect.zipRight(Deferred.succeed(asked, undefined), Effect.never) }
      const run = yield* Pipeline.research("What are the latest measurements of the four topics?", {
        sessionId: "asked-then-stopped",
        config: { review: true, allowClarification: false }
      }).pipe(Effect.provideService(UserInput, person), Effect.fork)
      yield* Deferred.await(asked)
      yield* Fiber.interrupt(run)
      const resumed = yield* Pipeline.resume("asked-then-stopped").pipe(Review.awaiting)
      assert.strictEqual(resumed.status, "awaiting_review")
      assert.deepStrictEqual(searched, [])
    }).pipe(Effect.provide(world))
  })
})
