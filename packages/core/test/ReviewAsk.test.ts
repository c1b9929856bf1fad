/**
 * The review of a plan on a terminal: an edit that drops every directive and adds none would research nothing. The
 * person is asked for one directive, or the planned ones stay; the run never fails on it, as it did (and a failed run
 * resumed went on unreviewed).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import * as Review from "../src/phases/Review.js"
import { UserInput } from "../src/UserInput.js"

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
