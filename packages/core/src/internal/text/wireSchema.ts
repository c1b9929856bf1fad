/**
 * The JSON schema of an Effect Schema in the shape model vendors document for tool parameters and structured-output
 * formats: an object at the root (no root `$ref`, no root `anyOf`), definitions inlined where they are not recursive
 * (recursive ones stay under `$defs` and are referenced from inside), and none of Effect's `$id` markers. A value that
 * is not an object travels wrapped as `{ value }`, and answers are unwrapped before decoding.
 */
import * as JSONSchema from "effect/JSONSchema"
import * as Predicate from "effect/Predicate"
import type * as Schema from "effect/Schema"

/** A JSON schema whose root is an object, as OpenAI and Anthropic take tool parameters and response formats. */
export interface ObjectJsonSchema {
  readonly type: "object"
  readonly [keyword: string]: unknown
}

/** The schema sent on the wire, and whether the value travels wrapped as `{ value }`. */
export interface WireSchema {
  readonly schema: ObjectJsonSchema
  readonly wrapped: boolean
}

type Node = Readonly<Record<string, unknown>>

const definitionPrefix = "#/$defs/"

/** Effect's schema of `{}` and of `object`: any non-nullish value. As a parameter list it means "no arguments". */
const isEmptyObjectMarker = (node: Node): boolean =>
  node["$id"] === "/schemas/%7B%7D" || node["$id"] === "/schemas/object"

const emptyObject: ObjectJsonSchema = { type: "object", properties: {}, required: [], additionalProperties: false }

const decodePointer = (name: string): string => name.replace(/~1/g, "/").replace(/~0/g, "~")
const encodePointer = (name: string): string => name.replace(/~/g, "~0").replace(/\//g, "~1")

interface Walk {
  readonly definitions: Readonly<Record<string, unknown>>
  /** Definitions being inlined on the current path: a reference to one of them is a cycle. */
  readonly path: ReadonlySet<string>
  /** Definitions found to be recursive: kept under `$defs`. */
  readonly recursive: Set<string>
}

const inline = (value: unknown, walk: Walk): unknown => {
  if (Array.isArray(value)) return value.map((item) => inline(item, walk))
  if (!Predicate.isRecord(value)) return value
  if (isEmptyObjectMarker(value)) {
    const { $id: _id, anyOf: _anyOf, ...annotations } = value
    return { ...annotations, ...emptyObject }
  }
  const ref = value["$ref"]
  if (typeof ref === "string" && ref.startsWith(definitionPrefix)) {
    const name = decodePointer(ref.slice(definitionPrefix.length))
    const target = walk.definitions[name]
    if (walk.path.has(name) || !Predicate.isRecord(target)) {
      walk.recursive.add(name)
      return value
    }
    const { $ref: _ref, ...siblings } = value
    const resolved = inline(target, { ...walk, path: new Set([...walk.path, name]) })
    // Keywords beside a reference (a description, a refinement's bounds) narrow the definition: they win.
    return { ...(Predicate.isRecord(resolved) ? resolved : {}), ...inlineEntries(siblings, walk) }
  }
  return inlineEntries(value, walk)
}

const inlineEntries = (node: Node, walk: Walk): Node => {
  const out: Record<string, unknown> = {}
  for (const [key, child] of Object.entries(node)) {
    if (key === "$id" || key === "$schema") continue
    out[key] = inline(child, walk)
  }
  return out
}

/** Recursive definitions, themselves inlined except where they refer to each other. */
const recursiveDefinitions = (walk: Walk): Record<string, unknown> => {
  const defs: Record<string, unknown> = {}
  const pending = [...walk.recursive]
  while (pending.length > 0) {
    const name = pending.pop()
    if (name === undefined || name in defs) continue
    const before = new Set(walk.recursive)
    defs[name] = inline(walk.definitions[name], { ...walk, path: new Set([name]) })
    for (const found of walk.recursive) if (!before.has(found)) pending.push(found)
  }
  return defs
}

const isObjectRoot = (node: unknown): node is ObjectJsonSchema => Predicate.isRecord(node) && node["type"] === "object"

const renameRefs = (value: unknown, renames: ReadonlyMap<string, string>): unknown => {
  if (Array.isArray(value)) return value.map((item) => renameRefs(item, renames))
  if (!Predicate.isRecord(value)) return value
  const out: Record<string, unknown> = {}
  for (const [key, child] of Object.entries(value)) {
    out[key] =
      key === "$ref" && typeof child === "string" && child.startsWith(definitionPrefix)
        ? `${definitionPrefix}${encodePointer(renames.get(decodePointer(child.slice(definitionPrefix.length))) ?? "")}`
        : renameRefs(child, renames)
  }
  return out
}

/** The wire schema of a Schema. */
export const make = <A, I, R>(schema: Schema.Schema<A, I, R>): WireSchema => {
  const definitions: Record<string, JSONSchema.JsonSchema7> = {}
  const root = JSONSchema.fromAST(schema.ast, { definitions, target: "jsonSchema7", topLevelReferenceStrategy: "skip" })
  const walk: Walk = { definitions, path: new Set(), recursive: new Set() }
  const body = inline(root, walk)
  const recursive = recursiveDefinitions(walk)
  // Definition names are Effect identifiers (`@deep-research/core/Directive`); on the wire they are plain words.
  const renames = new Map(
    Object.keys(recursive).map((name, i) => [name, `${name.replace(/[^A-Za-z0-9_]/g, "_")}_${i}`])
  )
  const defs = Object.fromEntries(
    Object.entries(recursive).map(([name, def]) => [renames.get(name) ?? name, renameRefs(def, renames)])
  )
  const renamed = renameRefs(body, renames)
  const withDefs = (node: ObjectJsonSchema): ObjectJsonSchema =>
    Object.keys(defs).length === 0 ? node : { ...node, $defs: defs }
  if (isObjectRoot(renamed)) return { schema: withDefs(renamed), wrapped: false }
  return {
    schema: withDefs({
      type: "object",
      properties: { value: renamed },
      required: ["value"],
      additionalProperties: false
    }),
    wrapped: true
  }
}

/** A model's answer against a wire schema, as the Schema reads it: a wrapped value is taken out of `{ value }`. */
export const unwrap = (wire: WireSchema, value: unknown): unknown =>
  wire.wrapped && Predicate.isRecord(value) && "value" in value ? value["value"] : value
