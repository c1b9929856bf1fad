/**
 * A circuit breaker for one provider, kept in a `Ref` and timed with `Clock` (so `TestClock` drives it). Closed, it
 * lets calls through and counts consecutive failures that say the provider is down; at the threshold it opens and
 * refuses calls with `CircuitOpen` without making them; after the reset timeout it lets one trial call through
 * (half-open): a success closes it, a counted failure opens it again.
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Ref from "effect/Ref"
import { CircuitOpen, tripsBreaker } from "./Errors.js"
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
  /** Runs `effect` through the breaker: refused with `CircuitOpen` while open, its outcome recorded. */
  readonly protect: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | CircuitOpen, R>
}

type Internal =
  | { readonly _tag: "Closed"; readonly failures: number }
  | { readonly _tag: "Open"; readonly retryAt: number }
  | { readonly _tag: "HalfOpen"; readonly trialRunning: boolean }

type Admission =
  | { readonly _tag: "Admit"; readonly trial: boolean; readonly changed: boolean }
  | { readonly _tag: "Reject"; readonly retryAt: number }

// =============================================================================
// Constructors
// =============================================================================

/** The default classification: errors that say the provider is down or refuses us. */
export const defaultIsFailure = (error: unknown): boolean =>
  Predicate.hasProperty(error, "_tag") && typeof error._tag === "string" && tripsBreaker({ _tag: error._tag })

/** Makes a closed breaker. */
export const make = (options: Options): Effect.Effect<CircuitBreaker> =>
  Effect.map(Ref.make<Internal>({ _tag: "Closed", failures: 0 }), (ref) => fromRef(options, ref))

const fromRef = (options: Options, ref: Ref.Ref<Internal>): CircuitBreaker => {
  const provider = options.provider
  const threshold = Math.max(1, options.failureThreshold ?? 5)
  const resetMillis = Duration.toMillis(Duration.decode(options.resetTimeout ?? "30 seconds"))
  const isFailure = options.isFailure ?? defaultIsFailure

  const announce = (state: State) =>
    Effect.zipRight(
      Effect.logInfo(`circuit breaker of ${provider} is ${state.replace("_", "-")}`),
      ResearchEvents.publish({ _tag: "CircuitChanged", provider, state })
    )

  const admit = (now: number) =>
    Ref.modify(ref, (state): readonly [Admission, Internal] => {
      switch (state._tag) {
        case "Closed":
          return [{ _tag: "Admit", trial: false, changed: false }, state]
        case "Open":
          return now >= state.retryAt
            ? [
                { _tag: "Admit", trial: true, changed: true },
                { _tag: "HalfOpen", trialRunning: true }
              ]
            : [{ _tag: "Reject", retryAt: state.retryAt }, state]
        case "HalfOpen":
          // One trial at a time: the others are refused until it tells whether the provider is back.
          return state.trialRunning
            ? [{ _tag: "Reject", retryAt: now }, state]
            : [
                { _tag: "Admit", trial: true, changed: false },
                { _tag: "HalfOpen", trialRunning: true }
              ]
      }
    })

  /** Records an outcome; returns the new state when it changed. */
  const record = (trial: boolean, outcome: "success" | "failure" | "neutral", now: number) =>
    Ref.modify(ref, (state): readonly [Option.Option<State>, Internal] => {
      if (outcome === "success") {
        return [state._tag === "Closed" ? Option.none() : Option.some("closed"), { _tag: "Closed", failures: 0 }]
      }
      if (outcome === "failure") {
        if (state._tag === "HalfOpen" || (state._tag === "Closed" && state.failures + 1 >= threshold)) {
          return [Option.some("open"), { _tag: "Open", retryAt: now + resetMillis }]
        }
        if (state._tag === "Closed") return [Option.none(), { _tag: "Closed", failures: state.failures + 1 }]
        return [Option.none(), state]
      }
      // Neither verdict (a rate limit, a bad request, an interruption): a trial ends without deciding.
      return trial && state._tag === "HalfOpen"
        ? [Option.none(), { _tag: "HalfOpen", trialRunning: false }]
        : [Option.none(), state]
    })

  const outcomeOf = <A, E>(exit: Exit.Exit<A, E>): "success" | "failure" | "neutral" => {
    if (Exit.isSuccess(exit)) return "success"
    const failure = Cause.failureOption(exit.cause)
    return Option.isSome(failure) && isFailure(failure.value) ? "failure" : "neutral"
  }

  const protect = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | CircuitOpen, R> =>
    Effect.uninterruptibleMask((restore) =>
      Effect.gen(function* () {
        const admission = yield* Effect.flatMap(Clock.currentTimeMillis, admit)
        if (admission._tag === "Reject") {
          return yield* Effect.fail(new CircuitOpen({ provider, retryAt: admission.retryAt }))
        }
        if (admission.changed) yield* announce("half_open")
        const exit = yield* Effect.exit(restore(effect))
        const now = yield* Clock.currentTimeMillis
        const changed = yield* record(admission.trial, outcomeOf(exit), now)
        if (Option.isSome(changed)) yield* announce(changed.value)
        return yield* exit
      })
    )

  const state = Effect.flatMap(Clock.currentTimeMillis, (now) =>
    Effect.map(Ref.get(ref), (internal): State => {
      switch (internal._tag) {
        case "Closed":
          return "closed"
        case "Open":
          return now >= internal.retryAt ? "half_open" : "open"
        case "HalfOpen":
          return "half_open"
      }
    })
  )

  return { provider, state, protect }
}
