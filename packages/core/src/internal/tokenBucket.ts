import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Ref from "effect/Ref"

/**
 * A token bucket on `Ref` + `Clock`: `capacity` requests may go at once, then one every `1 / ratePerSecond` seconds.
 * The returned effect takes a token, waiting for it when the bucket is empty. Waiting callers reserve their token up
 * front (the count goes below zero), so they are served in order of arrival.
 */
export const makeTokenBucket = (options: {
  readonly ratePerSecond: number
  readonly capacity: number
}): Effect.Effect<Effect.Effect<void>> =>
  Effect.gen(function* () {
    const capacity = Math.max(1, options.capacity)
    const perMillisecond = options.ratePerSecond / 1000
    const start = yield* Clock.currentTimeMillis
    const bucket = yield* Ref.make({ tokens: capacity, at: start })
    return Effect.flatMap(Clock.currentTimeMillis, (now) =>
      Ref.modify(bucket, (state) => {
        const available = Math.min(capacity, state.tokens + (now - state.at) * perMillisecond)
        const left = available - 1
        const waitMillis = left >= 0 ? 0 : Math.ceil(-left / perMillisecond)
        return [waitMillis, { tokens: left, at: now }] as const
      })
    ).pipe(Effect.flatMap((waitMillis) => (waitMillis > 0 ? Effect.sleep(Duration.millis(waitMillis)) : Effect.void)))
  })
