/**
 * Several search providers as one. A query goes to every provider that is not paused, all at once; the results are
 * merged by normalised URL (a page found by several providers is kept once, in its best-scored form, and records
 * every provider that found it) and ranked by reciprocal rank fusion, so pages several providers agree on come first.
 * A provider that fails is paused for a while (a cooldown on the Clock; as long as its breaker or its rate limit
 * says, when the error says) and the others carry on. Only when every provider fails does the search fail, with an
 * error that names each provider's reason.
 */
import { Errors, Novelty, ResearchEvents, Resilience, SearchProvider, Source } from "@deep-research/core"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"

// =============================================================================
// Options
// =============================================================================

/** Options of the fan-out. */
export interface Options {
  /** The providers, in order of preference (it breaks ties in the ranking). */
  readonly providers: ReadonlyArray<SearchProvider.Service>
  /** The name of the combined provider; the providers' names joined with `+` by default. */
  readonly name?: string | undefined
  /** How long a failing provider is paused; 60 s by default. */
  readonly cooldown?: Duration.DurationInput | undefined
  /** Consecutive failures that pause a provider; 1 by default. An open breaker pauses it at once. */
  readonly failuresBeforeCooldown?: number | undefined
  /**
   * No pause is longer, whatever the error asks, but that of a provider that said until when it will not answer
   * (`ProviderQuotaExhausted` with `until`); 10 minutes by default.
   */
  readonly maxCooldown?: Duration.DurationInput | undefined
  /**
   * How long the others wait for a provider (its own retries included) before going on without it, which counts as
   * its failure; 60 s by default.
   */
  readonly providerTimeout?: Duration.DurationInput | undefined
}

/** The defaults of the fan-out. */
export const defaults = {
  cooldown: Duration.seconds(60),
  failuresBeforeCooldown: 1,
  maxCooldown: Duration.minutes(10),
  providerTimeout: Duration.seconds(60)
} as const

/** How one provider stands. */
export interface ProviderHealth {
  readonly name: string
  readonly consecutiveFailures: number
  /** Epoch milliseconds until which the provider is skipped; 0 when it is not paused. */
  readonly pausedUntil: number
  readonly lastError: string | undefined
}

/** The fan-out: a search provider, and the health of each provider behind it. */
export interface Service extends SearchProvider.Service {
  readonly health: Effect.Effect<ReadonlyArray<ProviderHealth>>
}

// =============================================================================
// Constructors
// =============================================================================

/** Builds the fan-out over the given providers. */
export const make = (options: Options): Effect.Effect<Service> =>
  Effect.gen(function* () {
    // Each provider under its own breaker and limits, with the policy in context as it is made; then the fan-out is
    // not protected again as one provider where the pipeline uses it.
    const resilience = yield* Effect.serviceOption(Resilience.Resilience)
    const providers = Option.isSome(resilience)
      ? options.providers.map(resilience.value.wrapSearchProvider)
      : options.providers
    const fanout: Fanout = {
      providers,
      name: options.name ?? (providers.map((p) => p.name).join("+") || "search"),
      cooldown: Duration.decode(options.cooldown ?? defaults.cooldown),
      maxCooldown: Duration.decode(options.maxCooldown ?? defaults.maxCooldown),
      providerTimeout: Duration.decode(options.providerTimeout ?? defaults.providerTimeout),
      threshold: Math.max(1, options.failuresBeforeCooldown ?? defaults.failuresBeforeCooldown),
      state: yield* Ref.make<ReadonlyArray<ProviderHealth>>(
        providers.map((p) => ({ name: p.name, consecutiveFailures: 0, pausedUntil: 0, lastError: undefined }))
      )
    }
    const search = Effect.fn("SearchFanout.search")(function* (
      query: string,
      searchOptions: SearchProvider.SearchOptions
    ) {
      return yield* searchAll(fanout, query, searchOptions)
    })
    const service: Service = { name: fanout.name, search, health: Ref.get(fanout.state) }
    return providers.every(Resilience.isProtected) ? Resilience.markProtected(service) : service
  })

/** The fan-out as the `SearchProvider` in context. */
export const layer = (options: Options): Layer.Layer<SearchProvider.SearchProvider> =>
  Layer.effect(SearchProvider.SearchProvider, make(options))

/**
 * The fan-out over providers given as layers (each providing a `SearchProvider`), e.g.
 * `SearchFanout.layerOf([Tavily.layerSearch(...), Exa.layerSearch(...)])`.
 */
