/**
 * The progress stream. The pipeline publishes an event for every phase, round, directive, researcher turn, tool
 * call, source, retry, breaker change and budget warning; the CLI renders them, the session store keeps them.
 * Each event carries the session it belongs to (taken from the fiber that publishes it) and a timestamp.
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FiberRef from "effect/FiberRef"
import { dual } from "effect/Function"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as PubSub from "effect/PubSub"
import type * as Queue from "effect/Queue"
import * as Schema from "effect/Schema"
import * as AST from "effect/SchemaAST"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { Novelty } from "./Source.js"
import { Phase } from "./Usage.js"

// =============================================================================
// Events
// =============================================================================

const common = {
  sessionId: Schema.optional(Schema.String),
  timestamp: Schema.Number
}

const event = <Tag extends string, Fields extends Schema.Struct.Fields>(tag: Tag, fields: Fields) =>
  Schema.TaggedStruct(tag, { ...common, ...fields })

export const SessionStarted = event("SessionStarted", { query: Schema.String })
/** The trace a run of the session is exported under (W3C ids), so that a resumed run can link to it. */
export const TraceStarted = event("TraceStarted", { traceId: Schema.String, spanId: Schema.String })
export const PhaseStarted = event("PhaseStarted", { phase: Phase })
export const PhaseCompleted = event("PhaseCompleted", {
  phase: Phase,
  durationMillis: Schema.Number,
  calls: Schema.Number,
  tokens: Schema.Number,
  costUsd: Schema.Number
})
export const ClarificationAsked = event("ClarificationAsked", { question: Schema.String })
export const ClarificationResolved = event("ClarificationResolved", {
  needed: Schema.Boolean,
  answered: Schema.Boolean,
  verification: Schema.String
})
export const BriefWritten = event("BriefWritten", { brief: Schema.String, fallback: Schema.Boolean })
export const RoundStarted = event("RoundStarted", { round: Schema.Number })
export const DirectiveIssued = event("DirectiveIssued", {
  round: Schema.Number,
  directiveId: Schema.String,
  topic: Schema.String,
  priority: Schema.Number
})
export const ResearcherStarted = event("ResearcherStarted", { directiveId: Schema.String, topic: Schema.String })
export const ResearcherTurn = event("ResearcherTurn", {
  directiveId: Schema.String,
  turn: Schema.Number,
  toolCalls: Schema.Array(Schema.String),
  remainingToolCalls: Schema.Number
})
export const ToolCalled = event("ToolCalled", {
  directiveId: Schema.String,
  tool: Schema.String,
  detail: Schema.String
})
/** A tool call whose arguments did not decode: the model is told, and so is whoever watches. */
export const ToolCallRejected = event("ToolCallRejected", {
  /** `supervisor`, or the directive id of the researcher that made the call. */
  unit: Schema.String,
  tool: Schema.String,
  error: Schema.String
})
export const SourceFound = event("SourceFound", {
  directiveId: Schema.String,
  sourceId: Schema.String,
  url: Schema.String,
  title: Schema.String,
  novelty: Novelty
})
export const ResearcherCompleted = event("ResearcherCompleted", {
  directiveId: Schema.String,
  stopReason: Schema.String,
  sources: Schema.Number,
  toolCalls: Schema.Number,
  compressed: Schema.Boolean
})
export const ResearcherFailed = event("ResearcherFailed", { directiveId: Schema.String, error: Schema.String })
export const RoundCompleted = event("RoundCompleted", {
  round: Schema.Number,
  completed: Schema.Number,
  failed: Schema.Number
})
export const SupervisionStopped = event("SupervisionStopped", { reason: Schema.String, rounds: Schema.Number })
export const Retrying = event("Retrying", {
  provider: Schema.String,
  attempt: Schema.Number,
  delayMillis: Schema.Number,
  error: Schema.String
})
export const CircuitChanged = event("CircuitChanged", {
  provider: Schema.String,
  state: Schema.Literal("closed", "open", "half_open")
})
export const ProviderSkipped = event("ProviderSkipped", { provider: Schema.String, reason: Schema.String })
/** A model's server refused a capability; the model goes on without it (action protocol, prompted JSON). */
export const ModelFallback = event("ModelFallback", {
  provider: Schema.String,
  model: Schema.String,
  capability: Schema.Literal("toolCalling", "structuredOutput"),
  reason: Schema.String
})
export const ContextWindowRecovered = event("ContextWindowRecovered", {
  model: Schema.String,
  attempt: Schema.Number,
  tokens: Schema.Number
})
export const BudgetWarning = event("BudgetWarning", {
  /**
   * What happened: 80% of what research may spend is spent ("warning"), research stopped to keep the report's reserve
   * ("research_stopped"), or what was left could not hold a report of useful length ("report_short"). Events stored
   * before the field are warnings.
   */
  level: Schema.optionalWith(Schema.Literal("warning", "research_stopped", "report_short"), {
    default: () => "warning"
  }),
  budget: Schema.Literal("tokens", "usd"),
  spent: Schema.Number,
  limit: Schema.Number
})
export const UsageUpdated = event("UsageUpdated", { tokens: Schema.Number, costUsd: Schema.Number })
export const Checkpointed = event("Checkpointed", { label: Schema.String })
export const ReportWritten = event("ReportWritten", {
  characters: Schema.Number,
  citations: Schema.Number,
  droppedCitations: Schema.Number,
  /** The sources the report was written from; absent from events stored before it was recorded. */
  sources: Schema.optional(Schema.Number),
  /** Why the report rests on no source, when it does (see `Research.UngroundedReason`). */
  ungrounded: Schema.optional(Schema.String)
})
/** A long report's plan: the sections it is written in, in order, and its target length in words. */
export const ReportPlanned = event("ReportPlanned", { sections: Schema.Array(Schema.String), words: Schema.Number })
/** A part of a long report was written: a section (its place among `sections`), the introduction or the conclusion. */
export const ReportSectionWritten = event("ReportSectionWritten", {
  part: Schema.Literal("section", "introduction", "conclusion"),
  title: Schema.String,
  index: Schema.Number,
  sections: Schema.Number,
  words: Schema.Number
})
export const SessionAwaitingClarification = event("SessionAwaitingClarification", { question: Schema.String })
/** The plan waits for the user's review (`review`), before any search. */
export const SessionAwaitingReview = event("SessionAwaitingReview", {
  brief: Schema.String,
  directives: Schema.Array(Schema.String)
})
/** The plan was reviewed: approved, edited, cancelled, or not answered (nobody could, and the run went on). */
export const PlanReviewed = event("PlanReviewed", {
  decision: Schema.Literal("approved", "edited", "cancelled", "unanswered")
})
/** The source policy removed results or pages (the run's totals so far). */
export const SourcesRemoved = event("SourcesRemoved", { removed: Schema.Number, total: Schema.Number })
export const SessionCompleted = event("SessionCompleted", {
  durationMillis: Schema.Number,
  tokens: Schema.Number,
  costUsd: Schema.Number
})
export const SessionFailed = event("SessionFailed", { error: Schema.String })
export const SessionCancelled = event("SessionCancelled", {})

