/**
 * A research session: everything a run has done, checkpointed after every phase, researcher and round, so that a
 * killed run resumes where it stopped. The Schema is versioned; stores migrate older versions on load.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import * as AST from "effect/SchemaAST"
import { ResearchInvalidInput, ResearchError } from "./Errors.js"
import {
  Brief,
  ClarificationRecord,
  Continuation,
  FollowUpAnswer,
  Grounding,
  Report,
  ReportVersion,
  SupervisionRound,
  Verification
} from "./Research.js"
import { ResearchConfig } from "./ResearchConfig.js"
import { Source } from "./Source.js"
import { Removals } from "./SourcePolicy.js"
import { Phase, PhaseMetrics, RoleUsage } from "./Usage.js"

/** The version written by this library. */
export const currentVersion = 1

/**
 * Where a session stands. `queued`: asked for and stored, its research not begun (a server stores a session so before
 * it gives out its id); `resume` begins it. `awaiting_review`: its brief and first directives wait for the user's
 * approval before any search (`review`).
 */
export const Status = Schema.Literal(
  "queued",
  "running",
  "awaiting_clarification",
  "awaiting_review",
  "completed",
  "failed",
  "cancelled"
)
export type Status = typeof Status.Type

/** Ids: letters, digits, `-` and `_`, 1 to 128 characters. Nothing that could name another path. */
export const SessionId = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/),
  Schema.annotations({ identifier: "SessionId", description: "letters, digits, - and _ (at most 128)" })
)

const isSessionId = Schema.is(SessionId)

/** The id when it is a valid session id, else `ResearchInvalidInput` saying what an id may hold. */
export const validateId = (id: string): Effect.Effect<string, ResearchInvalidInput> => {
  if (isSessionId(id)) return Effect.succeed(id)
  // A hostile id can be long: it is shown shortened.
  const shown: string = id
  return Effect.fail(
    new ResearchInvalidInput({
      reason: `${JSON.stringify(shown.length > 40 ? `${shown.slice(0, 40)}…` : shown)} is not a session id (letters, digits, - and _, at most 128, not starting with - or _)`
    })
  )
}

/**
 * The review of a run's plan (its brief and first directives) before any search: `pending` while it waits, then
 * `approved` as it was, `edited`, or `unanswered` when nobody could answer and the run went on as planned.
 */
export class PlanReview extends Schema.Class<PlanReview>("@deep-research/core/PlanReview")({
  decision: Schema.Literal("pending", "approved", "edited", "unanswered"),
  /** The brief and the directives' topics as the supervisor first wrote them, when the user edited them. */
  originalBrief: Schema.optional(Schema.String),
  originalDirectives: Schema.optional(Schema.Array(Schema.String))
}) {}

/** A research session. */
export class Session extends Schema.Class<Session>("@deep-research/core/Session")({
  version: Schema.Literal(currentVersion),
  id: SessionId,
  query: Schema.String,
  createdAt: Schema.Number,
  updatedAt: Schema.Number,
  config: ResearchConfig,
  status: Status,
  clarification: Schema.optional(ClarificationRecord),
  brief: Schema.optional(Brief),
  /** True when the brief is the original query because the brief phase failed. */
  briefFallback: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  rounds: Schema.Array(SupervisionRound),
  /** Why supervision stopped, once it has. */
  supervisionStopReason: Schema.optional(Schema.String),
  sources: Schema.Array(Source),
  report: Schema.optional(Report),
  /** The check of the report's cited sentences against their sources; absent when it was off or not run. */
  verification: Schema.optional(Verification),
  /** The phases that have finished; a resumed run never redoes them. */
  phasesCompleted: Schema.optionalWith(Schema.Array(Phase), { default: () => [] }),
  metrics: Schema.Array(PhaseMetrics),
  /** What every role spent over the whole session, across resumes. */
  usage: Schema.Array(RoleUsage),
  error: Schema.optional(ResearchError),
  /** The review of the plan, when the run asked for one (`review`). */
  review: Schema.optional(PlanReview),
  /** What the source policy removed, when the run has one and it removed anything. */
  sourcePolicyRemovals: Schema.optional(Removals),
  /** Follow-up questions answered from the session's stored sources (`FollowUp.ask`), in the order asked. */
  answers: Schema.optionalWith(Schema.Array(FollowUpAnswer), { default: () => [] }),
  /** Directions the finished session was asked to research further (`Pipeline.extend`), in order. */
  continuations: Schema.optionalWith(Schema.Array(Continuation), { default: () => [] }),
  /** The earlier versions of the report, oldest first; `report` is the newest. */
  reportVersions: Schema.optionalWith(Schema.Array(ReportVersion), { default: () => [] })
}) {}

