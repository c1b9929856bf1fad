/**
 * One call under a provider's policy (see `Resilience`): the provider's state (breaker, limiter, permits), one attempt
 * through them and the attempt's time limit, and the retries of failed attempts. Every model call and search goes
 * through here, so each step of the runtime it takes is taken at every request of every session. A provider's
 * `Policy` is declared here, below `Resilience`, which resolves it from the settings.
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as Function from "effect/Function"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import type * as Schedule from "effect/Schedule"
import * as CircuitBreaker from "../../CircuitBreaker.js"
import { CircuitOpen, Timeout } from "../../Errors.js"
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
  Predicate.isTagged(error, "RateLimited") &&
  Predicate.hasProperty(error, "retryAfter") &&
  Duration.isDuration(error.retryAfter)
    ? error.retryAfter
    : undefined

const traceRejection = (provider: string, error: unknown): Effect.Effect<void> =>
  Predicate.isTagged(error, "CircuitOpen")
    ? Telemetry.spanEvent("circuit_breaker.rejected", { "deep_research.provider": provider })
    : Effect.void

/**
 * Tells the provider's limiter how an attempt went, since the provider's answers set its pace: a 429 slows it (and
 * pauses it for a retry-after), successes speed it up again.
 */
const tellLimiter = (state: ProviderState, exit: Exit.Exit<unknown, unknown>, now: number): void => {
  if (Exit.isSuccess(exit)) {
    state.limiter.unsafeSucceeded(now)
    return
  }
  const error = Cause.failureOption(exit.cause)
  if (Option.isSome(error) && Predicate.isTagged(error.value, "RateLimited")) {
    const retryAfter = retryAfterOf(error.value)
    state.limiter.unsafeRateLimited(
      retryAfter === undefined ? undefined : Duration.min(retryAfter, state.policy.maxRetryDelay),
      now
    )
  }
}

const clockOf = (fiber: Fiber.RuntimeFiber<unknown, unknown>): Clock.Clock =>
  Context.get(fiber.currentDefaultServices, Clock.Clock)

// =============================================================================
// Time limit
// =============================================================================

/**
 * Calls `elapsed` after `duration` on `clock`, unless the returned function is called first: the clock's own `sleep`
 * (a platform timer on the live clock, the test clock's on a `TestClock`) in a fiber of its own, outside the call's.
 */
const startTimer = (clock: Clock.Clock, duration: Duration.Duration, elapsed: () => void): (() => void) => {
  const sleeping = Effect.runFork(clock.sleep(duration))
  sleeping.addObserver((exit) => {
    if (Exit.isSuccess(exit)) elapsed()
  })
  return () => sleeping.unsafeInterruptAsFork(FiberId.none)
}

/**
 * `attempt` (interruptible as its caller wants it, in an uninterruptible region of `parent`'s) in a fiber of its own,
 * failing with `onTimeout()` when it runs past `duration` (interrupted then, the failure waiting until it has stopped);
 * `settle` sees its exit as it comes back, in the same step, and says what to go on with. Its fiber refs are inherited
 * when it succeeds, as `Effect.timeoutFail` inherits them.
 */
const raceTimer = <A, E, R, E2>(
  parent: Fiber.RuntimeFiber<unknown, unknown>,
  attempt: Effect.Effect<A, E, R>,
  duration: Duration.Duration,
  onTimeout: () => E2,
  settle: (exit: Exit.Exit<A, E | E2>) => Effect.Effect<A, E | E2>
): Effect.Effect<A, E | E2, R> =>
  Effect.flatMap(Effect.fork(attempt), (running) =>
    Effect.async<A, E | E2>((resume) => {
      let timedOut = false
      const stop = startTimer(clockOf(parent), duration, () => {
        timedOut = true
        running.unsafeInterruptAsFork(parent.id())
      })
      // An interruption of the caller reaches the attempt as its child, and comes back here as its exit.
      running.addObserver((exit) => {
        stop()
        if (timedOut) return resume(settle(Exit.fail(onTimeout())))
        const settled = settle(exit)
        resume(Exit.isSuccess(exit) ? Effect.zipRight(running.inheritAll, settled) : settled)
      })
    })
  )

