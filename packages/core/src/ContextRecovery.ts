/**
 * Recovery from `ContextWindowExceeded`: the call is made again with a smaller input, up to 3 times, each input at
 * most 0.9 of the one before. The caller says how its input shrinks (see `Truncation`); the conveniences here do it
 * for sectioned prompts and for conversations.
 */
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import type { ProviderError } from "./Errors.js"
import type * as LanguageModel from "./LanguageModel.js"
import * as ResearchEvents from "./ResearchEvents.js"
import * as Tokens from "./Tokens.js"
import * as Truncation from "./Truncation.js"

/** Smaller inputs tried after the first one overflows. */
export const maxRetries = 3

/** Each smaller input is at most this share of the one before. */
export const shrinkFactor = 0.9

/** What `recover` needs. */
export interface RecoverOptions<A, E, R> {
  /** The model's name, for the events and logs. */
  readonly model: string
  /** The estimated size of the full input. */
  readonly inputTokens: number
  /** Runs the call: `undefined` for the full input, else an input of at most this many (estimated) tokens. */
  readonly attempt: (targetTokens: number | undefined) => Effect.Effect<A, E, R>
  /**
   * The input the model is known to accept, when known. An input estimated above it is shrunk to it before the first
   * attempt, which saves a call bound to fail (and matters for servers that cut an overflowing prompt silently).
   */
  readonly limitTokens?: number | undefined
}

const isContextWindowExceeded = (
  error: unknown
): error is { readonly _tag: "ContextWindowExceeded"; readonly limit?: unknown; readonly requested?: unknown } =>
  Predicate.isTagged(error, "ContextWindowExceeded")

const numberOrUndefined = (value: unknown): number | undefined =>
  typeof value === "number" && Number.isFinite(value) && value > 0 ? value : undefined

/**
 * The size the next input should start from: the previous one, or less when the error says how much fits. A vendor's
 * counts are in its own tokens, so its limit is scaled to our estimate by the ratio of our count of the input it
 * refused to its count of it.
 */
const startingSize = (previous: number, limit: number | undefined, requested: number | undefined) => {
  if (limit === undefined) return previous
  const fitting = requested === undefined ? limit : (limit * previous) / requested
  return Math.min(previous, fitting)
}

/**
 * Runs `attempt(undefined)`; when it fails with `ContextWindowExceeded`, runs it again with a target size, up to 3
 * times, each target at most 0.9 of the previous input (starting from `inputTokens`, or from the error's limit when
 * it is known and smaller). Publishes `ContextWindowRecovered` when a smaller input succeeds. Other errors, and the
 * overflow after the last retry, pass through unchanged. With `limitTokens` below `inputTokens`, the first attempt is
 * already shrunk to `limitTokens`.
 */
export const recover = <A, E, R>(options: RecoverOptions<A, E, R>): Effect.Effect<A, E, R> => {
  const run = (retry: number, previousSize: number, target: number | undefined): Effect.Effect<A, E, R> =>
    // The first attempt (nearly every call) has nothing to announce when it succeeds, so no step to take then.
    (retry === 0 || target === undefined
      ? options.attempt(target)
      : Effect.tap(
          options.attempt(target),
          ResearchEvents.publish({
            _tag: "ContextWindowRecovered",
            model: options.model,
            attempt: retry,
            tokens: target
          })
        )
    ).pipe(
      Effect.catchAll((error) => {
        if (!isContextWindowExceeded(error) || retry >= maxRetries) return Effect.fail(error)
        const base = startingSize(previousSize, numberOrUndefined(error.limit), numberOrUndefined(error.requested))
        const next = Math.floor(base * shrinkFactor)
        return Effect.logWarning(
          `${options.model}: the input (about ${previousSize} tokens) does not fit; retrying with at most ${next}`
        ).pipe(Effect.zipRight(run(retry + 1, next, next)))
      })
    )
  const inputTokens = Math.max(0, options.inputTokens)
  const limit = numberOrUndefined(options.limitTokens)
  return limit !== undefined && inputTokens > limit
    ? run(0, Math.floor(limit), Math.floor(limit))
    : run(0, inputTokens, undefined)
}

// =============================================================================
// Sectioned prompts
// =============================================================================