/** Any progress event. */
export const ResearchEvent = Schema.Union(
  SessionStarted,
  TraceStarted,
  PhaseStarted,
  PhaseCompleted,
  ClarificationAsked,
  ClarificationResolved,
  BriefWritten,
  RoundStarted,
  DirectiveIssued,
  ResearcherStarted,
  ResearcherTurn,
  ToolCalled,
  ToolCallRejected,
  SourceFound,
  ResearcherCompleted,
  ResearcherFailed,
  RoundCompleted,
  SupervisionStopped,
  Retrying,
  CircuitChanged,
  ProviderSkipped,
  ModelFallback,
  ContextWindowRecovered,
  BudgetWarning,
  UsageUpdated,
  Checkpointed,
  ReportWritten,
  ReportPlanned,
  ReportSectionWritten,
  SessionAwaitingClarification,
  SessionAwaitingReview,
  PlanReviewed,
  SourcesRemoved,
  SessionCompleted,
  SessionFailed,
  SessionCancelled
)
export type ResearchEvent = typeof ResearchEvent.Type

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never

/** An event as published: the session and the timestamp are filled in. */
export type EventInput = DistributiveOmit<ResearchEvent, "sessionId" | "timestamp">

const encodeAnyJson = Schema.encodeSync(Schema.parseJson(ResearchEvent))

