/**
 * The policy every call to a provider goes through, in one place. Each attempt passes, from the outside in: the
 * provider's circuit breaker, its rate limiter, its concurrency limit, and a time limit; failed attempts are retried
 * on a Schedule (exponential from 1 s, x2, jittered, capped at 60 s, at most 3 retries; a `retryAfter` from the error
 * replaces the computed delay). Every attempt is a request to the provider, which is why each one passes the breaker,
 * the limiter and the permit, and why no permit is held while waiting to retry.
 *
 * What is retried and what trips the breaker comes from `Errors.isRetryable` and `Errors.tripsBreaker`. The state of
 * each provider (breaker, limiter, permits) lives in the `Resilience` service and is shared by every session run
 * under it.
 */
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Predicate from "effect/Predicate"
import * as Schedule from "effect/Schedule"
import * as CircuitBreaker from "./CircuitBreaker.js"
import type * as ContentExtractor from "./ContentExtractor.js"
import { isRetryable, kindOf, ProviderTimeout } from "./Errors.js"
import type { ProviderCircuitOpen } from "./Errors.js"
import type * as LanguageModel from "./LanguageModel.js"
import * as ResearchEvents from "./ResearchEvents.js"
import type * as SearchProvider from "./SearchProvider.js"
import * as Telemetry from "./Telemetry.js"
import * as ProtectedCall from "./internal/resilience/protectedCall.js"
import {
  type Kind,
  type Policy,
  policyFor,
  defaultSettings,
  Settings,
  settingsConfig
} from "./internal/resilience/settings.js"

// =============================================================================
// Settings
// =============================================================================

export {
  type Kind,
  type Policy,
  PolicyOverrides,
  Settings,
  defaultSettings,
  decodeSettings,
  settingsConfig,
  mergeOverrides,
  withProviderDefaults,
  defaultPolicies,
  policyFor
} from "./internal/resilience/settings.js"

// =============================================================================
// Retry schedule
// =============================================================================

/** The wait a provider asked for, when the error is a rate limit that says. */
export const retryAfterOf: (error: unknown) => Duration.Duration | undefined = ProtectedCall.retryAfterOf

const retryableError = (error: unknown): boolean =>
  Predicate.hasProperty(error, "_tag") && typeof error._tag === "string" && isRetryable({ _tag: error._tag })

/**
 * The retry schedule of a policy, over the errors of the attempts: continues while the error is retryable, at most
 * `maxRetries` times; waits `retryBaseDelay * retryFactor^n` (jittered), or the error's `retryAfter` when it has one,
 * never longer than `maxRetryDelay`. `onRetry` runs before each wait with the retry's number and delay.
 */
export const retrySchedule = <E>(
  policy: Policy,
  onRetry: (error: E, retry: number, delay: Duration.Duration) => Effect.Effect<void> = () => Effect.void
): Schedule.Schedule<unknown, E> => {
  const exponential = Schedule.exponential(policy.retryBaseDelay, policy.retryFactor)
  return (policy.jitter ? Schedule.jittered(exponential) : exponential).pipe(
    Schedule.intersect(Schedule.recurs(policy.maxRetries)),
    Schedule.whileInput((error: E) => retryableError(error)),
    Schedule.intersect(Schedule.identity<E>()),
    Schedule.modifyDelayEffect(([[_delay, retriesBefore], error], computed) => {
      const delay = Duration.min(retryAfterOf(error) ?? computed, policy.maxRetryDelay)
      return Effect.as(onRetry(error, retriesBefore + 1, delay), delay)
    })
  )
}

// =============================================================================
// Service
// =============================================================================

/** Options of one protected call. */
export interface ProtectOptions {
  /** The kind of provider, for its defaults (default "model"). */
  readonly kind?: Kind | undefined
  /** A time limit for each attempt instead of the policy's. */
  readonly attemptTimeout?: Duration.DurationInput | undefined
}

