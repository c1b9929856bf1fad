/**
 * OpenAI's strict mode (`strict: true` on a function tool or a `json_schema` response format) takes a subset of JSON
 * Schema, as its Structured Outputs guide documents: an object at the root, every property listed in `required`,
 * `additionalProperties: false` on every object, and only these keywords beyond the structural ones: `pattern` and
 * `format` on strings; `multipleOf`, `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum` on numbers;
 * `minItems` and `maxItems` on arrays. Optional properties become required and nullable, and the `null`s the model
 * then writes are removed from its answer before it is decoded.
 *
 * A schema is sent strict only when nothing that decides what decodes is lost on the way: a schema with `minLength`,
 * `uniqueItems`, a map or a tuple is sent without `strict`, since a strict model could then write what the library
 * refuses.
 */
import * as Predicate from "effect/Predicate"

type Node = Readonly<Record<string, unknown>>

/**
 * The caller's schemas that went out in strict mode with a request (the response format's, and each strict tool's by
 * name): the model's answers against them are tidied of the `null`s strict mode made it write.
 */
export interface SentSchemas {
  readonly responseSchema: object | undefined
  readonly strictTools: ReadonlyMap<string, object>
}

/** Keywords that only describe: dropped in strict mode without changing what decodes. */
const annotationKeywords: ReadonlySet<string> = new Set(["$schema", "$id", "$comment", "default", "examples"])

/** Keywords strict mode accepts, as the guide lists them (structure, annotations and the supported constraints). */
export const strictKeywords: ReadonlySet<string> = new Set([
  "type",
  "properties",
  "required",
  "additionalProperties",
  "items",
  "enum",
  "const",
  "anyOf",
  "$ref",
  "$defs",
  "definitions",
  "title",
  "description",
  "pattern",
  "format",
  "multipleOf",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "minItems",
  "maxItems"
])

/** String formats strict mode knows. */
export const strictFormats: ReadonlySet<string> = new Set([
  "date-time",
  "time",
  "date",
  "duration",
  "email",
  "hostname",
  "ipv4",
  "ipv6",
  "uuid"
])

class NotStrict {
  readonly _tag = "NotStrict"
}

const nullable = (schema: Node): Node => {
  const type = schema["type"]
  if (typeof type === "string") {
    const values = schema["enum"]
    return {
      ...schema,
      type: [type, "null"],
      ...(Array.isArray(values) && !values.includes(null) ? { enum: [...values, null] } : {})
    }
  }
  if (Array.isArray(type)) return type.includes("null") ? schema : { ...schema, type: [...type, "null"] }
  const anyOf = schema["anyOf"]
  if (Array.isArray(anyOf)) {
    const hasNull = anyOf.some((member) => Predicate.isRecord(member) && member["type"] === "null")
    return hasNull ? schema : { ...schema, anyOf: [...anyOf, { type: "null" }] }
  }
  return { anyOf: [schema, { type: "null" }] }
}

/** The node a local JSON pointer (`#/$defs/a~1b`) names. */
const resolvePointer = (root: unknown, pointer: string): unknown =>
  pointer
    .slice(2)
    .split("/")
    .map((key) => key.replace(/~1/g, "/").replace(/~0/g, "~"))
    .reduce<unknown>((node, key) => (Predicate.isRecord(node) ? node[key] : undefined), root)

const isType = (type: unknown, name: string): boolean => type === name || (Array.isArray(type) && type.includes(name))

const strictObject = (out: Record<string, unknown>): void => {
  const properties = Predicate.isRecord(out["properties"]) ? out["properties"] : {}
  const additional = out["additionalProperties"]
  // A map (`additionalProperties` with a schema, or an object with no properties that allows any) has no strict form.
  if (Predicate.isRecord(additional)) throw new NotStrict()
  if (Object.keys(properties).length === 0 && additional !== false && additional !== undefined) throw new NotStrict()
  const required = new Set(Array.isArray(out["required"]) ? out["required"] : [])
  out["properties"] = Object.fromEntries(
    Object.entries(properties).map(([name, property]) => {
      const strict = strictNode(property)
      return [name, required.has(name) ? strict : nullable(strict)]
    })
  )
  out["required"] = Object.keys(properties)
  out["additionalProperties"] = false
}

