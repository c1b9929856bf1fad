/**
 * Keeps secrets out of what a store writes: the known secret values (raw and JSON-escaped) and anything shaped like a
 * vendor's API key are replaced before a text is written. Shared by the file and PostgreSQL stores.
 */
import * as Effect from "effect/Effect"

const redactedMarker = "[redacted]"

/**
 * The shapes of the vendors' API keys (OpenAI and Anthropic `sk-`, Tavily `tvly-`, Perplexity `pplx-`): long, and
 * with a digit, so that ordinary words such as `sk-learn` are left alone.
 */
const vendorKeyPattern = /(?<![A-Za-z0-9_-])(?:sk|tvly|pplx)-(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9_-]{20,}/g

/** Too short to be a key, and replacing it would mangle ordinary text. */
const minimumSecretLength = 8

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/** Removes known secrets and anything shaped like a vendor API key from a text about to be written. */
export const makeScrubber = (secrets: ReadonlyArray<string>) => {
  // A secret appears raw in markdown and JSON-escaped in JSON; keys rarely differ, but a quote or backslash would.
  const forms = [...new Set(secrets.flatMap((s) => [s, JSON.stringify(s).slice(1, -1)]))]
    .filter((s) => s.length >= minimumSecretLength)
    .sort((a, b) => b.length - a.length)
  const known = forms.length === 0 ? undefined : new RegExp(forms.map(escapeRegExp).join("|"), "g")
  return (text: string): { readonly text: string; readonly removed: number } => {
    let removed = 0
    const count = () => {
      removed++
      return redactedMarker
    }
    const withoutKnown = known === undefined ? text : text.replace(known, count)
    return { text: withoutKnown.replace(vendorKeyPattern, count), removed }
  }
}

/** A store's scrubbing before a write. */
export interface Scrubbed {
  /** The text without its secrets, with a warning naming the store and `what` was written when any were removed. */
  (what: string, text: string): Effect.Effect<string>
  /** `write` of the text without its secrets: in the same runtime step when there were none (every event line). */
  readonly into: <A, E>(what: string, text: string, write: (text: string) => Effect.Effect<A, E>) => Effect.Effect<A, E>
}

export const makeScrubbed = (store: string, secrets: ReadonlyArray<string>): Scrubbed => {
  const scrub = makeScrubber(secrets)
  const warning = (what: string, removed: number) =>
    Effect.logWarning(`${store}: removed ${removed} secret value(s) from ${what} before writing it`)
  const scrubbed = (what: string, text: string): Effect.Effect<string> => {
    const result = scrub(text)
    return result.removed === 0 ? Effect.succeed(text) : Effect.as(warning(what, result.removed), result.text)
  }
  const into = <A, E>(what: string, text: string, write: (text: string) => Effect.Effect<A, E>) => {
    const result = scrub(text)
    return result.removed === 0 ? write(text) : Effect.zipRight(warning(what, result.removed), write(result.text))
  }
  return Object.assign(scrubbed, { into })
}