/** What `recoverSectioned` needs. */
export interface SectionedOptions<A, E, R> {
  readonly model: string
  readonly sections: ReadonlyArray<Truncation.Section>
  /** Estimated tokens of everything sent besides the sections (system prompt, template, tools); 0 when unknown. */
  readonly overheadTokens?: number | undefined
  /** Runs the call over these sections. */
  readonly run: (sections: ReadonlyArray<Truncation.Section>) => Effect.Effect<A, E, R>
  /** See `RecoverOptions.limitTokens`. */
  readonly limitTokens?: number | undefined
}

/** `recover` over a sectioned prompt, shrunk with `Truncation.truncateSections`. */
export const recoverSectioned = <A, E, R>(options: SectionedOptions<A, E, R>): Effect.Effect<A, E, R> => {
  const overhead = Math.max(0, options.overheadTokens ?? 0)
  return recover({
    model: options.model,
    inputTokens: Truncation.sectionTokens(options.sections) + overhead,
    limitTokens: options.limitTokens,
    // One token of slack a section covers the rounding of parts estimated apart from the request they are joined in.
    attempt: (target) =>
      options.run(
        target === undefined
          ? options.sections
          : Truncation.truncateSections(options.sections, Math.max(0, target - overhead - options.sections.length))
      )
  })
}

/** The input a model accepts next to the answer the request reserves room for. */
const inputLimitOf = (model: LanguageModel.Service, request: LanguageModel.GenerateRequest): number | undefined => {
  const limit = model.contextWindow - (request.maxOutputTokens ?? 0)
  return limit > 0 ? limit : undefined
}

/**
 * One call over a sectioned prompt: `build` turns sections into the request; on overflow the sections are shrunk
 * (never the instructions, the question or the brief) and the call made again. A prompt estimated above the model's
 * context window (less the reserved output), or above `options.limitTokens`, is shrunk before the first call.
 */
export const generateSectioned = (
  model: LanguageModel.Service,
  sections: ReadonlyArray<Truncation.Section>,
  build: (sections: ReadonlyArray<Truncation.Section>) => LanguageModel.GenerateRequest,
  options?: {
    /** A lower limit on the input than the context window's (what a budget can pay for), shrunk to likewise. */
    readonly limitTokens?: number | undefined
  }
): Effect.Effect<LanguageModel.Completion, ProviderError> =>
  Effect.suspend(() => {
    const full = build(sections)
    const overheadTokens = Math.max(0, Tokens.estimateRequestTokens(full) - Truncation.sectionTokens(sections))
    const windowLimit = inputLimitOf(model, full)
    const limitTokens =
      options?.limitTokens === undefined
        ? windowLimit
        : Math.max(1, Math.min(windowLimit ?? Infinity, Math.floor(options.limitTokens)))
    return recoverSectioned({
      model: model.model,
      sections,
      overheadTokens,
      limitTokens,
      run: (shrunk) => model.generate(shrunk === sections ? full : build(shrunk))
    })
  })

// =============================================================================
// Conversations
// =============================================================================

/** `recover` over a conversation, shrunk with `Truncation.truncateConversation`. */
export const recoverConversation = <A, E, R>(options: {
  readonly model: string
  readonly request: LanguageModel.GenerateRequest
  readonly run: (request: LanguageModel.GenerateRequest) => Effect.Effect<A, E, R>
  /** See `RecoverOptions.limitTokens`. */
  readonly limitTokens?: number | undefined
}): Effect.Effect<A, E, R> =>
  recover({
    model: options.model,
    inputTokens: Tokens.estimateRequestTokens(options.request),
    limitTokens: options.limitTokens,
    attempt: (target) =>
      options.run(target === undefined ? options.request : Truncation.truncateConversation(options.request, target))
  })

/**
 * One call over a conversation; on overflow the oldest tool-call turns are dropped (never the system prompt, the
 * task, the latest turn or the last user message) and the call made again. A conversation estimated above the
 * model's context window (less the reserved output) is shrunk before the first call.
 */
export const generateConversation = (
  model: LanguageModel.Service,
  request: LanguageModel.GenerateRequest
): Effect.Effect<LanguageModel.Completion, ProviderError> =>
  recoverConversation({
    model: model.model,
    request,
    limitTokens: inputLimitOf(model, request),
    run: (shrunk) => model.generate(shrunk)
  })