/** The policy with the state of every provider. */
export interface Service {
  readonly settings: Settings
  /** Runs `effect` under the policy of `provider`. */
  readonly protect: <A, E, R>(
    provider: string,
    effect: Effect.Effect<A, E, R>,
    options?: ProtectOptions
  ) => Effect.Effect<A, E | ProviderCircuitOpen | ProviderTimeout, R>
  /** The state of a provider's breaker. */
  readonly circuitState: (provider: string, kind?: Kind) => Effect.Effect<CircuitBreaker.State>
  /**
   * The model with every `generate` protected under its provider. Wrapping twice changes nothing, nor wrapping what is
   * `isProtected` already.
   */
  readonly wrapLanguageModel: (model: LanguageModel.Service) => LanguageModel.Service
  readonly wrapSearchProvider: (provider: SearchProvider.Service) => SearchProvider.Service
  readonly wrapContentExtractor: (extractor: ContentExtractor.Service) => ContentExtractor.Service
}

// An error's kind as messages have always named it (`kindOf`): the CLI prints the Retrying event's `error`.
const describeError = (error: unknown): string =>
  error instanceof Error
    ? `${Predicate.hasProperty(error, "_tag") ? kindOf({ _tag: String(error._tag) }) : error.name}: ${error.message}`
    : String(error)

/** The retry schedule of a provider's calls, announcing each retry as an event, a span event and a debug log. */
const announcedRetries = <E>(provider: string, policy: Policy) =>
  retrySchedule<E>(policy, (error, retry, delay) =>
    Effect.zipRight(
      Effect.zipRight(
        // The Retrying event says it to whoever watches; the log keeps it for debugging only (a warning too would
        // show every retry twice).
        Effect.logDebug(`${provider}: attempt ${retry} failed (${describeError(error)}); retrying`),
        Telemetry.spanEvent("retry", {
          "deep_research.provider": provider,
          "deep_research.retry.attempt": retry,
          "deep_research.retry.delay_ms": Duration.toMillis(delay),
          "error.type": Telemetry.errorType(error)
        })
      ),
      ResearchEvents.publish({
        _tag: "Retrying",
        provider,
        attempt: retry,
        delayMillis: Duration.toMillis(delay),
        error: describeError(error)
      })
    )
  )

// Every service a policy wrapped (under that policy's state), or that protects its own calls ("self"): wrapping one
// again would retry its retries.
const protectedBy = new WeakMap<object, object>()
const self = {}

/** True for a model, search provider or extractor whose calls go through a policy already. */
export const isProtected = (service: object): boolean => protectedBy.has(service)

/**
 * Marks a service whose calls are protected already, so that no policy wraps it again: a composite over protected
 * providers (`SearchFanout`), each of them under its own breaker and limits.
 */
export const markProtected = <A extends object>(service: A): A => {
  protectedBy.set(service, self)
  return service
}

