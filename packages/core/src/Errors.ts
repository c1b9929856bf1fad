/**
 * The error union of deep-research. Every failure a provider, the pipeline or a store can report is one of these
 * tagged errors; they are Schema classes because they are persisted in sessions and cross the MCP boundary.
 *
 * Tags are distinctive, so that an application's `catchTag` of its own errors never catches these: a tag that names a
 * failure any program could have starts with whose failure it is, `Provider` for a call to a model, search or
 * extraction provider, `Model` for a model's answer, `Research` for the run, its input, its budget and its sessions
 * (`ProviderTimeout`, `ResearchSessionNotFound`); a tag that already says whose failure it is stays as it was
 * (`ProviderUnavailable`, `ContextWindowExceeded`, `Ungrounded`, `UrlBlocked`). Each class is named as its tag. The
 * unions' Schemas also read errors stored before the tags had their prefix, and messages name an error's kind as they
 * always have (`kindOf`).
 */
import * as Duration from "effect/Duration"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import * as PreviousTags from "./internal/session/previousTags.js"

const formatDuration = (duration: Duration.Duration): string => Duration.format(duration)

// =============================================================================
// Provider errors
// =============================================================================

/** The input does not fit the model's context window. Recovered by shrinking the input, never retried as is. */
export class ContextWindowExceeded extends Schema.TaggedError<ContextWindowExceeded>(
  "@deep-research/core/ContextWindowExceeded"
)("ContextWindowExceeded", {
  model: Schema.String,
  limit: Schema.optional(Schema.Number),
  requested: Schema.optional(Schema.Number)
}) {
  override get message(): string {
    const numbers =
      this.requested !== undefined && this.limit !== undefined
        ? `: ${this.requested} tokens requested, ${this.limit} allowed`
        : this.limit !== undefined
          ? `: the limit is ${this.limit} tokens`
          : ""
    return `The input does not fit the context window of ${this.model}${numbers}`
  }
}

/** The provider asked us to slow down. Retried, after `retryAfter` when the provider said how long. */
export class ProviderRateLimited extends Schema.TaggedError<ProviderRateLimited>(
  "@deep-research/core/ProviderRateLimited"
)("ProviderRateLimited", {
  provider: Schema.String,
  retryAfter: Schema.optional(Schema.DurationFromMillis)
}) {
  override get message(): string {
    const wait = this.retryAfter === undefined ? "" : `; retry after ${formatDuration(this.retryAfter)}`
    return `${this.provider} rate limit reached${wait}`
  }
}

/**
 * The account has no quota or credit left, or the provider is out of reach for longer than a run waits. Never retried:
 * waiting does not help, or not within a run. `until` (epoch milliseconds) is when it is worth asking again (a daily
 * allowance's reset, a `Retry-After` longer than a run waits, an answer that could not be used), and `detail` why;
 * both absent from errors stored before them.
 */
export class ProviderQuotaExhausted extends Schema.TaggedError<ProviderQuotaExhausted>(
  "@deep-research/core/ProviderQuotaExhausted"
)("ProviderQuotaExhausted", {
  provider: Schema.String,
  until: Schema.optional(Schema.Number),
  detail: Schema.optional(Schema.String)
}) {
  override get message(): string {
    if (this.until !== undefined) {
      const why = this.detail === undefined ? "" : `: ${this.detail}`
      return `${this.provider} is skipped until ${new Date(this.until).toISOString()}${why}`
    }
    const detail = this.detail === undefined ? "" : ` (${this.detail})`
    return `${this.provider} quota or credit is exhausted${detail}; check the account's plan and billing`
  }
}

/** The provider failed on its side (5xx, overloaded, connection reset). Retried. */
export class ProviderUnavailable extends Schema.TaggedError<ProviderUnavailable>(
  "@deep-research/core/ProviderUnavailable"
)("ProviderUnavailable", {
  provider: Schema.String,
  status: Schema.optional(Schema.Number),
  detail: Schema.optional(Schema.String)
}) {
  override get message(): string {
    const status = this.status === undefined ? "" : ` (status ${this.status})`
    const detail = this.detail === undefined ? "" : `: ${this.detail}`
    return `${this.provider} is unavailable${status}${detail}`
  }
}

/** One attempt took longer than its time limit. Retried. */
export class ProviderTimeout extends Schema.TaggedError<ProviderTimeout>("@deep-research/core/ProviderTimeout")(
  "ProviderTimeout",
  {
    provider: Schema.String,
    after: Schema.DurationFromMillis
  }
) {
  override get message(): string {
    return `${this.provider} did not answer within ${formatDuration(this.after)}`
  }
}

