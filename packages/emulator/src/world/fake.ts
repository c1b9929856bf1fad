/**
 * Plausible values for a JSON schema, for the simulated world: field names pick the wording (a brief reads like a
 * brief, a question like a question), booleans are false (so no clarification is asked), numbers take their
 * minimum, arrays one or two items, and limits (lengths, item counts, enums) are respected.
 */
import { get, getArray, getNumber, getOptionalString, isObject, type JsonObject } from "../wire/json.js"

/** What the values are about. */
export interface FakeContext {
  readonly subject: string
  readonly index: number
  /** The page being summarised, when there is one: summaries and excerpts are then taken from it. */
  readonly pageText?: string | undefined
  /**
   * What the simulated model means to say, by property name: used wherever the schema as sent has a property of that
   * name and a value of that kind fits it, wherever the property sits (a wrapped schema puts it deeper).
   */
  readonly hints?: Readonly<Record<string, unknown>> | undefined
}

const sentencesOf = (text: string): ReadonlyArray<string> =>
  text
    .split(/\n+/)
    .flatMap((paragraph) => paragraph.match(/[^.!?]+[.!?]+/g) ?? [])
    .map((sentence) => sentence.trim())
    .filter((sentence) => sentence.length > 0)

const resolve = (schema: unknown, root: unknown): unknown => {
  const ref = getOptionalString(schema, "$ref")
  if (ref === undefined || !ref.startsWith("#/")) return schema
  return ref
    .slice(2)
    .split("/")
    .map((key) => key.replace(/~1/g, "/").replace(/~0/g, "~"))
    .reduce<unknown>((node, key) => get(node, key), root)
}

const slug = (text: string): string =>
  text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-|-$/g, "")
    .slice(0, 40) || "topic"

const phrase = (key: string, context: FakeContext): string => {
  const k = key.toLowerCase()
  const s = context.subject
  const page = context.pageText === undefined ? [] : sentencesOf(context.pageText)
  if (page.length > 0 && (k.includes("excerpt") || k.includes("quote"))) {
    // Verbatim, as the summariser is asked: the page's sentences with figures first.
    const ranked = [...page.filter((p) => /\d/.test(p)), ...page.filter((p) => !/\d/.test(p))]
    return ranked[context.index % ranked.length] ?? s
  }
  if (page.length > 0 && k.includes("summary")) return page.slice(0, 3).join(" ")
  if (k.includes("question")) return `Which aspect of ${s} matters most to you, and for what period or region?`
  if (k.includes("verification")) return `I will research ${s}, covering the main evidence and perspectives.`
  if (k.includes("brief")) {
    return (
      `Investigate ${s}: establish the current evidence with specific figures and dates, the main perspectives ` +
      "and where they disagree, and recent developments. Prefer primary sources and recent data."
    )
  }
  if (k === "code" || k === "locale") return "en"
  if (k.includes("language") || k === "name") return "English"
  if (k.includes("url") || k.includes("link")) return `https://example.org/${slug(s)}`
  if (k.includes("excerpt") || k.includes("quote")) return `The evidence on ${s} has grown over recent years.`
  if (k.includes("summary")) return `${s}: the sources agree on the main points and note the limits of the evidence.`
  if (k.includes("topic")) return `Research ${s}.`
  if (k.includes("perspective")) return "A careful, evidence-first analyst"
  if (k.includes("evidence")) return "Figures with dates and primary sources"
  if (k.includes("title")) return s
  if (k.includes("reason") || k.includes("rationale") || k.includes("justification")) {
    return `The answer addresses ${s} with cited evidence.`
  }
  if (k.includes("include") || k.includes("preference")) return `Primary sources on ${s}`
  if (k.includes("exclude")) return "Unrelated topics"
  return `${key || "value"}: ${s}`
}

const fitString = (text: string, schema: unknown): string => {
  const min = getNumber(schema, "minLength", 0)
  const max = getNumber(schema, "maxLength", Number.POSITIVE_INFINITY)
  const padded = text.length >= min ? text : text + ".".repeat(min - text.length)
  return padded.slice(0, max)
}

const singular = (key: string): string => key.replace(/ies$/, "y").replace(/s$/, "")

