/**
 * What `deep-research serve` holds a request to before any handler decodes it, and what an error may say of it. A
 * body's nesting is counted without parsing it: thousands of levels would take Schema's decoder, and its error
 * formatter, past the stack (a bare 500). An error body quotes the request only in part: a value sent back whole
 * would make every refusal as large as the body that caused it.
 */
import { excerpt } from "../internal/decodeIssues.js"

/** The deepest nesting of arrays and objects a body may have: an OpenAI client's tool schemas stay far inside it. */
export const maxNesting = 64

const quote = 0x22
const backslash = 0x5c
const opening = new Set([0x5b, 0x7b])
const closing = new Set([0x5d, 0x7d])

/** Whether a JSON text nests its arrays and objects deeper than `limit`; brackets inside strings are text. */
export const nestsDeeperThan = (text: string, limit: number): boolean => {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (inString) {
      if (code === backslash) i++
      else if (code === quote) inString = false
    } else if (code === quote) {
      inString = true
    } else if (opening.has(code)) {
      if (++depth > limit) return true
    } else if (closing.has(code)) {
      depth--
    }
  }
  return false
}

/** The refusal of a body nested deeper than `maxNesting`. */
export const tooDeep = `The request body nests deeper than ${maxNesting} levels of arrays and objects.`

/** The most characters of any one text of an error body. */
const textLimit = 500

/** An error body with every text in it cut to an excerpt, and whether anything was cut. */
export const withExcerpts = (body: unknown): { readonly body: unknown; readonly cut: boolean } => {
  let cut = false
  const walk = (value: unknown): unknown => {
    if (typeof value === "string") {
      if (value.length > textLimit) cut = true
      return excerpt(value, textLimit)
    }
    if (Array.isArray(value)) return value.map(walk)
    if (typeof value === "object" && value !== null) {
      return Object.fromEntries(Object.entries(value).map(([key, inner]) => [excerpt(key, textLimit), walk(inner)]))
    }
    return value
  }
  const walked = walk(body)
  return { body: walked, cut }
}

/** The token a request presents, read as the API's bearer check reads it (what follows `Bearer `). */
export const bearerOf = (authorization: string | undefined): string => (authorization ?? "").slice("Bearer ".length)
