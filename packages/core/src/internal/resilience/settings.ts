/**
 * The settings of the resilience policy and the policy of one provider they resolve to: the kinds' defaults, the
 * changes per kind and per provider (each bounded by `Defaults.resilienceBounds`), and how they stack. `Resilience`
 * re-exports all of it; the call under a policy is in `protectedCall.ts`.
 */
import * as Config from "effect/Config"
import * as Duration from "effect/Duration"
import * as Schema from "effect/Schema"
import { resilienceBounds } from "../../Defaults.js"
import type * as ProtectedCall from "./protectedCall.js"

/** What kind of provider a call goes to; each kind has its own defaults. */
export type Kind = "model" | "search" | "extract"

const b = resilienceBounds

const positiveInt = (maximum: number) => Schema.Int.pipe(Schema.positive(), Schema.lessThanOrEqualTo(maximum))

const perSecond = Schema.Number.pipe(Schema.positive(), Schema.lessThanOrEqualTo(b.requestsPerSecond))

/** A duration given in milliseconds, at most `maximum` of them. */
const millisAtMost = (maximum: number) =>
  Schema.transform(Schema.NonNegative.pipe(Schema.lessThanOrEqualTo(maximum)), Schema.DurationFromSelf, {
    strict: true,
    decode: (millis) => Duration.millis(millis),
    encode: (duration) => Duration.toMillis(duration)
  })

/**
 * Changes to the policy of a kind of provider or of one provider. Durations are in milliseconds; each setting is
 * bounded (`Defaults.resilienceBounds`).
 */
export class PolicyOverrides extends Schema.Class<PolicyOverrides>("@deep-research/core/Resilience/PolicyOverrides")({
  /** The time limit of one attempt. */
  attemptTimeout: Schema.optional(millisAtMost(b.attemptTimeoutMillis)),
  /** Retries after the first attempt. */
  maxRetries: Schema.optional(Schema.Int.pipe(Schema.nonNegative(), Schema.lessThanOrEqualTo(b.maxRetries))),
  /** The delay before the first retry. */
  retryBaseDelay: Schema.optional(millisAtMost(b.retryBaseDelayMillis)),
  /** Each delay is the previous one times this. */
  retryFactor: Schema.optional(
    Schema.Number.pipe(Schema.greaterThanOrEqualTo(1), Schema.lessThanOrEqualTo(b.retryFactor))
  ),
  /** No delay is longer, a provider's `retryAfter` included. */
  maxRetryDelay: Schema.optional(millisAtMost(b.maxRetryDelayMillis)),
  /** Spread each delay at random over 0.8 to 1.2 of itself, so that many clients do not retry in step. */
  jitter: Schema.optional(Schema.Boolean),
  /** Consecutive counted failures that open the breaker. */
  failureThreshold: Schema.optional(positiveInt(b.failureThreshold)),
  /** How long the breaker stays open before a trial call. */
  resetTimeout: Schema.optional(millisAtMost(b.resetTimeoutMillis)),
  /** Sustained requests per second; null for no limit. */
  requestsPerSecond: Schema.optional(Schema.NullOr(perSecond)),
  /** Requests that may go at once after a quiet spell. */
  burst: Schema.optional(positiveInt(b.burst)),
  /** The rate a provider's limit may grow back to after successes; null for none. Default: `requestsPerSecond`. */
  maxRequestsPerSecond: Schema.optional(Schema.NullOr(perSecond)),
  /** Whether a 429 slows the provider down (and successes speed it up again). Default true. */
  adaptiveRate: Schema.optional(Schema.Boolean),
  /** Calls in flight at once; null for no limit. */
  maxConcurrency: Schema.optional(Schema.NullOr(positiveInt(b.maxConcurrency)))
}) {}

const noOverrides = (): PolicyOverrides => new PolicyOverrides({})

/** The settings of the policy: changes per kind of provider, then per provider (by name). */
export class Settings extends Schema.Class<Settings>("@deep-research/core/Resilience/Settings")({
  model: Schema.optionalWith(PolicyOverrides, { default: noOverrides }),
  search: Schema.optionalWith(PolicyOverrides, { default: noOverrides }),
  extract: Schema.optionalWith(PolicyOverrides, { default: noOverrides }),
  providers: Schema.optionalWith(Schema.Record({ key: Schema.String, value: PolicyOverrides }), {
    default: () => ({})
  })
}) {}

/** The settings of the design: no changes to the defaults. */
export const defaultSettings: Settings = Schema.decodeSync(Settings)({})

/** Decodes settings from their JSON form (e.g. a config file's `resilience` entry). */
export const decodeSettings = Schema.decodeUnknown(Settings)