/** The credentials were refused. Never retried; trips the provider's circuit breaker. */
export class ProviderAuthenticationFailed extends Schema.TaggedError<ProviderAuthenticationFailed>(
  "@deep-research/core/ProviderAuthenticationFailed"
)("ProviderAuthenticationFailed", {
  provider: Schema.String,
  detail: Schema.optional(Schema.String)
}) {
  override get message(): string {
    const detail = this.detail === undefined ? "" : `: ${this.detail}`
    return `${this.provider} refused the credentials${detail}; check the API key`
  }
}

/** The provider rejected the request as malformed. Never retried. */
export class ProviderInvalidRequest extends Schema.TaggedError<ProviderInvalidRequest>(
  "@deep-research/core/ProviderInvalidRequest"
)("ProviderInvalidRequest", {
  provider: Schema.String,
  /** What the provider said. Stored under `message`, as sessions and MCP answers have always had it. */
  detail: Schema.propertySignature(Schema.String).pipe(Schema.fromKey("message"))
}) {
  override get message(): string {
    return `${this.provider} rejected the request: ${this.detail}`
  }
}

/** A model's answer could not be decoded into the expected shape, even after the retries. */
export class ModelMalformedOutput extends Schema.TaggedError<ModelMalformedOutput>(
  "@deep-research/core/ModelMalformedOutput"
)("ModelMalformedOutput", {
  reason: Schema.String,
  raw: Schema.String
}) {
  override get message(): string {
    return `The model's answer was malformed: ${this.reason}`
  }
}

/** The errors that open a circuit breaker (see `tripsBreaker`), also read under their previous tags. */
export const BreakerError = PreviousTags.readingPrevious(
  Schema.Union(ProviderUnavailable, ProviderTimeout, ProviderAuthenticationFailed)
)

/** An error that opens a circuit breaker. */
export type BreakerError = typeof BreakerError.Type

/**
 * The provider's circuit breaker is open after repeated failures; calls are refused until `retryAt`. `cause` is the
 * failure that opened it (absent when the breaker opened on an error outside the union).
 */
export class ProviderCircuitOpen extends Schema.TaggedError<ProviderCircuitOpen>(
  "@deep-research/core/ProviderCircuitOpen"
)("ProviderCircuitOpen", {
  provider: Schema.String,
  /** Epoch milliseconds at which the breaker lets a trial call through. */
  retryAt: Schema.Number,
  cause: Schema.optional(BreakerError)
}) {
  override get message(): string {
    const cause = this.cause === undefined ? "" : ` (${this.cause.message})`
    return `${this.provider} is failing repeatedly${cause}; calls are paused until ${new Date(this.retryAt).toISOString()}`
  }
}

/**
 * The token or cost budget of the run cannot cover a call: it was refused before it was sent (a model call fails with
 * it, as with `ProviderCircuitOpen`).
 */
export class ResearchBudgetExhausted extends Schema.TaggedError<ResearchBudgetExhausted>(
  "@deep-research/core/ResearchBudgetExhausted"
)("ResearchBudgetExhausted", {
  budget: Schema.Literal("tokens", "usd"),
  limit: Schema.Number,
  spent: Schema.Number
}) {
  override get message(): string {
    const unit = this.budget === "usd" ? "USD" : "tokens"
    return `The budget of ${this.limit} ${unit} is exhausted (${this.spent} ${unit} spent)`
  }
}

// =============================================================================
// Pipeline and store errors
// =============================================================================

/** The run found or read no source and its settings require one (`requireSources`); its report still stands. */
export class Ungrounded extends Schema.TaggedError<Ungrounded>("@deep-research/core/Ungrounded")("Ungrounded", {
  /** Why no source was found or read (see `Research.UngroundedReason`). */
  reason: Schema.String
}) {
  override get message(): string {
    return `No source was found or read (${this.reason}), and this run requires its report to rest on sources`
  }
}

/** A URL was refused before any request was made (scheme, private address, size, content type). */
export class UrlBlocked extends Schema.TaggedError<UrlBlocked>("@deep-research/core/UrlBlocked")("UrlBlocked", {
  url: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `Refused to fetch ${this.url}: ${this.reason}`
  }
}

/** No session with this id exists in the store. */
export class ResearchSessionNotFound extends Schema.TaggedError<ResearchSessionNotFound>(
  "@deep-research/core/ResearchSessionNotFound"
)("ResearchSessionNotFound", { sessionId: Schema.String }) {
  override get message(): string {
    return `No session with id ${this.sessionId}`
  }
}

/** A stored session could not be read back. The file is left as it is. */
export class ResearchSessionCorrupt extends Schema.TaggedError<ResearchSessionCorrupt>(
  "@deep-research/core/ResearchSessionCorrupt"
)("ResearchSessionCorrupt", {
  sessionId: Schema.String,
  path: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `Session ${this.sessionId} is corrupt (${this.path}): ${this.reason}`
  }
}

