/**
 * OpenAI's rules for schemas sent with `strict: true`, as its Structured Outputs guide publishes them: an object at
 * the root; every object with `additionalProperties: false` and every property in `required`; only the supported
 * keywords (`pattern` and `format` on strings; `multipleOf`, `minimum`, `maximum`, `exclusiveMinimum`,
 * `exclusiveMaximum` on numbers; `minItems` and `maxItems` on arrays; `anyOf`, `enum`, `const`, `$ref` and `$defs`);
 * at most 10 levels of nesting, 5,000 properties and 1,000 enum values. The texts follow the API's own
 * (`In context=('properties', 'x'), 'additionalProperties' is required to be supplied and to be false.`).
 *
 * This is the emulator's copy of the rules, written from the guide, not from the library's strict rewrite: the two
 * must agree for a request to pass, and a change to either shows.
 */
import { get, isObject } from "./json.js"

const permitted: ReadonlySet<string> = new Set([
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

const maxDepth = 10
const maxProperties = 5_000
const maxEnumValues = 1_000

interface Tally {
  properties: number
  enumValues: number
}

const context = (path: ReadonlyArray<string>): string =>
  `In context=(${path.map((part) => `'${part}'`).join(", ")}${path.length === 1 ? "," : ""})`

const isObjectNode = (node: Readonly<Record<string, unknown>>): boolean => {
  const type = node["type"]
  return type === "object" || (Array.isArray(type) && type.includes("object")) || "properties" in node
}

const checkNode = (node: unknown, path: ReadonlyArray<string>, depth: number, tally: Tally): string | undefined => {
  if (!isObject(node)) return `${context(path)}, schema must be a JSON Schema object.`
  for (const key of Object.keys(node)) {
    if (!permitted.has(key)) return `${context(path)}, '${key}' is not permitted.`
  }
  if (depth > maxDepth) return `${context(path)}, the schema exceeds the maximum nesting depth of ${maxDepth}.`
  const values = node["enum"]
  if (Array.isArray(values)) tally.enumValues += values.length
  if (isObjectNode(node)) {
    if (node["additionalProperties"] !== false) {
      return `${context(path)}, 'additionalProperties' is required to be supplied and to be false.`
    }
    const properties = isObject(node["properties"]) ? node["properties"] : {}
    const required = Array.isArray(node["required"]) ? node["required"] : undefined
    const missing = Object.keys(properties).find((key) => required === undefined || !required.includes(key))
    if (required === undefined || missing !== undefined) {
      return (
        `${context(path)}, 'required' is required to be supplied and to be an array including every key in ` +
        `properties.${missing === undefined ? "" : ` Missing '${missing}'.`}`
      )
    }
    tally.properties += Object.keys(properties).length
    for (const [name, property] of Object.entries(properties)) {
      const problem = checkNode(property, [...path, "properties", name], depth + 1, tally)
      if (problem !== undefined) return problem
    }
  }
  const items = get(node, "items")
  if (items !== undefined) {
    const problem = checkNode(items, [...path, "items"], depth, tally)
    if (problem !== undefined) return problem
  }
  const anyOf = node["anyOf"]
  if (Array.isArray(anyOf)) {
    for (const [i, member] of anyOf.entries()) {
      const problem = checkNode(member, [...path, "anyOf", String(i)], depth, tally)
      if (problem !== undefined) return problem
    }
  }
  for (const defsKey of ["$defs", "definitions"]) {
    const defs = node[defsKey]
    if (!isObject(defs)) continue
    for (const [name, def] of Object.entries(defs)) {
      const problem = checkNode(def, [...path, defsKey, name], depth, tally)
      if (problem !== undefined) return problem
    }
  }
  return undefined
}

/** The first rule a strict schema breaks, in the API's words, or undefined when it keeps them all. */
export const strictViolation = (schema: unknown): string | undefined => {
  const tally: Tally = { properties: 0, enumValues: 0 }
  const problem = checkNode(schema, [], 1, tally)
  if (problem !== undefined) return problem
  if (tally.properties > maxProperties) {
    return `The schema has ${tally.properties} object properties; at most ${maxProperties} are permitted.`
  }
  if (tally.enumValues > maxEnumValues) {
    return `The schema has ${tally.enumValues} enum values; at most ${maxEnumValues} are permitted.`
  }
  return undefined
}

/** The JSON Schema `type` of a root, as OpenAI names it in its refusal (`None` when there is none). */
export const rootTypeName = (schema: unknown): string => {
  const type = get(schema, "type")
  return typeof type === "string" ? type : Array.isArray(type) ? type.join(", ") : "None"
}