/** Whether a hinted value is of the kind the schema asks for (its JSON type, and within an enum when there is one). */
const fits = (value: unknown, node: unknown): boolean => {
  if (!isObject(node)) return false
  const values = getArray(node, "enum")
  if (values.length > 0) return values.includes(value)
  const declared = get(node, "type")
  const types = Array.isArray(declared) ? declared : typeof declared === "string" ? [declared] : []
  return types.some((type) => {
    switch (type) {
      case "string":
        return typeof value === "string"
      case "integer":
        return Number.isInteger(value)
      case "number":
        return typeof value === "number"
      case "boolean":
        return typeof value === "boolean"
      case "array":
        return (
          Array.isArray(value) &&
          value.every((item) => fits(item, get(node, "items")) || get(node, "items") === undefined)
        )
      case "object":
        return isObject(value)
      default:
        return false
    }
  })
}

const fakeNode = (schema: unknown, context: FakeContext, root: unknown, key: string, depth: number): unknown => {
  const node = resolve(schema, root)
  const hint = context.hints?.[key]
  if (hint !== undefined && fits(hint, node)) return hint
  if (!isObject(node) || depth > 12) return phrase(key, context)
  if ("const" in node) return node["const"]
  const values = getArray(node, "enum").filter((value) => value !== null)
  if (values.length > 0) return values[0]
  for (const unionKey of ["anyOf", "oneOf"]) {
    const members = getArray(node, unionKey)
    if (members.length > 0) {
      const member = members.find((m) => get(resolve(m, root), "type") !== "null") ?? members[0]
      return fakeNode(member, context, root, key, depth + 1)
    }
  }
  const declared = get(node, "type")
  const type = Array.isArray(declared)
    ? (declared.find((t) => t !== "null") ?? "null")
    : typeof declared === "string"
      ? declared
      : isObject(get(node, "properties"))
        ? "object"
        : "string"
  switch (type) {
    case "object": {
      const properties = get(node, "properties")
      const out: Record<string, unknown> = {}
      if (isObject(properties)) {
        for (const [name, property] of Object.entries(properties)) {
          out[name] = fakeNode(property, context, root, name, depth + 1)
        }
      }
      return out
    }
    case "array": {
      const min = Math.max(1, getNumber(node, "minItems", 1))
      const max = getNumber(node, "maxItems", 2)
      const count = Math.max(Math.min(2, max), Math.min(min, max))
      return Array.from({ length: count }, (_, index) =>
        fakeNode(get(node, "items"), { ...context, index }, root, singular(key), depth + 1)
      )
    }
    case "integer":
    case "number": {
      const exclusive = get(node, "exclusiveMinimum")
      const minimum =
        typeof exclusive === "number" ? exclusive + (type === "integer" ? 1 : 0.1) : getNumber(node, "minimum", 1)
      const maximum = getNumber(node, "maximum", Number.POSITIVE_INFINITY)
      const k = key.toLowerCase()
      // A judge's scores sit in the upper part of their range (4 of 5 when none is given), not at the floor.
      const preferred =
        k.includes("score") || k.includes("rating")
          ? Number.isFinite(maximum)
            ? Math.round(minimum + 0.75 * (maximum - minimum))
            : 4
          : minimum
      return Math.min(Math.max(minimum, preferred), maximum)
    }
    case "boolean":
      return false
    case "null":
      return null
    default: {
      const text = phrase(key, context)
      const verbatim = context.pageText !== undefined && context.pageText.includes(text)
      return fitString(context.index > 0 && !verbatim ? `${text} (${context.index + 1})` : text, node)
    }
  }
}

/** A value matching the schema, worded after its field names and the subject. */
export const fakeFromSchema = (schema: unknown, context: FakeContext): unknown =>
  fakeNode(schema, context, schema, "", 0)

/** Anthropic `tool_use` blocks for calls. */
export const anthropicToolUseBlocks = (
  calls: ReadonlyArray<{ readonly name: string; readonly arguments: unknown }>,
  nextId: (prefix: string) => string
): Array<JsonObject> =>
  calls.map((call) => ({
    type: "tool_use",
    id: nextId("toolu_"),
    name: call.name,
    input: isObject(call.arguments) ? call.arguments : {}
  }))
