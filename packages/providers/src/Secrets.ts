/**
 * Secrets kept out of a text: the values of the keys and tokens a process holds, whole or cut short to a prefix that
 * identifies them (`minimumPrefixLength` characters at least), raw, JSON-escaped or URL-encoded, and anything shaped
 * like a vendor's API key, become `[redacted]`, as the session stores write them. For a server and the CLI to take them
 * out of what their clients send (a question holding a key) before any model, log or store sees it, and out of every
 * byte they answer, print or write.
 */
import * as Redacted from "effect/Redacted"
import { makeScrubber, minimumPrefixLength, prefixLengthOf, redactedMarker } from "./store/secretScrubber.js"

export { minimumPrefixLength, prefixLengthOf, redactedMarker }

/** A text without the given secrets nor anything shaped like a vendor's key (values under 8 characters are left). */
export const scrubber = (secrets: ReadonlyArray<Redacted.Redacted<string>>): ((text: string) => string) => {
  const scrub = makeScrubber(secrets.map(Redacted.value))
  return (text) => scrub(text).text
}

/**
 * A value (a JSON message about to be sent) with every string in it, keys included, passed through `scrub`; the same
 * value when nothing in it changed.
 */
export const scrubValue = (scrub: (text: string) => string): (<A>(value: A) => A) => {
  const walk = (value: unknown): unknown => {
    if (typeof value === "string") return scrub(value)
    if (Array.isArray(value)) {
      const items = value.map(walk)
      return items.every((item, i) => item === value[i]) ? value : items
    }
    if (typeof value === "object" && value !== null && Object.getPrototypeOf(value) === Object.prototype) {
      const entries = Object.entries(value)
      const walked = entries.map(([key, inner]) => [scrub(key), walk(inner)] as const)
      return walked.every(([key, inner], i) => key === entries[i]?.[0] && inner === entries[i]?.[1])
        ? value
        : Object.fromEntries(walked)
    }
    return value
  }
  // The walk keeps every value's shape (a string stays a string, an array an array, an object its fields).
  return <A>(value: A): A => walk(value) as A
}