// =============================================================================
// Encoding
// =============================================================================

type Encode = (value: unknown) => Either.Either<unknown, ParseResult.ParseIssue>

/** An encoding that gave up: the whole encoding then runs, and says why. */
const refused = Symbol("refused")
type Encoded = unknown | typeof refused

/**
 * An encoder that remembers what it gave for each object: a session's parts are immutable values, and most of them
 * (the config, every round, result and source so far) are the same objects from one checkpoint to the next.
 */
const remembering = (encode: (value: unknown) => Encoded): ((value: unknown) => Encoded) => {
  const known = new WeakMap<object, unknown>()
  return (value) => {
    if (typeof value !== "object" || value === null) return encode(value)
    if (known.has(value)) return known.get(value)
    const encoded = encode(value)
    if (encoded !== refused) known.set(value, encoded)
    return encoded
  }
}

const fromEither = (encoded: Either.Either<unknown, ParseResult.ParseIssue>): Encoded =>
  Either.isRight(encoded) ? encoded.right : refused

/** Text, numbers, literals and arrays of them: nothing worth remembering, encoded together in one pass. */
const isPlain = (ast: AST.AST): boolean => {
  switch (ast._tag) {
    case "Literal":
    case "StringKeyword":
    case "NumberKeyword":
    case "BooleanKeyword":
    case "UndefinedKeyword":
      return true
    case "Refinement":
      return isPlain(ast.from)
    case "Union":
      return ast.types.every(isPlain)
    case "TupleType":
      return ast.elements.every((element) => isPlain(element.type)) && ast.rest.every((rest) => isPlain(rest.type))
    default:
      return false
  }
}

/** An array's elements: their AST, and the schema the array was made with (a class stays a class). */
interface Element {
  readonly ast: AST.AST
  readonly schema: unknown
}

/** The elements of a field that is a plain `Schema.Array`, which are then encoded one by one. */
const elementOf = (field: Schema.Struct.Field): Element | undefined => {
  if (!Schema.isSchema(field) || !AST.isTupleType(field.ast) || field.ast.elements.length > 0) return undefined
  const [rest, ...more] = field.ast.rest
  if (rest === undefined || more.length > 0) return undefined
  return { ast: rest.type, schema: Predicate.hasProperty(field, "value") ? field.value : undefined }
}

/** The fields of a `Schema.Class` (its constructor, whose instances are then encoded field by field). */
const classFieldsOf = ({ ast, schema }: Element): Schema.Struct.Fields | undefined =>
  AST.isTransformation(ast) &&
  AST.isDeclaration(ast.to) &&
  Schema.isSchema(schema) &&
  schema.ast === ast &&
  Predicate.hasProperty(schema, "fields") &&
  Predicate.isRecord(schema.fields)
    ? // A class's own fields, as `Schema.Class` keeps them.
      (schema.fields as Schema.Struct.Fields)
    : undefined

/** Encodes an element: a class's instance field by field, anything else as its schema does; remembered either way. */
const elementEncoder = (element: Element): ((value: unknown) => Encoded) => {
  const fields = classFieldsOf(element)
  const constructor = element.schema
  if (fields === undefined || typeof constructor !== "function") {
    const encode: Encode = ParseResult.encodeUnknownEither(Schema.make<unknown>(element.ast))
    return remembering((value) => fromEither(encode(value)))
  }
  const encodeFields = fieldsEncoder(fields)
  // Anything but an instance of the class: the whole encoding decides what it makes of it.
  return remembering((value) =>
    typeof value === "object" && value !== null && value instanceof constructor ? encodeFields(value) : refused
  )
}

/**
 * Encodes an object of `fields` as `Schema.Struct(fields)` does: the plain fields together, arrays element by element,
 * other parts whole, the parts remembered; the keys in the order of the fields, as the struct gives them.
 */
