/**
 * A provider's request rate that follows what the provider says: a token bucket whose rate halves when the provider
 * answers 429 (from the rate in force, or from the rate actually sent when there was no limit), whose every caller
 * waits out a `retry-after` the provider gave, and whose rate grows again by a quarter every few successes, up to
 * its ceiling (or back to no limit at all). So a limit lower than the configured one is found rather than assumed,
 * and a higher one is used when it is there.
 *
 * Effect's own `RateLimiter` takes a fixed rate for its lifetime; this one must change its rate while requests wait,
 * so it is made beside it in the same terms: the bucket in a `Ref`, time from `Clock` (so `TestClock` drives it), a
 * wait as `Effect.sleep`.
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Ref from "effect/Ref"

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
}

interface State {
  readonly rate: number | undefined
  readonly tokens: number
  readonly at: number
  /** No request goes before this time (a `retry-after`). */
  readonly pausedUntil: number
  readonly successes: number
  /** When the requests of the last `windowMillis` went: the rate actually sent when there is no limit. */
  readonly sent: ReadonlyArray<number>
}

/** The slowest a provider is ever driven to: one request a minute. */
const minRate = 1 / 60
/** Successes in a row after which the rate grows, and by how much. */
const successesPerStep = 10
const growth = 1.25
/** Without a ceiling, a rate this many times what is being sent limits nothing: the limit is lifted. */
const liftFactor = 4
const windowMillis = 10_000
/** Fewer requests than this in the window tell nothing about the rate a provider takes. */
const minSamples = 5

const sentRate = (sent: ReadonlyArray<number>, now: number): number | undefined => {
  const inWindow = sent.filter((at) => at > now - windowMillis).length
  return inWindow < minSamples ? undefined : inWindow / (windowMillis / 1000)
}

/** Where the bucket stands at `now`: refilled at the rate in force, never above the burst. */
const refill = (state: State, now: number, burst: number): number =>
  state.rate === undefined ? burst : Math.min(burst, state.tokens + ((now - state.at) * state.rate) / 1000)

/** Takes a token at `now`: the milliseconds to wait for it, and the state after. */
const reserve = (state: State, now: number, options: Options, burst: number): [number, State] => {
  const sent = options.adaptive ? [...state.sent.filter((at) => at > now - windowMillis), now] : state.sent
  const from = Math.max(now, state.pausedUntil)
  if (state.rate === undefined) return [from - now, { ...state, sent }]
  // A waiting caller reserves its token up front (the count goes below zero), so callers go in arrival order.
  const left = refill(state, from, burst) - 1
  const wait = from - now + (left >= 0 ? 0 : Math.ceil((-left * 1000) / state.rate))
  return [wait, { ...state, tokens: left, at: from, sent }]
}

const slowDown = (state: State, retryAfter: Duration.Duration | undefined, now: number, burst: number): State => {
  // Without a limit, the rate sent is halved; too few requests to tell it, only the pause applies.
  const from = state.rate ?? sentRate(state.sent, now)
  const pausedUntil =
    retryAfter === undefined ? state.pausedUntil : Math.max(state.pausedUntil, now + Duration.toMillis(retryAfter))
  return {
    ...state,
    rate: from === undefined ? undefined : Math.max(minRate, from / 2),
    tokens: Math.min(refill(state, now, burst), 0),
    at: now,
    pausedUntil,
    successes: 0
  }
}

const speedUp = (state: State, now: number, options: Options, burst: number): State => {
  if (state.rate === undefined) return state
  if (state.successes + 1 < successesPerStep) return { ...state, successes: state.successes + 1 }
  const grown = state.rate * growth
  const rate =
    options.maxRatePerSecond !== undefined
      ? Math.min(options.maxRatePerSecond, grown)
      : grown >= liftFactor * (sentRate(state.sent, now) ?? minRate)
        ? undefined
        : grown
  return { ...state, rate, tokens: refill(state, now, burst), at: now, successes: 0 }
}

/** Makes a limiter. */
export const make = (options: Options): Effect.Effect<Limiter> =>
  Effect.gen(function* () {
    const burst = Math.max(1, options.burst)
    const start = yield* Clock.currentTimeMillis
    const state = yield* Ref.make<State>({
      rate: options.ratePerSecond,
      tokens: burst,
      at: start,
      pausedUntil: start,
      successes: 0,
      sent: []
    })
    const update = (f: (state: State, now: number) => State): Effect.Effect<void> =>
      options.adaptive
        ? Effect.flatMap(Clock.currentTimeMillis, (now) => Ref.update(state, (s) => f(s, now)))
        : Effect.void
    return {
      acquire: Clock.currentTimeMillis.pipe(
        Effect.flatMap((now) => Ref.modify(state, (s) => reserve(s, now, options, burst))),
        Effect.flatMap((wait) => (wait > 0 ? Effect.sleep(Duration.millis(wait)) : Effect.void))
      ),
      rateLimited: (retryAfter) => update((s, now) => slowDown(s, retryAfter, now, burst)),
      succeeded: update((s, now) => speedUp(s, now, options, burst)),
      rate: Effect.map(Ref.get(state), (s) => s.rate)
    }
  })
