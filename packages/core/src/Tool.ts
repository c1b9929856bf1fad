/**
 * Tools a model may call: a name, a description and an Effect Schema for the arguments, from which the JSON schema
 * sent to the model is made. Arguments that come back are decoded with the same Schema before any use.
 */
import * as Either from "effect/Either"
import * as JSONSchema from "effect/JSONSchema"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"

/** What a model is told about a tool. `parameters` is a JSON schema object. */
export interface ToolDefinition {
  readonly name: string
  readonly description: string
  readonly parameters: JSONSchema.JsonSchema7Root
}

/** A tool with typed arguments. */
export interface Tool<A, I = A> {
  readonly name: string
  readonly description: string
  readonly schema: Schema.Schema<A, I>
  readonly definition: ToolDefinition
}

/** Makes a tool from a Schema of its arguments (a struct; optional fields should be `Schema.NullOr`). */
export const make = <A, I>(
  name: string,
  options: { readonly description: string; readonly schema: Schema.Schema<A, I> }
): Tool<A, I> => ({
  name,
  description: options.description,
  schema: options.schema,
  definition: { name, description: options.description, parameters: jsonSchemaOf(options.schema) }
})

// Schemas are immutable, and the same few are turned into JSON schemas on every structured call: once each is enough.
const jsonSchemas = new WeakMap<Schema.Schema.Any, JSONSchema.JsonSchema7Root>()

/**
 * The JSON schema of a Schema, with definitions inlined where possible, as model APIs expect. Made once per Schema
 * and shared: treat it as read-only.
 */
export const jsonSchemaOf = <A, I>(schema: Schema.Schema<A, I>): JSONSchema.JsonSchema7Root => {
  const known = jsonSchemas.get(schema)
  if (known !== undefined) return known
  const root = JSONSchema.make(schema, { target: "jsonSchema7" })
  const { $schema: _schema, ...rest } = root
  jsonSchemas.set(schema, rest)
  return rest
}

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
  return Schema.decodeUnknownEither(tool.schema, { onExcessProperty: "ignore" })(value).pipe(
    Either.mapLeft(
      (error) =>
        `The arguments of ${tool.name} do not match its schema:\n${ParseResult.TreeFormatter.formatErrorSync(error)}`
    )
  )
}