// Each kind of event by its tag, encoded by its own schema: the union's encoding would find it the same way, at a
// fifth of the cost of the whole again (every event of a run is encoded for the session's log).
const encodersByTag = new Map<unknown, (event: ResearchEvent) => Either.Either<unknown, ParseResult.ParseIssue>>(
  ResearchEvent.members.map((member) => {
    const ast = member.ast
    const tag = AST.isTypeLiteral(ast) ? ast.propertySignatures.find((ps) => ps.name === "_tag")?.type : undefined
    const encode = ParseResult.encodeUnknownEither(Schema.make<unknown>(ast))
    return [tag !== undefined && AST.isLiteral(tag) ? tag.literal : undefined, encode]
  })
)

/** Encodes an event as one JSON line; throws, as `Schema.encodeSync` does, when the event is not one. */
export const encodeJson = (event: ResearchEvent): string => {
  const encoded = encodersByTag.get(event._tag)?.(event)
  // Anything the kind's own schema refuses, the union's encoding refuses too, and says why in its own words.
  return encoded !== undefined && Either.isRight(encoded) ? JSON.stringify(encoded.right) : encodeAnyJson(event)
}

/** Decodes an event from one JSON line. */
export const decodeJson = Schema.decodeUnknown(Schema.parseJson(ResearchEvent))

// =============================================================================
// Service
// =============================================================================

/** The session the current fiber works for; events published from it carry this id. */
export const currentSessionId: FiberRef.FiberRef<Option.Option<string>> = FiberRef.unsafeMake(Option.none<string>())

/** Runs an effect on behalf of a session. */
export const withSessionId: {
  (sessionId: string): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  <A, E, R>(self: Effect.Effect<A, E, R>, sessionId: string): Effect.Effect<A, E, R>
} = dual(2, <A, E, R>(self: Effect.Effect<A, E, R>, sessionId: string): Effect.Effect<A, E, R> =>
  Effect.locally(self, currentSessionId, Option.some(sessionId))
)

/** The progress stream. */
export interface Service {
  readonly publish: (event: EventInput) => Effect.Effect<void>
  /** A subscription from now on; events published before it are not seen. */
  readonly subscribe: Effect.Effect<Queue.Dequeue<ResearchEvent>, never, Scope.Scope>
}

/**
 * The progress stream in context. A tag rather than an `Effect.Service`: besides `layer`'s stream, the pipeline
 * provides a view of its own (each event appended to the session's log before it is published) and tests provide
 * recorders, which a service's branded instances would force through its constructor.
 */
export class ResearchEvents extends Context.Tag("@deep-research/core/ResearchEvents")<ResearchEvents, Service>() {}

/** A progress stream over an unbounded PubSub. */
export const make: Effect.Effect<Service> = Effect.map(PubSub.unbounded<ResearchEvent>(), (pubsub) => ({
  // Every event of a run passes here: one runtime step reads the session and the time, and the unbounded PubSub
  // takes the event there and then (`PubSub.publish` would be a step of its own, and another to discard its result).
  publish: (input) =>
    Effect.withFiberRuntime((fiber) => {
      const id = fiber.getFiberRef(currentSessionId)
      const event = {
        ...input,
        timestamp: Context.get(fiber.currentDefaultServices, Clock.Clock).unsafeCurrentTimeMillis(),
        ...(Option.isSome(id) ? { sessionId: id.value } : {})
      } as ResearchEvent
      // Refused only once the PubSub is shut down, where `PubSub.publish` interrupts its caller.
      return pubsub.unsafeOffer(event) ? Effect.void : Effect.interrupt
    }),
  subscribe: PubSub.subscribe(pubsub)
}))

/** A fresh progress stream. */
export const layer: Layer.Layer<ResearchEvents> = Layer.effect(ResearchEvents, make)

/** Publishes through the stream in context, if there is one. */
export const publish = (event: EventInput): Effect.Effect<void> =>
  // One runtime step to find the stream: every event of every run passes here.
  Effect.withFiberRuntime((fiber) => {
    const events = Context.getOption(fiber.currentContext, ResearchEvents)
    return Option.isSome(events) ? events.value.publish(event) : Effect.void
  })

/** The events from now on, as a stream. */
export const stream: Stream.Stream<ResearchEvent, never, ResearchEvents> = Stream.unwrapScoped(
  Effect.map(
    Effect.flatMap(ResearchEvents, (events) => events.subscribe),
    (queue) => Stream.fromQueue(queue)
  )
)
