/**
 * What an error of `deep-research serve` may say of the request, and how the request's token is read before its body.
 * An error body quotes the request only in part: a value sent back whole would make every refusal as large as the
 * body that caused it.
 */
import { excerpt } from "../internal/serving/decodeIssues.js"

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
