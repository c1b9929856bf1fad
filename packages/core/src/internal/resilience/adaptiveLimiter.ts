/**
 * A provider's request rate that follows what the provider says: a token bucket whose rate halves when the provider
 * answers 429 (from the rate in force, or from the rate actually sent when there was no limit), whose every caller
 * waits out a `retry-after` the provider gave, and whose rate grows again by a quarter every few successes, up to
 * its ceiling (or back to no limit at all). So a limit lower than the configured one is found rather than assumed,
 * and a higher one is used when it is there.
 *
 * Effect's own `RateLimiter` takes a fixed rate for its lifetime; this one must change its rate while requests wait,
 * which is why it is made here, on `Clock` (so `TestClock` drives it). Its state is a variable read and replaced in one
 * synchronous step (as atomic as a `Ref`, and a few runtime steps cheaper at every request).
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"

/** How a limiter starts and how far it may go. */
export interface Options {
  /** Requests per second to start from; undefined for no limit until the provider asks for one. */
  readonly ratePerSecond: number | undefined
  /** Requests that may go at once after a quiet spell. */
  readonly burst: number
  /** The rate it grows back to at most; undefined for no limit (the limit is lifted once far above the sent rate). */
  readonly maxRatePerSecond: number | undefined
  /** Whether 429s and successes move the rate at all. */
  readonly adaptive: boolean
}

/** A provider's limiter. */
export interface Limiter {
  /** Takes a token, waiting for it (and for any pause the provider asked for). */
  readonly acquire: Effect.Effect<void>
  /** The provider refused a request for its rate: slow down, and pause everyone for `retryAfter` when given. */
  readonly rateLimited: (retryAfter: Duration.Duration | undefined) => Effect.Effect<void>
  /** A request went through. */
  readonly succeeded: Effect.Effect<void>
  /** The rate in force, undefined for none. */
  readonly rate: Effect.Effect<number | undefined>
  /** `acquire` at `now`, in one synchronous step: takes a token, returns how many milliseconds to wait for it. */
  readonly unsafeReserve: (now: number) => number
  /** `rateLimited` at `now`, in one synchronous step. */
  readonly unsafeRateLimited: (retryAfter: Duration.Duration | undefined, now: number) => void
  /** `succeeded` at `now`, in one synchronous step. */
  readonly unsafeSucceeded: (now: number) => void
}

interface State {
  readonly rate: number | undefined
  readonly tokens: number
  readonly at: number
  /** No request goes before this time (a `retry-after`). */
  readonly pausedUntil: number
  readonly successes: number
  /** The requests sent lately: the rate actually sent when there is no limit. */
  readonly sent: Sent
}

/**
 * Requests sent in each of the last whole seconds, the newest last: a count a second rather than a time a request,
 * so a limiter shared by a thousand sessions does the same small work at every request.
 */
interface Sent {
  readonly second: number
  readonly counts: ReadonlyArray<number>
}

/** The slowest a provider is ever driven to: one request a minute. */
const minRate = 1 / 60
/** Successes in a row after which the rate grows, and by how much. */
const successesPerStep = 10
const growth = 1.25
/** Without a ceiling, a rate this many times what is being sent limits nothing: the limit is lifted. */
const liftFactor = 4
const windowSeconds = 10

const noneSent = (now: number): Sent => ({
  second: Math.floor(now / 1000),
  counts: Array.from({ length: windowSeconds }, () => 0)
})

/** The counts as they stand at `now`: older seconds dropped, seconds without a request counted as none. */
const sentAt = (sent: Sent, now: number): Sent => {
  const second = Math.floor(now / 1000)
  const shift = second - sent.second
  if (shift <= 0) return sent
  if (shift >= windowSeconds) return noneSent(now)
  return { second, counts: [...sent.counts.slice(shift), ...Array.from({ length: shift }, () => 0)] }
}