const strictNode = (node: unknown): Node => {
  if (!Predicate.isRecord(node)) throw new NotStrict()
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(node)) {
    if (annotationKeywords.has(key)) continue
    if (key === "oneOf") {
      // Strict mode knows anyOf, not oneOf; for decoding they mean the same here.
      if (!Array.isArray(value)) throw new NotStrict()
      out["anyOf"] = value
      continue
    }
    if (!strictKeywords.has(key)) throw new NotStrict()
    if (key === "format" && !(typeof value === "string" && strictFormats.has(value))) continue
    out[key] = value
  }
  if (Array.isArray(out["anyOf"])) out["anyOf"] = out["anyOf"].map(strictNode)
  for (const defsKey of ["$defs", "definitions"]) {
    const defs = out[defsKey]
    if (Predicate.isRecord(defs)) {
      out[defsKey] = Object.fromEntries(Object.entries(defs).map(([name, def]) => [name, strictNode(def)]))
    }
  }
  const type = out["type"]
  if (isType(type, "object") || "properties" in out) strictObject(out)
  if (isType(type, "array")) {
    const items = out["items"]
    if (Array.isArray(items)) throw new NotStrict()
    if (items !== undefined) out["items"] = strictNode(items)
  }
  const hasShape =
    type !== undefined || "anyOf" in out || "$ref" in out || "enum" in out || "const" in out || "properties" in out
  if (!hasShape) throw new NotStrict()
  return out
}

/**
 * The strict-mode form of a JSON schema (every property required, no additional properties, optional properties
 * made nullable, annotations that strict mode refuses dropped), or `undefined` when the schema has parts strict mode
 * cannot carry without changing what decodes (length limits, unique items, maps, tuples, untyped values, a root that
 * is not an object).
 */
export const strictJsonSchema = (schema: object): Node | undefined => {
  if (!Predicate.isRecord(schema) || schema["type"] !== "object") return undefined
  try {
    return strictNode(schema)
  } catch (error) {
    if (error instanceof NotStrict) return undefined
    throw error
  }
}

// Strict forms already made, by schema: a request's tool and answer schemas are made once and sent at every call.
const strictForms = new WeakMap<object, Node | null>()

/**
 * `strictJsonSchema`, made once per schema object, for the request bodies only: the form is shared by every request
 * over the schema, and neither the requests nor the SDK change it.
 */
export const sharedStrictJsonSchema = (schema: object): Node | undefined => {
  const known = strictForms.get(schema)
  if (known !== undefined) return known ?? undefined
  const made = strictJsonSchema(schema)
  strictForms.set(schema, made ?? null)
  return made
}

/** Removes the `null`s strict mode made the model write for properties the original schema had as optional. */
export const dropOptionalNulls = (value: unknown, schema: unknown, root: unknown): unknown => {
  if (!Predicate.isRecord(schema)) return value
  const ref = schema["$ref"]
  if (typeof ref === "string" && ref.startsWith("#/")) {
    return dropOptionalNulls(value, resolvePointer(root, ref), root)
  }
  const anyOf = schema["anyOf"]
  if (Array.isArray(anyOf) && value !== null && typeof value === "object") {
    const objectMember = anyOf.find(
      (member) =>
        Predicate.isRecord(member) && (member["type"] === "object" || "properties" in member || "$ref" in member)
    )
    return objectMember === undefined ? value : dropOptionalNulls(value, objectMember, root)
  }
  if (Array.isArray(value)) {
    return value.map((item) => dropOptionalNulls(item, schema["items"], root))
  }
  if (Predicate.isRecord(value) && Predicate.isRecord(schema["properties"])) {
    const properties = schema["properties"]
    const required = new Set(Array.isArray(schema["required"]) ? schema["required"] : [])
    const out: Record<string, unknown> = {}
    for (const [key, field] of Object.entries(value)) {
      if (field === null && !required.has(key) && key in properties) continue
      out[key] = dropOptionalNulls(field, properties[key], root)
    }
    return out
  }
  return value
}
