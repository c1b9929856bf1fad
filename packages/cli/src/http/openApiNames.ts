/**
 * The OpenAPI document's schema names as the specification allows them. OpenAPI 3.1 requires every key of
 * `components.schemas` to match `^[a-zA-Z0-9._-]+$`; the generator names a component after its Schema's identifier,
 * and a class's identifier is its full name (`@deep-research/evaluation/Judge/Judgement`). Such a name becomes its
 * allowed form (`evaluation.Judge.Judgement`), and every `$ref` to it follows.
 */

const schemaRef = "#/components/schemas/"

/** A schema name in the characters OpenAPI allows. */
export const componentName = (name: string): string =>
  name
    .replace(/^@deep-research\//, "")
    .replace(/[^a-zA-Z0-9._-]+/g, ".")
    .replace(/^\.+|\.+$/g, "") || "Schema"

/** JSON Pointer's escapes (RFC 6901): `~1` is `/`, `~0` is `~`. */
const unescapePointer = (token: string): string => token.replace(/~1/g, "/").replace(/~0/g, "~")

const rewriteRefs = (value: unknown, renamed: ReadonlyMap<string, string>): unknown => {
  if (Array.isArray(value)) return value.map((item) => rewriteRefs(item, renamed))
  if (typeof value !== "object" || value === null) return value
  const out: Record<string, unknown> = {}
  for (const [key, inner] of Object.entries(value)) {
    if (key === "$ref" && typeof inner === "string" && inner.startsWith(schemaRef)) {
      const name = unescapePointer(inner.slice(schemaRef.length))
      out[key] = `${schemaRef}${renamed.get(name) ?? inner.slice(schemaRef.length)}`
    } else {
      out[key] = rewriteRefs(inner, renamed)
    }
  }
  return out
}

/** The document with its schema names allowed ones, and the references to them rewritten; unchanged when they are. */
export const withValidComponentNames = (spec: Record<string, any>): Record<string, any> => {
  const schemas: Record<string, unknown> = spec["components"]?.["schemas"] ?? {}
  const renamed = new Map<string, string>()
  const taken = new Set(Object.keys(schemas).filter((name) => componentName(name) === name))
  for (const name of Object.keys(schemas)) {
    if (taken.has(name)) continue
    let candidate = componentName(name)
    for (let n = 2; taken.has(candidate); n++) candidate = `${componentName(name)}.${n}`
    taken.add(candidate)
    renamed.set(name, candidate)
  }
  if (renamed.size === 0) return spec
  const rewritten = rewriteRefs(spec, renamed) as Record<string, any>
  rewritten["components"]["schemas"] = Object.fromEntries(
    Object.entries(rewritten["components"]["schemas"] as Record<string, unknown>).map(([name, schema]) => [
      renamed.get(name) ?? name,
      schema
    ])
  )
  return rewritten
}
