/**
 * What a run tells a tracing backend: the attributes of its spans and its metrics, on Effect's own tracer and metric
 * registry (the CLI exports both over OTLP). Model calls carry the OpenTelemetry GenAI semantic conventions
 * (`gen_ai.*`, as named by `@opentelemetry/semantic-conventions/incubating`); the rest is under `deep_research.*`.
 * Prompt and page text go out only when `CaptureContent` is on.
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberRef from "effect/FiberRef"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Tracer from "effect/Tracer"
import type * as LanguageModel from "./LanguageModel.js"
import {
  requests,
  requestErrors,
  requestDuration,
  clientOperationDuration,
  sessions,
  researchUnitsActive,
  withTags,
  modelCallInstruments
} from "./internal/telemetry/telemetryMetrics.js"
import * as ResearchEvents from "./ResearchEvents.js"
import type * as Session from "./Session.js"
import * as TelemetryContent from "./internal/telemetry/telemetryContent.js"
import type { Role } from "./Usage.js"

// =============================================================================
// Attribute names
// =============================================================================

/** The attributes set on spans: the GenAI conventions' names, then this project's. */
export const attributes = {
  operationName: "gen_ai.operation.name",
  providerName: "gen_ai.provider.name",
  /** Deprecated by the conventions for `gen_ai.provider.name`; still read by many backends. */
  system: "gen_ai.system",
  requestModel: "gen_ai.request.model",
  requestMaxTokens: "gen_ai.request.max_tokens",
  responseModel: "gen_ai.response.model",
  finishReasons: "gen_ai.response.finish_reasons",
  inputTokens: "gen_ai.usage.input_tokens",
  outputTokens: "gen_ai.usage.output_tokens",
  cacheReadInputTokens: "gen_ai.usage.cache_read.input_tokens",
  reasoningOutputTokens: "gen_ai.usage.reasoning.output_tokens",
  conversationId: "gen_ai.conversation.id",
  toolName: "gen_ai.tool.name",
  systemInstructions: "gen_ai.system_instructions",
  inputMessages: "gen_ai.input.messages",
  outputMessages: "gen_ai.output.messages",
  errorType: "error.type",
  role: "deep_research.role",
  sessionId: "deep_research.session.id",
  costUsd: "deep_research.cost_usd",
  phase: "deep_research.phase",
  round: "deep_research.round",
  directiveId: "deep_research.directive.id",
  requestKind: "deep_research.request.kind",
  outcome: "deep_research.session.outcome"
} as const

// =============================================================================
// Content capture
// =============================================================================

/**
 * Whether prompt, answer, query and page text go on spans (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`).
 * Off by default: a trace then holds sizes, models and counts, never text.
 */
export class CaptureContent extends Context.Reference<CaptureContent>()(
  "@deep-research/core/Telemetry/CaptureContent",
  {
    defaultValue: () => false
  }
) {}

// =============================================================================
// Metrics
// =============================================================================

export {
  tokens,
  cost,
  requests,
  requestErrors,
  requestDuration,
  clientTokenUsage,
  clientOperationDuration,
  sessions,
  researchUnitsActive
} from "./internal/telemetry/telemetryMetrics.js"

// =============================================================================
// Spans
// =============================================================================

// The spans of calls capture no stack trace: it would name this module's own lines, at the cost of one per call.

/** The tag of an error, for `error.type`. */
export const errorType = (error: unknown): string =>
  Predicate.hasProperty(error, "_tag") && typeof error._tag === "string"
    ? error._tag
    : error instanceof Error
      ? error.name
      : "unknown"

const causeType = (cause: Cause.Cause<unknown>): string =>
  Cause.isInterruptedOnly(cause)
    ? "interrupted"
    : Option.match(Cause.failureOption(cause), { onNone: () => "defect", onSome: errorType })

/** Runs `effect`, then `record`s how it ended and the seconds it took (by the fiber's clock), however it ended. */
const timed = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  record: (exit: Exit.Exit<A, E>, seconds: number) => Effect.Effect<void>
): Effect.Effect<A, E, R> =>
  Effect.flatMap(Clock.currentTimeMillis, (startedAt) =>
    Effect.onExit(effect, (exit) =>
      Effect.flatMap(Clock.currentTimeMillis, (endedAt) => record(exit, (endedAt - startedAt) / 1_000))
    )
  )

/** Counts a request and its error, and times it, under `kind` and `provider`; gives the error's type. */
const countRequest = (
  kind: string,
  provider: string,
  exit: Exit.Exit<unknown, unknown>,
  seconds: number
): Effect.Effect<string | undefined> =>
  Effect.gen(function* () {
    const tags = { [attributes.requestKind]: kind, [attributes.providerName]: provider }
    yield* Metric.increment(withTags(requests, tags))
    yield* Metric.update(withTags(requestDuration, tags), seconds)
    if (Exit.isSuccess(exit)) return undefined
    const type = causeType(exit.cause)
    yield* Metric.increment(withTags(requestErrors, { ...tags, [attributes.errorType]: type }))
    yield* Effect.annotateCurrentSpan(attributes.errorType, type)
    return type
  })