const withOneMore = (sent: Sent, now: number): Sent => {
  const current = sentAt(sent, now)
  const counts = [...current.counts]
  counts[windowSeconds - 1]! += 1
  return { second: current.second, counts }
}

/** Fewer requests than this in the window tell nothing about the rate a provider takes. */
const minSamples = 5

const sentRate = (sent: Sent, now: number): number | undefined => {
  const inWindow = sentAt(sent, now).counts.reduce((sum, count) => sum + count, 0)
  return inWindow < minSamples ? undefined : inWindow / windowSeconds
}

/** Where the bucket stands at `now`: refilled at the rate in force, never above the burst. */
const refill = (state: State, now: number, burst: number): number =>
  state.rate === undefined ? burst : Math.min(burst, state.tokens + ((now - state.at) * state.rate) / 1000)

/** Makes a limiter. */
export const make = (options: Options): Effect.Effect<Limiter> =>
  Effect.map(Clock.currentTimeMillis, (start) => {
    const burst = Math.max(1, options.burst)
    let state: State = {
      rate: options.ratePerSecond,
      tokens: burst,
      at: start,
      pausedUntil: start,
      successes: 0,
      sent: noneSent(start)
    }

    const unsafeReserve = (now: number): number => {
      const s = state
      const sent = options.adaptive ? withOneMore(s.sent, now) : s.sent
      const from = Math.max(now, s.pausedUntil)
      if (s.rate === undefined) {
        state = { ...s, sent }
        return from - now
      }
      // A waiting caller reserves its token up front (the count goes below zero), so callers go in arrival order.
      const left = refill(s, from, burst) - 1
      state = { ...s, tokens: left, at: from, sent }
      return from - now + (left >= 0 ? 0 : Math.ceil((-left * 1000) / s.rate))
    }

    const unsafeRateLimited = (retryAfter: Duration.Duration | undefined, now: number): void => {
      if (!options.adaptive) return
      const s = state
      // Without a limit, the rate sent is halved; too few requests to tell it, only the pause applies.
      const from = s.rate ?? sentRate(s.sent, now)
      const rate = from === undefined ? undefined : Math.max(minRate, from / 2)
      const pausedUntil =
        retryAfter === undefined ? s.pausedUntil : Math.max(s.pausedUntil, now + Duration.toMillis(retryAfter))
      state = { ...s, rate, tokens: Math.min(refill(s, now, burst), 0), at: now, pausedUntil, successes: 0 }
    }

    const unsafeSucceeded = (now: number): void => {
      const s = state
      if (!options.adaptive || s.rate === undefined) return
      const successes = s.successes + 1
      if (successes < successesPerStep) {
        state = { ...s, successes }
        return
      }
      const grown = s.rate * growth
      const tokens = refill(s, now, burst)
      if (options.maxRatePerSecond !== undefined) {
        state = { ...s, rate: Math.min(options.maxRatePerSecond, grown), tokens, at: now, successes: 0 }
        return
      }
      const lifted = grown >= liftFactor * (sentRate(s.sent, now) ?? minRate)
      state = { ...s, rate: lifted ? undefined : grown, tokens, at: now, successes: 0 }
    }

    const acquire = Effect.clockWith((clock) => {
      const wait = unsafeReserve(clock.unsafeCurrentTimeMillis())
      return wait > 0 ? Effect.sleep(Duration.millis(wait)) : Effect.void
    })

    const rateLimited = (retryAfter: Duration.Duration | undefined) =>
      Effect.clockWith((clock) => Effect.sync(() => unsafeRateLimited(retryAfter, clock.unsafeCurrentTimeMillis())))

    const succeeded = Effect.clockWith((clock) => Effect.sync(() => unsafeSucceeded(clock.unsafeCurrentTimeMillis())))

    return {
      acquire,
      rateLimited,
      succeeded,
      rate: Effect.sync(() => state.rate),
      unsafeReserve,
      unsafeRateLimited,
      unsafeSucceeded
    }
  })