const policy = (settings: Settings): Effect.Effect<Service> =>
  Effect.sync(() => {
    // Looked up at every call, made at the first: a plain map, since a state made twice by two first calls at once
    // is harmless (the second is dropped before use) and a lookup then costs no runtime step.
    const states = new Map<string, ProtectedCall.ProviderState>()
    const skips = (service: object) => {
      const by = protectedBy.get(service)
      return by === states || by === self
    }
    const mark = <A extends object>(service: A): A => {
      protectedBy.set(service, states)
      return service
    }

    const stateOf = (provider: string, kind: Kind): Effect.Effect<ProtectedCall.ProviderState> => {
      const key = `${kind}:${provider}`
      const existing = states.get(key)
      if (existing !== undefined) return Effect.succeed(existing)
      return Effect.map(ProtectedCall.makeProviderState(provider, policyFor(settings, provider, kind)), (made) => {
        const raced = states.get(key)
        if (raced !== undefined) return raced
        states.set(key, made)
        return made
      })
    }

    const protect = <A, E, R>(
      provider: string,
      effect: Effect.Effect<A, E, R>,
      options?: ProtectOptions
    ): Effect.Effect<A, E | ProviderCircuitOpen | ProviderTimeout, R> => {
      const kind = options?.kind ?? "model"
      const existing = states.get(`${kind}:${provider}`)
      const run = (state: ProtectedCall.ProviderState) =>
        ProtectedCall.protectWith(
          state,
          provider,
          effect,
          Duration.decode(options?.attemptTimeout ?? state.policy.attemptTimeout),
          () => announcedRetries<E | ProviderCircuitOpen | ProviderTimeout>(provider, state.policy)
        )
      return existing !== undefined ? run(existing) : Effect.flatMap(stateOf(provider, kind), run)
    }

    const circuitState = (provider: string, kind: Kind = "model") =>
      Effect.flatMap(stateOf(provider, kind), (state) => state.breaker.state)

    const wrapLanguageModel = (model: LanguageModel.Service): LanguageModel.Service =>
      skips(model)
        ? model
        : mark({
            ...model,
            generate: (request) => protect(model.provider, model.generate(request), { kind: "model" })
          })

    const wrapSearchProvider = (provider: SearchProvider.Service): SearchProvider.Service =>
      skips(provider)
        ? provider
        : mark({
            ...provider,
            search: (query, options) => protect(provider.name, provider.search(query, options), { kind: "search" })
          })

    const wrapContentExtractor = (extractor: ContentExtractor.Service): ContentExtractor.Service =>
      skips(extractor)
        ? extractor
        : mark({
            ...extractor,
            extract: (urls) => protect(extractor.name, extractor.extract(urls), { kind: "extract" })
          })

    return { settings, protect, circuitState, wrapLanguageModel, wrapSearchProvider, wrapContentExtractor }
  })

/**
 * The policy in context: `Resilience.Default(settings)`. Provide it once per process, so that all sessions share each
 * provider's limits.
 */
export class Resilience extends Effect.Service<Resilience>()("@deep-research/core/Resilience", {
  effect: (settings: Settings = defaultSettings) => policy(settings)
}) {}

/** Builds the policy over the given settings, with fresh state for every provider. */
export const make = (settings: Settings = defaultSettings): Effect.Effect<Resilience> =>
  Effect.map(policy(settings), Resilience.make)

/** The policy over the given settings. */
export const layer = (settings: Settings = defaultSettings): Layer.Layer<Resilience> => Resilience.Default(settings)

/** The policy of the design. */
export const layerDefault: Layer.Layer<Resilience> = layer(defaultSettings)

/** The policy over settings from config (see `settingsConfig`); invalid settings fail the layer with a ConfigError. */
export const layerConfig = (
  config: Config.Config<Settings> = settingsConfig
): Layer.Layer<Resilience, ConfigError.ConfigError> => Layer.effect(Resilience, Effect.flatMap(config, make))

// =============================================================================
// Accessors
// =============================================================================

/** Runs `effect` under the policy of `provider`, through the `Resilience` in context. */
export const protect = <A, E, R>(
  provider: string,
  effect: Effect.Effect<A, E, R>,
  options?: ProtectOptions
): Effect.Effect<A, E | ProviderCircuitOpen | ProviderTimeout, R | Resilience> =>
  Effect.flatMap(Resilience, (resilience) => resilience.protect(provider, effect, options))

/** The model with every call protected by the `Resilience` in context. */
export const wrapLanguageModel = (
  model: LanguageModel.Service
): Effect.Effect<LanguageModel.Service, never, Resilience> =>
  Effect.map(Resilience, (resilience) => resilience.wrapLanguageModel(model))

/** The search provider with every call protected by the `Resilience` in context. */
export const wrapSearchProvider = (
  provider: SearchProvider.Service
): Effect.Effect<SearchProvider.Service, never, Resilience> =>
  Effect.map(Resilience, (resilience) => resilience.wrapSearchProvider(provider))

/** The extractor with every call protected by the `Resilience` in context. */
export const wrapContentExtractor = (
  extractor: ContentExtractor.Service
): Effect.Effect<ContentExtractor.Service, never, Resilience> =>
  Effect.map(Resilience, (resilience) => resilience.wrapContentExtractor(extractor))
