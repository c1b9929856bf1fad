/**
 * One call under a provider's policy (see `Resilience`): the provider's state (breaker, limiter, permits), one attempt
 * through them and the attempt's time limit, and the retries of failed attempts. Every model call and search goes
 * through here, so each step of the runtime it takes is taken at every request of every session.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import type * as Schedule from "effect/Schedule"
import * as CircuitBreaker from "../CircuitBreaker.js"
import { Timeout } from "../Errors.js"
import type { CircuitOpen } from "../Errors.js"
import type { Policy } from "../Resilience.js"
import * as Telemetry from "../Telemetry.js"
import * as AdaptiveLimiter from "./adaptiveLimiter.js"

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
    const semaphore =
      policy.maxConcurrency === undefined ? undefined : yield* Effect.makeSemaphore(policy.maxConcurrency)
    const withPermit = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
      semaphore === undefined ? effect : semaphore.withPermits(1)(effect)
    return { policy, breaker, limiter, withPermit }
  })

/** The wait a provider asked for, when the error is a rate limit that says. */
export const retryAfterOf = (error: unknown): Duration.Duration | undefined =>
  Predicate.isTagged(error, "RateLimited") &&
  Predicate.hasProperty(error, "retryAfter") &&
  Duration.isDuration(error.retryAfter)
    ? error.retryAfter
    : undefined

const traceRejection = (provider: string, error: unknown): Effect.Effect<void> =>
  Predicate.isTagged(error, "CircuitOpen")
    ? Telemetry.spanEvent("circuit_breaker.rejected", { "deep_research.provider": provider })
    : Effect.void

/** One attempt through the breaker, the limiter, the permits and the time limit of a provider. */
const attemptWith = <A, E, R>(
  state: ProviderState,
  provider: string,
  effect: Effect.Effect<A, E, R>,
  timeout: Duration.Duration
): Effect.Effect<A, E | CircuitOpen | Timeout, R> =>
  state.breaker.protect(
    Effect.zipRight(
      Telemetry.rateLimitWait(provider, state.limiter.acquire),
      state.withPermit(
        Effect.timeoutFail(effect, {
          duration: timeout,
          onTimeout: () => new Timeout({ provider, after: timeout })
        })
      )
    ).pipe(
      // The provider's answers set its pace: a 429 slows it (and pauses it for a retry-after), successes speed it up
      // again.
      Effect.tapBoth({
        onFailure: (error) => {
          if (!Predicate.isTagged(error, "RateLimited")) return Effect.void
          const wait = retryAfterOf(error)
          return state.limiter.rateLimited(
            wait === undefined ? undefined : Duration.min(wait, state.policy.maxRetryDelay)
          )
        },
        onSuccess: () => state.limiter.succeeded
      })
    )
  )

/**
 * `effect` under a provider's state: each attempt through `attemptWith`, with `timeout`, retried on `schedule` when
 * it fails. The schedule is made only once an attempt has failed (most calls succeed at once, and its driver costs a
 * dozen runtime steps); the retries are then driven by it exactly as `Effect.retry` drives them, the first failure
 * included.
 */
export const protectWith = <A, E, R>(
  state: ProviderState,
  provider: string,
  effect: Effect.Effect<A, E, R>,
  timeout: Duration.Duration,
  schedule: () => Schedule.Schedule<unknown, E | CircuitOpen | Timeout>
): Effect.Effect<A, E | CircuitOpen | Timeout, R> => {
  const attempt = attemptWith(state, provider, effect, timeout)
  return Effect.catchAll(attempt, (first) => {
    let replayed = false
    const again = Effect.suspend(() => {
      if (replayed) return Effect.tapError(attempt, (error) => traceRejection(provider, error))
      replayed = true
      return Effect.fail(first)
    })
    return Effect.zipRight(traceRejection(provider, first), Effect.retry(again, schedule()))
  })
}
