/**
 * What a run tells a tracing backend: the attributes of its spans and its metrics, on Effect's own tracer and metric
 * registry (the CLI exports both over OTLP). Model calls carry the OpenTelemetry GenAI semantic conventions
 * (`gen_ai.*`, as named by `@opentelemetry/semantic-conventions/incubating`); the rest is under `deep_research.*`.
 * Prompt and page text go out only when `CaptureContent` is on.
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as Metric from "effect/Metric"
import type * as MetricLabel from "effect/MetricLabel"
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
import * as Spans from "./Spans.js"
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

const clockOf = (fiber: Fiber.RuntimeFiber<unknown, unknown>): Clock.Clock =>
  Context.get(fiber.currentDefaultServices, Clock.Clock)

/** Counts a request and its error, and times it, under `kind` and `provider`; returns the error's type. */
const countRequest = (
  span: Tracer.Span,
  kind: string,
  provider: string,
  exit: Exit.Exit<unknown, unknown>,
  seconds: number,
  labels: ReadonlyArray<MetricLabel.MetricLabel>
): string | undefined => {
  const tags = { [attributes.requestKind]: kind, [attributes.providerName]: provider }
  withTags(requests, tags).unsafeUpdate(1, labels)
  withTags(requestDuration, tags).unsafeUpdate(seconds, labels)
  if (Exit.isSuccess(exit)) return undefined
  const type = causeType(exit.cause)
  withTags(requestErrors, { ...tags, [attributes.errorType]: type }).unsafeUpdate(1, labels)
  span.attribute(attributes.errorType, type)
  return type
}

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

const annotateCompletion = (span: Tracer.Span, completion: LanguageModel.Completion, costUsd: number): void => {
  span.attribute(attributes.responseModel, completion.model)
  span.attribute(attributes.finishReasons, [completion.finishReason])
  span.attribute(attributes.inputTokens, completion.usage.inputTokens)
  span.attribute(attributes.outputTokens, completion.usage.outputTokens)
  span.attribute(attributes.cacheReadInputTokens, completion.usage.cachedInputTokens)
  span.attribute(attributes.reasoningOutputTokens, completion.usage.reasoningTokens)
  span.attribute(attributes.costUsd, costUsd)
}

const recordSuccess = (
  call: ModelCall,
  completion: LanguageModel.Completion,
  seconds: number,
  costUsd: number,
  labels: ReadonlyArray<MetricLabel.MetricLabel>
): void => {
  const instruments = modelCallInstruments(call.role, call.provider, call.model, completion.model)
  const { inputTokens, outputTokens } = completion.usage
  instruments.requests.unsafeUpdate(1, labels)
  instruments.requestDuration.unsafeUpdate(seconds, labels)
  instruments.operationDuration.unsafeUpdate(seconds, labels)
  instruments.inputTokenUsage.unsafeUpdate(inputTokens, labels)
  instruments.outputTokenUsage.unsafeUpdate(outputTokens, labels)
  instruments.inputTokens.unsafeUpdate(inputTokens, labels)
  instruments.outputTokens.unsafeUpdate(outputTokens, labels)
  instruments.cost.unsafeUpdate(costUsd, labels)
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
  Spans.timed(
    `chat ${call.model}`,
    {
      kind: "client",
      captureStackTrace: false,
      attributes: {
        [attributes.operationName]: "chat",
        [attributes.providerName]: call.provider,
        [attributes.system]: call.provider,
        [attributes.requestModel]: call.model,
        [attributes.role]: call.role,
        ...(call.request.maxOutputTokens === undefined
          ? {}
          : { [attributes.requestMaxTokens]: call.request.maxOutputTokens })
      }
    },
    effect,
    (span, fiber) => {
      const capture = Context.get(fiber.currentContext, CaptureContent)
      if (capture) {
        const system = TelemetryContent.systemInstructions(call.request)
        span.attribute(attributes.inputMessages, TelemetryContent.inputMessages(call.request))
        if (system !== undefined) span.attribute(attributes.systemInstructions, system)
      }
      const sessionId = fiber.getFiberRef(ResearchEvents.currentSessionId)
      if (Option.isSome(sessionId)) {
        span.attribute(attributes.sessionId, sessionId.value)
        span.attribute(attributes.conversationId, sessionId.value)
      }
      return { capture, context: fiber.currentContext }
    },
    (span, exit, seconds, labels, started) => {
      if (Exit.isFailure(exit)) {
        const error = countRequest(span, "model", call.provider, exit, seconds, labels)
        withTags(clientOperationDuration, {
          ...conventionTags(call),
          ...(error === undefined ? {} : { [attributes.errorType]: error })
        }).unsafeUpdate(seconds, labels)
        return
      }
      const costUsd = costOf(exit.value)
      onSuccess?.(exit.value, costUsd, started.context)
      annotateCompletion(span, exit.value, costUsd)
      if (started.capture) span.attribute(attributes.outputMessages, TelemetryContent.outputMessages(exit.value))
      recordSuccess(call, exit.value, seconds, costUsd, labels)
    }
  )

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
  Spans.timed(
    `${kind} ${provider}`,
    {
      kind: "client",
      captureStackTrace: false,
      attributes: {
        [attributes.requestKind]: kind,
        [attributes.providerName]: provider,
        ...(details.urls === undefined ? {} : { "deep_research.extract.urls": [...details.urls] })
      }
    },
    effect,
    (span, fiber) => {
      const sessionId = fiber.getFiberRef(ResearchEvents.currentSessionId)
      if (Option.isSome(sessionId)) span.attribute(attributes.sessionId, sessionId.value)
      if (details.query !== undefined && Context.get(fiber.currentContext, CaptureContent)) {
        span.attribute("deep_research.search.query", details.query)
      }
    },
    (span, exit, seconds, labels) => {
      countRequest(span, kind, provider, exit, seconds, labels)
    }
  )

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
  Effect.withFiberRuntime((fiber) => {
    const span = fiber.currentSpan
    if (span?._tag === "Span") span.event(name, clockOf(fiber).unsafeCurrentTimeNanos(), eventAttributes)
    return Effect.void
  })

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
  Effect.clockWith((clock) => {
    const startedAt = clock.unsafeCurrentTimeMillis()
    return Effect.flatMap(acquire, () => {
      const waited = clock.unsafeCurrentTimeMillis() - startedAt
      return waited > 0
        ? spanEvent("rate_limit.wait", { "deep_research.provider": provider, "deep_research.wait_ms": waited })
        : Effect.void
    })
  })
