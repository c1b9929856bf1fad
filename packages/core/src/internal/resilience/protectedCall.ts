/**
 * One call under a provider's policy (see `Resilience`): the provider's state (breaker, limiter, permits), one attempt
 * through them and the attempt's time limit, and the retries of failed attempts. A provider's `Policy` is declared
 * here, below `Resilience`, which resolves it from the settings.
 */
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import type * as Schedule from "effect/Schedule"
import * as CircuitBreaker from "../../CircuitBreaker.js"
import { type ProviderCircuitOpen, ProviderTimeout } from "../../Errors.js"
import * as Telemetry from "../../Telemetry.js"
import * as AdaptiveLimiter from "./adaptiveLimiter.js"
import * as Permits from "./permits.js"

/** The policy of one provider, every setting resolved. */
export interface Policy {
  readonly attemptTimeout: Duration.Duration
  readonly maxRetries: number
  readonly retryBaseDelay: Duration.Duration
  readonly retryFactor: number
  readonly maxRetryDelay: Duration.Duration
  readonly jitter: boolean
  readonly failureThreshold: number
  readonly resetTimeout: Duration.Duration
  /** Undefined: no rate limit (until the provider answers 429, when the rate is adaptive). */
  readonly requestsPerSecond: number | undefined
  readonly burst: number
  /** The rate the limit may grow back to; undefined: the limit is lifted once it limits nothing. */
  readonly maxRequestsPerSecond: number | undefined
  readonly adaptiveRate: boolean
  /** Undefined: no concurrency limit. */
  readonly maxConcurrency: number | undefined
}

/** The state of one provider, shared by every session. */
export interface ProviderState {
  readonly policy: Policy
  readonly breaker: CircuitBreaker.CircuitBreaker
  readonly limiter: AdaptiveLimiter.Limiter
  readonly withPermit: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}

/** A provider's state as its policy sets it out: a closed breaker, a full bucket, all permits free. */
export const makeProviderState = (provider: string, policy: Policy): Effect.Effect<ProviderState> =>
  Effect.gen(function* () {
    const breaker = yield* CircuitBreaker.make({
      provider,
      failureThreshold: policy.failureThreshold,
      resetTimeout: policy.resetTimeout
    })
    const limiter = yield* AdaptiveLimiter.make({
      ratePerSecond: policy.requestsPerSecond,
      burst: policy.burst,
      maxRatePerSecond: policy.maxRequestsPerSecond,
      adaptive: policy.adaptiveRate
    })
    const permits = policy.maxConcurrency === undefined ? undefined : yield* Permits.make(policy.maxConcurrency)
    const withPermit = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
      permits === undefined ? effect : permits.withPermit(effect)
    return { policy, breaker, limiter, withPermit }
  })

/** The wait a provider asked for, when the error is a rate limit that says. */
export const retryAfterOf = (error: unknown): Duration.Duration | undefined =>
  Predicate.isTagged(error, "ProviderRateLimited") &&
  Predicate.hasProperty(error, "retryAfter") &&
  Duration.isDuration(error.retryAfter)
    ? error.retryAfter
    : undefined

const traceRejection = (provider: string, error: unknown): Effect.Effect<void> =>
  Predicate.isTagged(error, "ProviderCircuitOpen")
    ? Telemetry.spanEvent("circuit_breaker.rejected", { "deep_research.provider": provider })
    : Effect.void

/**
 * Tells the provider's limiter how an attempt went, since the provider's answers set its pace: a 429 slows it (and
 * pauses it for a retry-after), successes speed it up again.
 */
const tellLimiter = (state: ProviderState, exit: Exit.Exit<unknown, unknown>): Effect.Effect<void> => {
  if (Exit.isSuccess(exit)) return state.limiter.succeeded
  const error = Cause.failureOption(exit.cause)
  if (Option.isNone(error) || !Predicate.isTagged(error.value, "ProviderRateLimited")) return Effect.void
  const retryAfter = retryAfterOf(error.value)
  return state.limiter.rateLimited(
    retryAfter === undefined ? undefined : Duration.min(retryAfter, state.policy.maxRetryDelay)
  )
}

/** `effect` failing with `onTimeout()` when it runs past `duration` (and interrupted then). */
export const timeLimited = <A, E, R, E2>(
  effect: Effect.Effect<A, E, R>,
  duration: Duration.Duration,
  onTimeout: () => E2
): Effect.Effect<A, E | E2, R> => Effect.timeoutFail(effect, { duration, onTimeout })

/**
 * One attempt through the breaker, the limiter, the permits and the time limit of a provider, in that order: the
 * breaker admits it (or refuses it with `ProviderCircuitOpen`), the limiter gives it a token (waiting for it, with a
 * `rate_limit.wait` span event), a permit is taken, and the attempt runs under its time limit; its exit is told to the
 * limiter, then to the breaker.
 */
const attemptWith = <A, E, R>(
  state: ProviderState,
  provider: string,
  effect: Effect.Effect<A, E, R>,
  timeout: Duration.Duration
): Effect.Effect<A, E | ProviderCircuitOpen | ProviderTimeout, R> =>
  Telemetry.rateLimitWait(provider, state.limiter.acquire).pipe(
    Effect.zipRight(
      state.withPermit(timeLimited(effect, timeout, () => new ProviderTimeout({ provider, after: timeout })))
    ),
    Effect.onExit((exit) => tellLimiter(state, exit)),
    state.breaker.protect
  )

/** `effect` under a provider's state: each attempt through `attemptWith`, with `timeout`, retried on `schedule`. */
export const protectWith = <A, E, R>(
  state: ProviderState,
  provider: string,
  effect: Effect.Effect<A, E, R>,
  timeout: Duration.Duration,
  schedule: () => Schedule.Schedule<unknown, E | ProviderCircuitOpen | ProviderTimeout>
): Effect.Effect<A, E | ProviderCircuitOpen | ProviderTimeout, R> =>
  attemptWith(state, provider, effect, timeout).pipe(
    Effect.tapError((error) => traceRejection(provider, error)),
    Effect.retry(schedule())
  )