const fieldsEncoder = (fields: Schema.Struct.Fields): ((value: object) => Encoded) => {
  const plainFields: Record<string, Schema.Struct.Field> = {}
  const steps: Array<
    | { readonly name: string; readonly plain: true }
    | {
        readonly name: string
        readonly plain: false
        readonly elements: boolean
        readonly encode: (value: unknown) => Encoded
      }
  > = []
  for (const [name, field] of Object.entries(fields)) {
    const alone = Schema.Struct({ [name]: field })
    const element = elementOf(field)
    if (element !== undefined) {
      steps.push({ name, plain: false, elements: true, encode: elementEncoder(element) })
    } else if (AST.encodedAST(alone.ast)._tag === "TypeLiteral" && isPlain(encodedFieldOf(alone.ast, name))) {
      plainFields[name] = field
      steps.push({ name, plain: true })
    } else {
      const encodeAlone: Encode = ParseResult.encodeUnknownEither(Schema.make<unknown>(alone.ast))
      steps.push({
        name,
        plain: false,
        elements: false,
        encode: remembering((value) =>
          fromEither(Either.map(encodeAlone({ [name]: value }), (encoded) => Reflect.get(Object(encoded), name)))
        )
      })
    }
  }
  const encodePlain: Encode = ParseResult.encodeUnknownEither(Schema.make<unknown>(Schema.Struct(plainFields).ast))
  return (value) => {
    const plain = encodePlain(value)
    if (Either.isLeft(plain)) return refused
    const plainEncoded: object = Object(plain.right)
    const encoded: Record<string, unknown> = {}
    for (const step of steps) {
      const { name } = step
      if (step.plain) {
        if (Object.prototype.hasOwnProperty.call(plainEncoded, name)) encoded[name] = Reflect.get(plainEncoded, name)
        continue
      }
      // A missing part: left out when it is optional; anything else the whole encoding refuses, and says why.
      if (!Object.prototype.hasOwnProperty.call(value, name)) {
        if (step.elements) return refused
        continue
      }
      const part: unknown = Reflect.get(value, name)
      if (step.elements) {
        if (!Array.isArray(part)) return refused
        const elements = new Array<unknown>(part.length)
        for (let index = 0; index < part.length; index++) {
          const one = step.encode(part[index])
          if (one === refused) return refused
          elements[index] = one
        }
        encoded[name] = elements
      } else {
        const one = step.encode(part)
        if (one === refused) return refused
        encoded[name] = one
      }
    }
    return encoded
  }
}

/** The encoded type of field `name` in a one-field struct's AST. */
const encodedFieldOf = (ast: AST.AST, name: string): AST.AST => {
  const encoded = AST.encodedAST(ast)
  const signature = AST.isTypeLiteral(encoded) ? encoded.propertySignatures.find((ps) => ps.name === name) : undefined
  return signature === undefined ? encoded : signature.type
}

const encodeSessionFields = fieldsEncoder(Session.fields)

const encodeWhole = Schema.encode(Session)

/**
 * Encodes a session exactly as `Schema.encode(Session)` does, with the same result and the same errors, without
 * encoding again the parts it already encoded in an earlier checkpoint (every round and source of a session is encoded
 * once, not at every checkpoint). Parts are values: a part changed in place would not be encoded again.
 */
export const encode = (session: Session): Effect.Effect<typeof Session.Encoded, ParseResult.ParseError> => {
  const encoded = session instanceof Session ? encodeSessionFields(session) : refused
  // The same fields in the same order as the whole encoding gives (the tests hold it to that).
  return encoded === refused ? encodeWhole(session) : Effect.succeed(encoded as typeof Session.Encoded)
}

/** Where a listed session stands: its status, or `corrupt` when its stored file cannot be read back. */
export const SummaryStatus = Schema.Literal(...Status.literals, "corrupt", "unreadable", "interrupted")
export type SummaryStatus = typeof SummaryStatus.Type

/** A line of a session listing. */
export class SessionSummary extends Schema.Class<SessionSummary>("@deep-research/core/SessionSummary")({
  id: Schema.String,
  status: SummaryStatus,
  query: Schema.String,
  createdAt: Schema.Number,
  updatedAt: Schema.Number,
  costUsd: Schema.Number,
  /** Why the session cannot be read, when the status is `corrupt` (bad content) or `unreadable` (the system refused). */
  error: Schema.optional(Schema.String),
  /** What its report stands on, once it has one that recorded it. */
  grounding: Schema.optional(Grounding),
  /** Made by a simulated run: the store keeps `SessionStore.simulatedMark` beside it (set by the store's `list`). */
  simulated: Schema.optional(Schema.Boolean)
}) {}

/** The listing line of a session. */
export const summarize = (session: Session): SessionSummary =>
  new SessionSummary({
    id: session.id,
    status: session.status,
    query: session.query,
    createdAt: session.createdAt,
    updatedAt: session.updatedAt,
    costUsd: session.usage.reduce((n, r) => n + r.costUsd, 0),
    ...(session.report?.grounding === undefined ? {} : { grounding: session.report.grounding })
  })