/** Another live run holds the session. */
export class ResearchSessionBusy extends Schema.TaggedError<ResearchSessionBusy>(
  "@deep-research/core/ResearchSessionBusy"
)("ResearchSessionBusy", {
  sessionId: Schema.String,
  holder: Schema.String
}) {
  override get message(): string {
    return `Session ${this.sessionId} is in use by another run (${this.holder}): wait until that run ends, or stop it`
  }
}

/** Input from a user or a caller was refused. */
export class ResearchInvalidInput extends Schema.TaggedError<ResearchInvalidInput>(
  "@deep-research/core/ResearchInvalidInput"
)("ResearchInvalidInput", {
  reason: Schema.String
}) {
  override get message(): string {
    return `Invalid input: ${this.reason}`
  }
}

// =============================================================================
// Unions
// =============================================================================

/** What a call to a model, search or extraction provider can fail with. */
export type ProviderError =
  | ContextWindowExceeded
  | ProviderRateLimited
  | ProviderQuotaExhausted
  | ProviderUnavailable
  | ProviderTimeout
  | ProviderAuthenticationFailed
  | ProviderInvalidRequest
  | ProviderCircuitOpen
  | ResearchBudgetExhausted

/** The classes of the provider errors, and of every error: the unions below, and the tags `isResearchError` knows. */
const providerErrors = [
  ContextWindowExceeded,
  ProviderRateLimited,
  ProviderQuotaExhausted,
  ProviderUnavailable,
  ProviderTimeout,
  ProviderAuthenticationFailed,
  ProviderInvalidRequest,
  ProviderCircuitOpen,
  ResearchBudgetExhausted
] as const

const researchErrors = [
  ...providerErrors,
  ModelMalformedOutput,
  Ungrounded,
  UrlBlocked,
  ResearchSessionNotFound,
  ResearchSessionCorrupt,
  ResearchSessionBusy,
  ResearchInvalidInput
] as const

/** The JSON form of a stored error. */
export type StoredError = PreviousTags.StoredError

/** Decodes any provider error from its JSON form, stored today or under its previous tag. */
export const ProviderError: Schema.Schema<ProviderError, StoredError> = PreviousTags.readingPrevious(
  Schema.Union(...providerErrors)
)

/** Every error of deep-research. */
export type ResearchError =
  | ProviderError
  | ModelMalformedOutput
  | Ungrounded
  | UrlBlocked
  | ResearchSessionNotFound
  | ResearchSessionCorrupt
  | ResearchSessionBusy
  | ResearchInvalidInput

/**
 * Decodes any error of deep-research from its JSON form: a session stored before the tags had their prefix keeps its
 * error as it was written, and reads as the error it is now.
 */
export const ResearchError: Schema.Schema<ResearchError, StoredError> = PreviousTags.readingPrevious(
  Schema.Union(...researchErrors)
)

const researchErrorTags: ReadonlySet<string> = new Set(researchErrors.map((error) => error._tag))

/** True for any error of the union. */
export const isResearchError = (u: unknown): u is ResearchError =>
  u instanceof Error && Predicate.hasProperty(u, "_tag") && typeof u._tag === "string" && researchErrorTags.has(u._tag)

// =============================================================================
// Classification
// =============================================================================

/**
 * An error's kind as messages name it, the CLI's and the events' alike: its tag without the prefix that keeps it apart
 * from an application's tags (the tag it had before), or its tag when it never had one.
 */
export const kindOf = (error: { readonly _tag: string }): string => PreviousTags.previousTag(error._tag)

/** Errors worth another attempt: the same request may succeed later. */
export const isRetryable = (error: { readonly _tag: string }): boolean =>
  error._tag === "ProviderRateLimited" || error._tag === "ProviderUnavailable" || error._tag === "ProviderTimeout"

/**
 * Errors that count toward opening a provider's circuit breaker. A rate limit is the provider working as intended,
 * and a bad request or an overflowing prompt is the caller's fault: neither says the provider is down.
 */
export const tripsBreaker = (error: { readonly _tag: string }): boolean =>
  error._tag === "ProviderUnavailable" ||
  error._tag === "ProviderTimeout" ||
  error._tag === "ProviderAuthenticationFailed"

/**
 * Errors that say no call to the provider can succeed now: refused credentials, no quota left, an open breaker. A run
 * that meets one on a model call fails with it there, rather than go on without the model and fail four phases later.
 */
export const endsRun = (error: { readonly _tag: string }): boolean =>
  error._tag === "ProviderAuthenticationFailed" ||
  error._tag === "ProviderQuotaExhausted" ||
  error._tag === "ProviderCircuitOpen"

/**
 * Errors that say the provider could not be reached, after the policy's retries. The run's first model calls
 * (clarification, brief) fail the run with them: a run whose model cannot be reached has nothing to go on with.
 */
export const isUnreachable = (error: { readonly _tag: string }): boolean =>
  error._tag === "ProviderUnavailable" || error._tag === "ProviderTimeout"
