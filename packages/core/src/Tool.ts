/**
 * Tools a model may call: a name, a description and an Effect Schema for the arguments, from which the JSON schema
 * sent to the model is made. Arguments that come back are decoded with the same Schema before any use.
 *
 * What goes on the wire is what the vendors document: a JSON schema with an object at its root, definitions inlined
 * (see `internal/text/wireSchema.ts`). A Schema whose values are not objects travels wrapped as `{ value }`, and every
 * answer is unwrapped here, on the way back, before it is decoded.
 */
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as WireSchema from "./internal/text/wireSchema.js"

/** A JSON schema with an object at its root. */
export type ObjectJsonSchema = WireSchema.ObjectJsonSchema

/** What a model is told about a tool. `parameters` is a JSON schema with an object at its root. */
export interface ToolDefinition {
  readonly name: string
  readonly description: string
  readonly parameters: ObjectJsonSchema
}

/** A tool with typed arguments. */
export interface Tool<A, I = A> {
  readonly name: string
  readonly description: string
  readonly schema: Schema.Schema<A, I>
  readonly definition: ToolDefinition
  /** True when the arguments are not an object and travel as `{ value }`. */
  readonly wrapped: boolean
}

/** Makes a tool from a Schema of its arguments (a struct; optional fields should be `Schema.NullOr`). */
export const make = <A, I>(
  name: string,
  options: { readonly description: string; readonly schema: Schema.Schema<A, I> }
): Tool<A, I> => {
  const wire = wireSchemaOf(options.schema)
  return {
    name,
    description: options.description,
    schema: options.schema,
    definition: { name, description: options.description, parameters: wire.schema },
    wrapped: wire.wrapped
  }
}

// Schemas are immutable, and the same few are turned into JSON schemas on every structured call: once each is enough.
const wireSchemas = new WeakMap<Schema.Schema.Any, WireSchema.WireSchema>()

/**
 * The JSON schema sent for a Schema and whether its values travel wrapped as `{ value }`. Made once per Schema and
 * shared: treat it as read-only.
 */
export const wireSchemaOf = <A, I>(schema: Schema.Schema<A, I>): WireSchema.WireSchema => {
  const known = wireSchemas.get(schema)
  if (known !== undefined) return known
  const made = WireSchema.make(schema)
  wireSchemas.set(schema, made)
  return made
}

/** The JSON schema sent for a Schema: an object at its root, definitions inlined. */
export const jsonSchemaOf = <A, I>(schema: Schema.Schema<A, I>): ObjectJsonSchema => wireSchemaOf(schema).schema

/** A value a model wrote against `wireSchemaOf(schema)`, as the Schema reads it (a wrapped value is taken out). */
export const unwrapAnswer = <A, I>(schema: Schema.Schema<A, I>, value: unknown): unknown =>
  WireSchema.unwrap(wireSchemaOf(schema), value)

/**
 * Decodes a tool call's arguments. A string (arguments a provider could not parse as JSON) is parsed here; what does
 * not decode is a readable message for the model, never a crash.
 */
export const decodeArguments = <A, I>(tool: Tool<A, I>, args: unknown): Either.Either<A, string> => {
  let value = args
  if (typeof args === "string") {
    try {
      value = args.trim() === "" ? {} : JSON.parse(args)
    } catch {
      return Either.left(`The arguments of ${tool.name} are not valid JSON: ${args.slice(0, 200)}`)
    }
  }
  return Schema.decodeUnknownEither(tool.schema, { onExcessProperty: "ignore" })(unwrapAnswer(tool.schema, value)).pipe(
    Either.mapLeft(
      (error) =>
        `The arguments of ${tool.name} do not match its schema:\n${ParseResult.TreeFormatter.formatErrorSync(error)}`
    )
  )
}
