/**
 * Dates as the prompts state them. Time comes from the `Clock`, so tests on `TestClock` see a stable date.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"

/** A moment's date, as YYYY-MM-DD (UTC). */
export const dateOf = (millis: number): string => new Date(millis).toISOString().slice(0, 10)

/** Today's date, as YYYY-MM-DD. */
export const today: Effect.Effect<string> = Effect.map(Clock.currentTimeMillis, dateOf)