/** Settings read from the `RESILIENCE` config entry (JSON), the defaults when it is absent. */
export const settingsConfig: Config.Config<Settings> = Config.withDefault(
  Schema.Config("RESILIENCE", Schema.parseJson(Settings)),
  defaultSettings
)

/** `overrides` over `base`: each setting `overrides` gives wins. */
export const mergeOverrides = (base: PolicyOverrides, overrides: PolicyOverrides): PolicyOverrides =>
  new PolicyOverrides({ ...base, ...overrides })

/**
 * Settings with providers' own defaults underneath (e.g. the rate a search API allows, shipped with its provider):
 * what `settings` says of a provider wins, setting by setting.
 */
export const withProviderDefaults = (
  settings: Settings,
  defaults: Readonly<Record<string, PolicyOverrides>>
): Settings => {
  const providers: Record<string, PolicyOverrides> = { ...defaults }
  for (const [name, overrides] of Object.entries(settings.providers)) {
    const base = defaults[name]
    providers[name] = base === undefined ? overrides : mergeOverrides(base, overrides)
  }
  return new Settings({ model: settings.model, search: settings.search, extract: settings.extract, providers })
}

/** The policy of one provider, every setting resolved. */
export type Policy = ProtectedCall.Policy

const commonPolicy = {
  maxRetries: 3,
  retryBaseDelay: Duration.seconds(1),
  retryFactor: 2,
  maxRetryDelay: Duration.seconds(60),
  jitter: true,
  failureThreshold: 5,
  resetTimeout: Duration.seconds(30),
  burst: 3,
  maxConcurrency: undefined,
  maxRequestsPerSecond: undefined,
  adaptiveRate: true
} as const

/**
 * The defaults of each kind. Models and extractors have no fixed limit: the model vendors publish theirs per account
 * tier (OpenAI's usage tiers, e.g. 500 requests a minute at tier 1 for its GPT-4.1 models; Anthropic's, 50 a minute at
 * tier 1), so none is assumed and the first 429 sets one (the adaptive rate). Search APIs without a published figure
 * of their own go at 1 request a second (burst 3); those with one ship it as their `policy` (Tavily, Exa, Perplexity,
 * Semantic Scholar), put under the user's settings by `withProviderDefaults`.
 */
export const defaultPolicies: Readonly<Record<Kind, Policy>> = {
  model: { ...commonPolicy, attemptTimeout: Duration.seconds(180), requestsPerSecond: undefined },
  search: { ...commonPolicy, attemptTimeout: Duration.seconds(30), requestsPerSecond: 1, maxRequestsPerSecond: 1 },
  extract: { ...commonPolicy, attemptTimeout: Duration.seconds(60), requestsPerSecond: undefined }
}

const applyOverrides = (policy: Policy, overrides: PolicyOverrides | undefined): Policy => {
  if (overrides === undefined) return policy
  return {
    attemptTimeout: overrides.attemptTimeout ?? policy.attemptTimeout,
    maxRetries: overrides.maxRetries ?? policy.maxRetries,
    retryBaseDelay: overrides.retryBaseDelay ?? policy.retryBaseDelay,
    retryFactor: overrides.retryFactor ?? policy.retryFactor,
    maxRetryDelay: overrides.maxRetryDelay ?? policy.maxRetryDelay,
    jitter: overrides.jitter ?? policy.jitter,
    failureThreshold: overrides.failureThreshold ?? policy.failureThreshold,
    resetTimeout: overrides.resetTimeout ?? policy.resetTimeout,
    requestsPerSecond:
      overrides.requestsPerSecond === undefined ? policy.requestsPerSecond : (overrides.requestsPerSecond ?? undefined),
    burst: overrides.burst ?? policy.burst,
    maxRequestsPerSecond:
      overrides.maxRequestsPerSecond === undefined
        ? overrides.requestsPerSecond === undefined
          ? policy.maxRequestsPerSecond
          : (overrides.requestsPerSecond ?? undefined)
        : (overrides.maxRequestsPerSecond ?? undefined),
    adaptiveRate: overrides.adaptiveRate ?? policy.adaptiveRate,
    maxConcurrency:
      overrides.maxConcurrency === undefined ? policy.maxConcurrency : (overrides.maxConcurrency ?? undefined)
  }
}

/** The policy of a provider: the kind's defaults, then the settings of the kind, then those of the provider. */
export const policyFor = (settings: Settings, provider: string, kind: Kind): Policy =>
  applyOverrides(applyOverrides(defaultPolicies[kind], settings[kind]), settings.providers[provider])