/**
 * `effect` failing with `onTimeout()` when it runs past `duration` (and interrupted then, the failure waiting until it
 * has stopped), as `Effect.timeoutFail` does: `effect` runs in a fiber of its own, whose fiber refs are inherited when
 * it succeeds. What it saves at every request is the second fiber `Effect.timeoutFail` races it against (a sleep, its
 * interruption awaited when the call comes back in time): one timer instead, and about 40 runtime steps fewer.
 */
export const timeLimited = <A, E, R, E2>(
  effect: Effect.Effect<A, E, R>,
  duration: Duration.Duration,
  onTimeout: () => E2
): Effect.Effect<A, E | E2, R> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.withFiberRuntime((parent) => raceTimer(parent, restore(effect), duration, onTimeout, Function.identity))
  )

/**
 * One attempt through the breaker, the limiter, the permits and the time limit of a provider, in that order: the
 * breaker admits it (or refuses it with `CircuitOpen`), the limiter gives it a token (waiting for it, with a
 * `rate_limit.wait` span event), a permit is taken, and the attempt runs under its time limit; its exit is told to the
 * limiter, then to the breaker (a change of state announced). The breaker and the limiter are read and told in plain
 * calls; an attempt that neither waits nor takes a permit nor changes the breaker (nearly all of them) runs in the same
 * step as its admission, and is told in the step it comes back in.
 */
const attemptWith = <A, E, R>(
  state: ProviderState,
  provider: string,
  effect: Effect.Effect<A, E, R>,
  timeout: Duration.Duration
): Effect.Effect<A, E | CircuitOpen | Timeout, R> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.withFiberRuntime((fiber) => {
      const clock = clockOf(fiber)
      const admission = state.breaker.unsafeAdmit(clock.unsafeCurrentTimeMillis())
      if (admission._tag === "Reject") return Effect.fail(new CircuitOpen({ provider, retryAt: admission.retryAt }))
      const onTimeout = () => new Timeout({ provider, after: timeout })
      const settle = <X>(exit: Exit.Exit<X, E | Timeout>): Effect.Effect<X, E | Timeout> => {
        const now = clock.unsafeCurrentTimeMillis()
        tellLimiter(state, exit, now)
        const changed = state.breaker.unsafeRecord(admission, exit, now)
        return changed === undefined ? exit : Effect.zipRight(state.breaker.announce(changed), exit)
      }
      if (!admission.changed && state.policy.maxConcurrency === undefined) {
        const wait = state.limiter.unsafeReserve(clock.unsafeCurrentTimeMillis())
        if (wait === 0) return raceTimer(fiber, restore(effect), timeout, onTimeout, settle)
        return paced(state, provider, wait, effect, timeout, restore, settle)
      }
      const reserved = Effect.suspend(() =>
        paced(
          state,
          provider,
          state.limiter.unsafeReserve(clock.unsafeCurrentTimeMillis()),
          effect,
          timeout,
          restore,
          settle
        )
      )
      return admission.changed ? Effect.zipRight(state.breaker.announce("half_open"), reserved) : reserved
    })
  )

/** The rest of an attempt that waits for its token, or takes a permit: the wait and the permit interruptible. */
const paced = <A, E, R>(
  state: ProviderState,
  provider: string,
  wait: number,
  effect: Effect.Effect<A, E, R>,
  timeout: Duration.Duration,
  restore: <X, Y, Z>(effect: Effect.Effect<X, Y, Z>) => Effect.Effect<X, Y, Z>,
  settle: (exit: Exit.Exit<A, E | Timeout>) => Effect.Effect<A, E | Timeout>
): Effect.Effect<A, E | Timeout, R> => {
  const limited = state.withPermit(timeLimited(effect, timeout, () => new Timeout({ provider, after: timeout })))
  const run = wait > 0 ? Effect.zipRight(Telemetry.rateLimitWait(provider, Effect.sleep(wait)), limited) : limited
  return Effect.flatMap(Effect.exit(restore(run)), settle)
}

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
