/**
 * A circuit breaker for one provider, timed with `Clock` (so `TestClock` drives it). Closed, it
 * lets calls through and counts consecutive failures that say the provider is down; at the threshold it opens and
 * refuses calls with `ProviderCircuitOpen` without making them; after the reset timeout it lets one trial call through
 * (half-open): a success closes it, a counted failure opens it again.
 *
 * Its state is a variable read and replaced in one synchronous step (as atomic as a `Ref`, which every call of every
 * session would otherwise go through several steps of the runtime to reach).
 */
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import { BreakerError, ProviderCircuitOpen, tripsBreaker } from "./Errors.js"
import * as ResearchEvents from "./ResearchEvents.js"

// =============================================================================
// Types
// =============================================================================

/** The state of a breaker, as published in `CircuitChanged` events. */
export type State = "closed" | "open" | "half_open"

/** Settings of a breaker. */
export interface Options {
  /** The provider it protects; named in errors and events. */
  readonly provider: string
  /** Consecutive counted failures that open it (default 5). */
  readonly failureThreshold?: number | undefined
  /** How long it stays open before a trial call (default 30 seconds). */
  readonly resetTimeout?: Duration.DurationInput | undefined
  /** Which failures count (default `Errors.tripsBreaker`; rate limits and bad requests do not). */
  readonly isFailure?: ((error: unknown) => boolean) | undefined
}

/** A breaker. */
export interface CircuitBreaker {
  readonly provider: string
  /** The state now (an open breaker whose timeout has passed reads as half-open). */
  readonly state: Effect.Effect<State>
  /** Runs `effect` through the breaker: refused with `ProviderCircuitOpen` while open, its outcome recorded. */
  readonly protect: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | ProviderCircuitOpen, R>
  /**
   * `protect`'s admission of a call at `now`, in one synchronous step, for a caller that runs the call itself: refused
   * until `retryAt`, or admitted (as the half-open breaker's trial or not; `changed` when the breaker became
   * half-open by it, to be announced).
   */
  readonly unsafeAdmit: (now: number) => Admission
  /** Records the exit of a call admitted at `unsafeAdmit`, at `now`; returns the new state when it changed. */
  readonly unsafeRecord: (admission: Admitted, exit: Exit.Exit<unknown, unknown>, now: number) => State | undefined
  /** Tells of a change of state: a log line and a `CircuitChanged` event. */
  readonly announce: (state: State) => Effect.Effect<void>
}

/** A call let through. */
export interface Admitted {
  readonly _tag: "Admit"
  readonly trial: boolean
  readonly changed: boolean
}

/** Whether the breaker lets a call through. */
export type Admission =
  Admitted | { readonly _tag: "Reject"; readonly retryAt: number; readonly cause?: BreakerError | undefined }

type Internal =
  | { readonly _tag: "Closed"; readonly failures: number }
  | { readonly _tag: "Open"; readonly retryAt: number; readonly cause: BreakerError | undefined }
  | { readonly _tag: "HalfOpen"; readonly trialRunning: boolean; readonly cause: BreakerError | undefined }

// =============================================================================
// Constructors
// =============================================================================

/** The default classification: errors that say the provider is down or refuses us. */
export const defaultIsFailure = (error: unknown): boolean =>
  Predicate.hasProperty(error, "_tag") && typeof error._tag === "string" && tripsBreaker({ _tag: error._tag })

/** Makes a closed breaker. */
export const make = (options: Options): Effect.Effect<CircuitBreaker> => Effect.sync(() => unsafeMake(options))