/** The current session's id, as span attributes under each of `names`. */
const sessionAttributes = (...names: ReadonlyArray<string>): Effect.Effect<Record<string, string>> =>
  Effect.map(FiberRef.get(ResearchEvents.currentSessionId), (sessionId) =>
    Option.isNone(sessionId) ? {} : Object.fromEntries(names.map((name) => [name, sessionId.value]))
  )

/** What a model call is known by before it is made. */
export interface ModelCall {
  readonly role: Role
  readonly provider: string
  readonly model: string
  readonly request: LanguageModel.GenerateRequest
}

const conventionTags = (call: ModelCall) => ({
  [attributes.operationName]: "chat",
  [attributes.providerName]: call.provider,
  [attributes.requestModel]: call.model
})

const completionAttributes = (completion: LanguageModel.Completion, costUsd: number): Record<string, unknown> => ({
  [attributes.responseModel]: completion.model,
  [attributes.finishReasons]: [completion.finishReason],
  [attributes.inputTokens]: completion.usage.inputTokens,
  [attributes.outputTokens]: completion.usage.outputTokens,
  [attributes.cacheReadInputTokens]: completion.usage.cachedInputTokens,
  [attributes.reasoningOutputTokens]: completion.usage.reasoningTokens,
  [attributes.costUsd]: costUsd
})

const recordSuccess = (
  call: ModelCall,
  completion: LanguageModel.Completion,
  seconds: number,
  costUsd: number
): Effect.Effect<void> => {
  const instruments = modelCallInstruments(call.role, call.provider, call.model, completion.model)
  const { inputTokens, outputTokens } = completion.usage
  return Effect.all(
    [
      Metric.increment(instruments.requests),
      Metric.update(instruments.requestDuration, seconds),
      Metric.update(instruments.operationDuration, seconds),
      Metric.update(instruments.inputTokenUsage, inputTokens),
      Metric.update(instruments.outputTokenUsage, outputTokens),
      Metric.incrementBy(instruments.inputTokens, inputTokens),
      Metric.incrementBy(instruments.outputTokens, outputTokens),
      Metric.incrementBy(instruments.cost, costUsd)
    ],
    { discard: true }
  )
}

/** What a model call's span says before the call: the request, and its messages when content is captured. */
const modelCallAttributes = (call: ModelCall, capture: boolean): Record<string, unknown> => {
  const system = capture ? TelemetryContent.systemInstructions(call.request) : undefined
  return {
    [attributes.operationName]: "chat",
    [attributes.providerName]: call.provider,
    [attributes.system]: call.provider,
    [attributes.requestModel]: call.model,
    [attributes.role]: call.role,
    ...(call.request.maxOutputTokens === undefined
      ? {}
      : { [attributes.requestMaxTokens]: call.request.maxOutputTokens }),
    ...(capture ? { [attributes.inputMessages]: TelemetryContent.inputMessages(call.request) } : {}),
    ...(system === undefined ? {} : { [attributes.systemInstructions]: system })
  }
}

/**
 * A model call as a GenAI client span (`chat {model}`), with its role, session, usage and cost, and counted in the
 * metrics. `costOf` prices the completion; `onSuccess`, when given, is told of a completion and its cost, with the
 * caller's context, in the same step (the router records it in the run's ledger there).
 */
export const modelCall = <E, R>(
  call: ModelCall,
  effect: Effect.Effect<LanguageModel.Completion, E, R>,
  costOf: (completion: LanguageModel.Completion) => number,
  onSuccess?: (completion: LanguageModel.Completion, costUsd: number, context: Context.Context<never>) => void
): Effect.Effect<LanguageModel.Completion, E, R> =>
  Effect.gen(function* () {
    const capture = yield* CaptureContent
    const context = yield* Effect.context<never>()
    const session = yield* sessionAttributes(attributes.sessionId, attributes.conversationId)
    const record = (exit: Exit.Exit<LanguageModel.Completion, E>, seconds: number): Effect.Effect<void> => {
      if (Exit.isFailure(exit)) {
        return Effect.flatMap(countRequest("model", call.provider, exit, seconds), (error) =>
          Metric.update(
            withTags(clientOperationDuration, {
              ...conventionTags(call),
              ...(error === undefined ? {} : { [attributes.errorType]: error })
            }),
            seconds
          )
        )
      }
      const costUsd = costOf(exit.value)
      onSuccess?.(exit.value, costUsd, context)
      return Effect.zipRight(
        Effect.annotateCurrentSpan({
          ...completionAttributes(exit.value, costUsd),
          ...(capture ? { [attributes.outputMessages]: TelemetryContent.outputMessages(exit.value) } : {})
        }),
        recordSuccess(call, exit.value, seconds, costUsd)
      )
    }
    return yield* Effect.withSpan(timed(effect, record), `chat ${call.model}`, {
      kind: "client",
      captureStackTrace: false,
      attributes: { ...modelCallAttributes(call, capture), ...session }
    })
  })