export const layerOf = <E, R>(
  layers: ReadonlyArray<Layer.Layer<SearchProvider.SearchProvider, E, R>>,
  options: Omit<Options, "providers"> = {}
): Layer.Layer<SearchProvider.SearchProvider, E, R> =>
  Layer.scoped(
    SearchProvider.SearchProvider,
    Effect.gen(function* () {
      const providers = yield* Effect.forEach(layers, (l) =>
        Effect.map(Layer.build(l), (context) => Context.get(context, SearchProvider.SearchProvider))
      )
      return yield* make({ ...options, providers })
    })
  )

// =============================================================================
// Searching
// =============================================================================

/** A fan-out's settings and the health of each of its providers, in their order. */
interface Fanout {
  readonly providers: ReadonlyArray<SearchProvider.Service>
  readonly name: string
  readonly cooldown: Duration.Duration
  readonly maxCooldown: Duration.Duration
  readonly providerTimeout: Duration.Duration
  readonly threshold: number
  readonly state: Ref.Ref<ReadonlyArray<ProviderHealth>>
}

/** How long a failure pauses its provider, or `undefined` when it does not count. */
const pauseFor = (fanout: Fanout, error: Errors.ProviderError, failures: number, now: number): number | undefined => {
  const cap = Duration.toMillis(fanout.maxCooldown)
  switch (error._tag) {
    // the query's fault, not the provider's
    case "ProviderInvalidRequest":
    case "ContextWindowExceeded":
      return undefined
    case "ProviderCircuitOpen":
      return Math.min(cap, Math.max(0, error.retryAt - now))
    // A provider that said when it answers again (a spent daily allowance, an hour's Retry-After) is skipped until
    // then, however long: asking before would only be refused again.
    case "ProviderQuotaExhausted":
      return error.until !== undefined
        ? Math.max(0, error.until - now)
        : failures < fanout.threshold
          ? undefined
          : Math.min(cap, Duration.toMillis(fanout.cooldown))
    case "ProviderRateLimited":
      if (failures < fanout.threshold) return undefined
      return Math.min(
        cap,
        error.retryAfter !== undefined ? Duration.toMillis(error.retryAfter) : Duration.toMillis(fanout.cooldown)
      )
    default:
      return failures < fanout.threshold ? undefined : Math.min(cap, Duration.toMillis(fanout.cooldown))
  }
}

const recordFailure = (fanout: Fanout, index: number, error: Errors.ProviderError, now: number) =>
  Effect.gen(function* () {
    const before = (yield* Ref.get(fanout.state))[index]
    if (before === undefined) return
    const failures = before.consecutiveFailures + 1
    const pause = pauseFor(fanout, error, failures, now)
    const counted = error._tag !== "ProviderInvalidRequest" && error._tag !== "ContextWindowExceeded"
    yield* Ref.update(fanout.state, (all) =>
      all.map((h, i) =>
        i !== index
          ? h
          : {
              ...h,
              consecutiveFailures: counted ? failures : h.consecutiveFailures,
              pausedUntil: pause !== undefined && pause > 0 ? now + pause : h.pausedUntil,
              lastError: error.message
            }
      )
    )
    // One line per pause: a search that was already asking when another paused the provider adds none.
    if (pause !== undefined && pause > 0 && before.pausedUntil <= now) {
      yield* ResearchEvents.publish({
        _tag: "ProviderSkipped",
        provider: before.name,
        reason:
          error._tag === "ProviderQuotaExhausted" && error.until !== undefined
            ? error.message
            : `${error.message}; skipped for ${Duration.format(Duration.millis(pause))}, until ${new Date(now + pause).toISOString()}`
      })
    }
  })

const recordSuccess = (fanout: Fanout, index: number) =>
  Ref.update(fanout.state, (all) =>
    all.map((h, i) => (i !== index ? h : { ...h, consecutiveFailures: 0, pausedUntil: 0, lastError: undefined }))
  )

/** Asks one provider, within the time the others wait for it, and records how it went. */
const askProvider = (
  fanout: Fanout,
  { index, provider }: { readonly index: number; readonly provider: SearchProvider.Service },
  query: string,
  searchOptions: SearchProvider.SearchOptions,
  now: number
) =>
  Effect.either(
    provider.search(query, searchOptions).pipe(
      Effect.timeoutFail({
        duration: fanout.providerTimeout,
        onTimeout: () => new Errors.ProviderTimeout({ provider: provider.name, after: fanout.providerTimeout })
      })
    )
  ).pipe(
    Effect.tap((outcome) =>
      Either.isRight(outcome) ? recordSuccess(fanout, index) : recordFailure(fanout, index, outcome.left, now)
    )
  )

/** The error of a search every asked provider failed: the one failure as it is, or each provider's reason. */
const everyProviderFailed = (
  fanout: Fanout,
  active: ReadonlyArray<{ readonly provider: SearchProvider.Service }>,
  failures: ReadonlyArray<Errors.ProviderError>
): Errors.ProviderError => {
  const [only] = failures
  if (failures.length === 1 && only !== undefined) return only
  const detail = failures.map((error, i) => `${active[i]?.provider.name}: ${error.message}`).join("; ")
  return new Errors.ProviderUnavailable({
    provider: fanout.name,
    detail: `every search provider failed (${detail})`
  })
}

