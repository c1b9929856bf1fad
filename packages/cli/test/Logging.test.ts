import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import { lineLogger } from "../src/internal/telemetry/logging.js"

/** The lines `lineLogger` writes for what `effect` logs. */
const linesOf = (effect: Effect.Effect<void>) =>
  Effect.gen(function* () {
    const lines: Array<string> = []
    yield* effect.pipe(
      Effect.provide(
        Logger.replace(
          Logger.defaultLogger,
          lineLogger((line) => lines.push(line))
        )
      )
    )
    return lines
  })

/** An error as a database library reports one: its own words, the driver's under them. */
const driverError = () =>
  new Error("Failed to execute statement", {
    cause: new Error('relation "cluster_runners" already exists', { cause: "42P07" })
  })

describe("the CLI's log lines", () => {
  it.effect("say an error's causes after its own message, one line an entry", () =>
    Effect.gen(function* () {
      const lines = yield* linesOf(
        Effect.zipRight(Effect.logError(driverError()), Effect.logWarning("the worker could not start", driverError()))
      )
      const expected = 'Failed to execute statement: relation "cluster_runners" already exists: 42P07'
      assert.deepStrictEqual(lines, [`error: ${expected}`, `warn: the worker could not start: ${expected}`])
    })
  )

  it.effect("say a failure's cause the same way", () =>
    Effect.gen(function* () {
      const lines = yield* linesOf(
        Effect.logError("cannot start", Effect.runSync(Effect.cause(Effect.fail(driverError()))))
      )
      assert.deepStrictEqual(lines, [
        'error: cannot start: Failed to execute statement: relation "cluster_runners" already exists: 42P07'
      ])
    })
  )
})