/**
 * A search or extract request as a client span (`search {provider}`, `extract {provider}`), counted in the metrics.
 * The query goes on the span only when content is captured; the URLs are addresses, not content, and always go.
 */
export const providerCall = <A, E, R>(
  kind: "search" | "extract",
  provider: string,
  details: { readonly query?: string | undefined; readonly urls?: ReadonlyArray<string> | undefined },
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  Effect.gen(function* () {
    const session = yield* sessionAttributes(attributes.sessionId)
    const query =
      details.query !== undefined && (yield* CaptureContent) ? { "deep_research.search.query": details.query } : {}
    return yield* Effect.withSpan(
      timed(effect, (exit, seconds) => Effect.asVoid(countRequest(kind, provider, exit, seconds))),
      `${kind} ${provider}`,
      {
        kind: "client",
        captureStackTrace: false,
        attributes: {
          [attributes.requestKind]: kind,
          [attributes.providerName]: provider,
          ...(details.urls === undefined ? {} : { "deep_research.extract.urls": [...details.urls] }),
          ...session,
          ...query
        }
      }
    )
  })

/** A tool call of a researcher as a span (`execute_tool {name}`, as the GenAI conventions name it). */
export const toolCall =
  (call: { readonly id: string; readonly name: string }) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.withSpan(`execute_tool ${call.name}`, {
      attributes: {
        [attributes.operationName]: "execute_tool",
        [attributes.toolName]: call.name,
        "gen_ai.tool.call.id": call.id
      }
    })(effect)

/** Adds an event to the current span, if there is one (retries, breaker rejections, rate-limit waits). */
export const spanEvent = (name: string, eventAttributes: Record<string, unknown>): Effect.Effect<void> =>
  Effect.flatMap(Effect.option(Effect.currentSpan), (span) =>
    Option.isNone(span)
      ? Effect.void
      : Effect.flatMap(Clock.currentTimeNanos, (now) => Effect.sync(() => span.value.event(name, now, eventAttributes)))
  )

/** Keeps a research unit counted as in flight while it runs. */
export const inFlight = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.acquireUseRelease(
    Metric.incrementBy(researchUnitsActive, 1),
    () => effect,
    () => Metric.incrementBy(researchUnitsActive, -1)
  )

// =============================================================================
// Sessions
// =============================================================================

/** The trace of a run, as kept in the session's events so that a later run can link to it. */
export interface TraceReference {
  readonly traceId: string
  readonly spanId: string
}

/** The trace of the last run recorded in a session's events. */
export const lastTrace = (events: ReadonlyArray<ResearchEvents.ResearchEvent>): TraceReference | undefined => {
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i]
    if (event?._tag === "TraceStarted") return { traceId: event.traceId, spanId: event.spanId }
  }
  return undefined
}

/** Publishes the trace of the current run (when it has a span), so that a resumed run can link to it. */
export const publishTrace: Effect.Effect<void> = Effect.flatMap(Effect.option(Effect.currentSpan), (span) =>
  Option.isNone(span)
    ? Effect.void
    : ResearchEvents.publish({ _tag: "TraceStarted", traceId: span.value.traceId, spanId: span.value.spanId })
)

const outcomeOf = (exit: Exit.Exit<Session.Session, unknown>): string =>
  Exit.isSuccess(exit) ? exit.value.status : Cause.isInterruptedOnly(exit.cause) ? "cancelled" : "failed"

/**
 * A run of a session as the root span of its own trace (one trace per run, even when a server runs many), linked to
 * the trace of the run it continues; its outcome is counted in `sessions`.
 */
export const sessionRun = <E, R>(
  name: string,
  sessionId: string | undefined,
  previous: TraceReference | undefined,
  effect: Effect.Effect<Session.Session, E, R>
): Effect.Effect<Session.Session, E, R> =>
  effect.pipe(
    Effect.onExit((exit) => {
      const outcome = outcomeOf(exit)
      return Effect.zipRight(
        Effect.annotateCurrentSpan(attributes.outcome, outcome),
        Metric.increment(withTags(sessions, { [attributes.outcome]: outcome }))
      )
    }),
    Effect.withSpan(name, {
      root: true,
      attributes: sessionId === undefined ? {} : { [attributes.sessionId]: sessionId },
      links:
        previous === undefined
          ? []
          : [
              {
                _tag: "SpanLink",
                span: Tracer.externalSpan({ traceId: previous.traceId, spanId: previous.spanId }),
                attributes: { "deep_research.link": "continues" }
              }
            ]
    })
  )

/** Runs a rate limiter's `acquire`, adding a `rate_limit.wait` event to the current span when it had to wait. */
export const rateLimitWait = (provider: string, acquire: Effect.Effect<void>): Effect.Effect<void> =>
  Effect.flatMap(Effect.timed(acquire), ([waited]) => {
    const millis = Math.round(Duration.toMillis(waited))
    return millis > 0
      ? spanEvent("rate_limit.wait", { "deep_research.provider": provider, "deep_research.wait_ms": millis })
      : Effect.void
  })