const unsafeMake = (options: Options): CircuitBreaker => {
  const provider = options.provider
  const threshold = Math.max(1, options.failureThreshold ?? 5)
  const resetMillis = Duration.toMillis(Duration.decode(options.resetTimeout ?? "30 seconds"))
  const isFailure = options.isFailure ?? defaultIsFailure
  let current: Internal = { _tag: "Closed", failures: 0 }

  const announce = (state: State) =>
    Effect.zipRight(
      Effect.logInfo(`circuit breaker of ${provider} is ${state.replace("_", "-")}`),
      ResearchEvents.publish({ _tag: "CircuitChanged", provider, state })
    )

  const admit = (now: number): Admission => {
    const state = current
    switch (state._tag) {
      case "Closed":
        return admitted
      case "Open":
        if (now < state.retryAt) return { _tag: "Reject", retryAt: state.retryAt, cause: state.cause }
        current = { _tag: "HalfOpen", trialRunning: true, cause: state.cause }
        return { _tag: "Admit", trial: true, changed: true }
      case "HalfOpen":
        // One trial at a time: the others are refused until it tells whether the provider is back.
        if (state.trialRunning) return { _tag: "Reject", retryAt: now, cause: state.cause }
        current = { _tag: "HalfOpen", trialRunning: true, cause: state.cause }
        return { _tag: "Admit", trial: true, changed: false }
    }
  }

  /** Records an outcome; returns the new state when it changed. */
  const record = (
    trial: boolean,
    outcome: "success" | "failure" | "neutral",
    now: number,
    cause?: BreakerError
  ): State | undefined => {
    const state = current
    if (outcome === "success") {
      if (state._tag === "Closed" && state.failures === 0) return undefined
      current = closed
      return state._tag === "Closed" ? undefined : "closed"
    }
    if (outcome === "failure") {
      if (state._tag === "HalfOpen" || (state._tag === "Closed" && state.failures + 1 >= threshold)) {
        current = { _tag: "Open", retryAt: now + resetMillis, cause }
        return "open"
      }
      if (state._tag === "Closed") current = { _tag: "Closed", failures: state.failures + 1 }
      return undefined
    }
    // Neither verdict (a rate limit, a bad request, an interruption): a trial ends without deciding.
    if (trial && state._tag === "HalfOpen") current = { _tag: "HalfOpen", trialRunning: false, cause: state.cause }
    return undefined
  }

  const outcomeOf = (exit: Exit.Exit<unknown, unknown>): "success" | "failure" | "neutral" => {
    if (Exit.isSuccess(exit)) return "success"
    const failure = Cause.failureOption(exit.cause)
    return Option.isSome(failure) && isFailure(failure.value) ? "failure" : "neutral"
  }

  const unsafeRecord = (admission: Admitted, exit: Exit.Exit<unknown, unknown>, now: number): State | undefined =>
    record(admission.trial, outcomeOf(exit), now, causeOf(exit))

  const protect = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | ProviderCircuitOpen, R> =>
    Effect.uninterruptibleMask((restore) =>
      Effect.clockWith((clock): Effect.Effect<A, E | ProviderCircuitOpen, R> => {
        const admission = admit(clock.unsafeCurrentTimeMillis())
        if (admission._tag === "Reject") return Effect.fail(rejection(provider, admission))
        const run = Effect.flatMap(Effect.exit(restore(effect)), (exit) => {
          const changed = unsafeRecord(admission, exit, clock.unsafeCurrentTimeMillis())
          return changed === undefined ? exit : Effect.zipRight(announce(changed), exit)
        })
        return admission.changed ? Effect.zipRight(announce("half_open"), run) : run
      })
    )

  const state = Effect.clockWith((clock) =>
    Effect.sync((): State => {
      const internal = current
      switch (internal._tag) {
        case "Closed":
          return "closed"
        case "Open":
          return clock.unsafeCurrentTimeMillis() >= internal.retryAt ? "half_open" : "open"
        case "HalfOpen":
          return "half_open"
      }
    })
  )

  return { provider, state, protect, unsafeAdmit: admit, unsafeRecord, announce }
}

const closed: Internal = { _tag: "Closed", failures: 0 }

const isBreakerError = Schema.is(BreakerError)

/** The failure of a call, when it is one a `ProviderCircuitOpen` can carry. */
const causeOf = (exit: Exit.Exit<unknown, unknown>): BreakerError | undefined => {
  if (Exit.isSuccess(exit)) return undefined
  const failure = Cause.failureOption(exit.cause)
  return Option.isSome(failure) && isBreakerError(failure.value) ? failure.value : undefined
}

/** The error of a refused call, carrying the failure that opened the breaker. */
export const rejection = (
  provider: string,
  admission: { readonly retryAt: number; readonly cause?: BreakerError | undefined }
): ProviderCircuitOpen =>
  new ProviderCircuitOpen(
    admission.cause === undefined
      ? { provider, retryAt: admission.retryAt }
      : { provider, retryAt: admission.retryAt, cause: admission.cause }
  )
const admitted: Admitted = { _tag: "Admit", trial: false, changed: false }
