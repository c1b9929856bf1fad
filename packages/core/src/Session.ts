/**
 * A research session: everything a run has done, checkpointed after every phase, researcher and round, so that a
 * killed run resumes where it stopped. The Schema is versioned; stores migrate older versions on load.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as AST from "effect/SchemaAST"
import { InvalidInput, ResearchError } from "./Errors.js"
import { Brief, ClarificationRecord, Report, SupervisionRound } from "./Research.js"
import { ResearchConfig } from "./ResearchConfig.js"
import { Source } from "./Source.js"
import { Phase, PhaseMetrics, RoleUsage } from "./Usage.js"

/** The version written by this library. */
export const currentVersion = 1

/** Where a session stands. */
export const Status = Schema.Literal("running", "awaiting_clarification", "completed", "failed", "cancelled")
export type Status = typeof Status.Type

/** Ids: letters, digits, `-` and `_`, 1 to 128 characters. Nothing that could name another path. */
export const SessionId = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/),
  Schema.annotations({ identifier: "SessionId", description: "letters, digits, - and _ (at most 128)" })
)

const isSessionId = Schema.is(SessionId)

/** The id when it is a valid session id, else `InvalidInput` saying what an id may hold. */
export const validateId = (id: string): Effect.Effect<string, InvalidInput> => {
  if (isSessionId(id)) return Effect.succeed(id)
  // A hostile id can be long: it is shown shortened.
  const shown: string = id
  return Effect.fail(
    new InvalidInput({
      reason: `${JSON.stringify(shown.length > 40 ? `${shown.slice(0, 40)}…` : shown)} is not a session id (letters, digits, - and _, at most 128, not starting with - or _)`
    })
  )
}

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
  /** The phases that have finished; a resumed run never redoes them. */
  phasesCompleted: Schema.optionalWith(Schema.Array(Phase), { default: () => [] }),
  metrics: Schema.Array(PhaseMetrics),
  /** What every role spent over the whole session, across resumes. */
  usage: Schema.Array(RoleUsage),
  error: Schema.optional(ResearchError)
}) {}

// =============================================================================
// Encoding
// =============================================================================

type Encode = (value: unknown) => Either.Either<unknown, ParseResult.ParseIssue>

/**
 * An encoder that remembers what it gave for each object: a session's parts are immutable values, and most of them
 * (the config, every round and source so far) are the same objects from one checkpoint to the next.
 */
const remembering = (encode: Encode): Encode => {
  const known = new WeakMap<object, unknown>()
  return (value) => {
    if (typeof value !== "object" || value === null) return encode(value)
    if (known.has(value)) return Either.right(known.get(value))
    const encoded = encode(value)
    if (Either.isRight(encoded)) known.set(value, encoded.right)
    return encoded
  }
}

/** The element schema of a field that is a plain `Schema.Array`, whose elements are then encoded one by one. */
const elementOf = (field: Schema.Struct.Field): Schema.Schema<unknown> | undefined =>
  Schema.isSchema(field) &&
  AST.isTupleType(field.ast) &&
  field.ast.elements.length === 0 &&
  field.ast.rest.length === 1 &&
  field.ast.rest[0] !== undefined
    ? Schema.make<unknown>(field.ast.rest[0].type)
    : undefined

/** Encodes one field of a session: `None` when the encoded session has no such key. */
const fieldEncoders = Object.entries(Session.fields).map(([name, field]) => {
  const element = elementOf(field)
  if (element !== undefined) {
    const encodeElement = remembering(ParseResult.encodeUnknownEither(element))
    return { name, element: encodeElement, whole: undefined }
  }
  const encodeStruct = ParseResult.encodeUnknownEither(Schema.Struct({ [name]: field }))
  const whole = remembering((value) =>
    Either.map(encodeStruct({ [name]: value }), (encoded: { readonly [key: string]: unknown }) => encoded[name])
  )
  return { name, element: undefined, whole }
})

const encodeWhole = Schema.encode(Session)

/** The parts of a session encoded one by one, or `undefined` when any is refused (the whole encoding then says why). */
const encodeByParts = (session: Session): typeof Session.Encoded | undefined => {
  const encoded: Record<string, unknown> = {}
  for (const { name, element, whole } of fieldEncoders) {
    if (!Object.prototype.hasOwnProperty.call(session, name)) {
      // A missing optional field is left out, as the whole encoding does; anything else it refuses.
      if (whole === undefined) return undefined
      continue
    }
    const value: unknown = Reflect.get(session, name)
    if (element !== undefined) {
      if (!Array.isArray(value)) return undefined
      const elements = new Array<unknown>(value.length)
      for (let index = 0; index < value.length; index++) {
        const one = element(value[index])
        if (Either.isLeft(one)) return undefined
        elements[index] = one.right
      }
      encoded[name] = elements
    } else if (whole !== undefined) {
      const one = whole(value)
      if (Either.isLeft(one)) return undefined
      encoded[name] = one.right
    }
  }
  // The same fields in the same order as the whole encoding gives; checked by the tests against it.
  return encoded as typeof Session.Encoded
}

/**
 * Encodes a session exactly as `Schema.encode(Session)` does, with the same result and the same errors, without
 * encoding again the parts it already encoded in an earlier checkpoint (every round and source of a session is encoded
 * once, not at every checkpoint). Parts are values: a part changed in place would not be encoded again.
 */
export const encode = (session: Session): Effect.Effect<typeof Session.Encoded, ParseResult.ParseError> => {
  const encoded = session instanceof Session ? encodeByParts(session) : undefined
  return encoded === undefined ? encodeWhole(session) : Effect.succeed(encoded)
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
  error: Schema.optional(Schema.String)
}) {}

/** The listing line of a session. */
export const summarize = (session: Session): SessionSummary =>
  new SessionSummary({
    id: session.id,
    status: session.status,
    query: session.query,
    createdAt: session.createdAt,
    updatedAt: session.updatedAt,
    costUsd: session.usage.reduce((n, r) => n + r.costUsd, 0)
  })