/** Asks every provider that is not paused, at once, and merges what they found. */
const searchAll = (fanout: Fanout, query: string, searchOptions: SearchProvider.SearchOptions) =>
  Effect.gen(function* () {
    const now = yield* Clock.currentTimeMillis
    const health = yield* Ref.get(fanout.state)
    const active = fanout.providers.flatMap((provider, index) =>
      (health[index]?.pausedUntil ?? 0) <= now ? [{ provider, index }] : []
    )
    if (active.length === 0) {
      const retryAt = Math.min(...health.map((h) => h.pausedUntil))
      const reasons = health.map((h) => `${h.name}: ${h.lastError ?? "failing"}`).join("; ")
      yield* Effect.logWarning(`Every search provider is paused (${reasons})`)
      return yield* new Errors.ProviderCircuitOpen({ provider: fanout.name, retryAt })
    }
    const outcomes = yield* Effect.forEach(active, (entry) => askProvider(fanout, entry, query, searchOptions, now), {
      concurrency: "unbounded"
    })
    const lists = outcomes.flatMap((outcome) => (Either.isRight(outcome) ? [outcome.right] : []))
    if (lists.length === 0) {
      const failures = outcomes.flatMap((outcome) => (Either.isLeft(outcome) ? [outcome.left] : []))
      return yield* Effect.fail(everyProviderFailed(fanout, active, failures))
    }
    return merge(lists, searchOptions.maxResults)
  })

// =============================================================================
// Merging
// =============================================================================

/** The comparable form of a URL (the fragment kept on `file:` URLs, where it names a chunk); core's, shared. */
export const normalizeUrl: (url: string) => string = Novelty.normalizeUrl

/** Reciprocal rank fusion's damping constant: the usual 60. */
const fusionConstant = 60

interface Merged {
  best: Source.SearchResult
  readonly providers: Array<string>
  rawContent: string | undefined
  publishedDate: string | undefined
  work: Source.Work | undefined
  fusion: number
  readonly firstSeen: number
}

const better = (a: Source.SearchResult, b: Source.SearchResult): boolean =>
  (a.score ?? Number.NEGATIVE_INFINITY) > (b.score ?? Number.NEGATIVE_INFINITY)

/**
 * Merges the result lists of several providers (in order of preference): one result per normalised URL, the
 * best-scored copy kept (raw content, date and bibliographic facts filled in from the others), `provider` naming every provider that
 * returned it, ranked by reciprocal rank fusion; at most `maxResults`.
 */
export const merge = (
  lists: ReadonlyArray<ReadonlyArray<Source.SearchResult>>,
  maxResults: number
): ReadonlyArray<Source.SearchResult> => {
  const byUrl = new Map<string, Merged>()
  let order = 0
  lists.forEach((list) =>
    list.forEach((result, rank) => {
      const key = normalizeUrl(result.url)
      const contribution = 1 / (fusionConstant + rank + 1)
      const existing = byUrl.get(key)
      if (existing === undefined) {
        byUrl.set(key, {
          best: result,
          providers: [result.provider],
          rawContent: result.rawContent,
          publishedDate: result.publishedDate,
          work: result.work,
          fusion: contribution,
          firstSeen: order++
        })
        return
      }
      existing.fusion += contribution
      if (!existing.providers.includes(result.provider)) existing.providers.push(result.provider)
      if (better(result, existing.best)) existing.best = result
      existing.rawContent ??= result.rawContent
      existing.publishedDate ??= result.publishedDate
      existing.work ??= result.work
    })
  )
  return [...byUrl.values()]
    .sort((a, b) => b.fusion - a.fusion || a.firstSeen - b.firstSeen)
    .slice(0, Math.max(0, maxResults))
    .map((m) => {
      const rawContent = m.best.rawContent ?? m.rawContent
      const publishedDate = m.best.publishedDate ?? m.publishedDate
      const work = m.best.work ?? m.work
      const providers = [m.best.provider, ...m.providers.filter((p) => p !== m.best.provider)]
      return new Source.SearchResult({
        url: m.best.url,
        title: m.best.title,
        snippet: m.best.snippet,
        ...(rawContent !== undefined ? { rawContent } : {}),
        ...(m.best.score !== undefined ? { score: m.best.score } : {}),
        ...(publishedDate !== undefined ? { publishedDate } : {}),
        ...(work !== undefined ? { work } : {}),
        provider: providers.join(",")
      })
    })
}
