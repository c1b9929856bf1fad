/**
 * Keeps secrets out of what the product writes: the known secret values, in the forms a text may carry them (raw,
 * JSON-escaped, URL-encoded), whole or cut short to a prefix long enough to identify them, and anything shaped like a
 * vendor's API key, are replaced before a text is written. Shared by the session stores and, through `Secrets`, by
 * every door of the CLI and the servers.
 */
import * as Effect from "effect/Effect"

/** What a secret becomes. */
export const redactedMarker = "[redacted]"

/**
 * The shapes of the vendors' API keys (OpenAI and Anthropic `sk-`, Tavily `tvly-`, Perplexity `pplx-`): long, and
 * with a digit, so that ordinary words such as `sk-learn` are left alone.
 */
const vendorKeyPattern = /(?<![A-Za-z0-9_-])(?:sk|tvly|pplx)-(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9_-]{20,}/g

/** Too short to be a key, and replacing it would mangle ordinary text. */
const minimumSecretLength = 8

/**
 * The shortest prefix of a secret that counts as the secret: 12 characters, and at least 8 past the key's public head
 * (`sk-`, `sk-proj-`, `sk-ant-api03-`, `tvly-dev-`), which every key of a vendor shares. Eight random characters of a
 * key's alphabet are 47 bits at least: enough to tell one key from another, and to guess the rest no better.
 */
export const minimumPrefixLength = 12

/** The characters past a key's public head a prefix must hold. */
const identifyingCharacters = 8

/** A key's public head: lower-case words ending in `-`, at most three of them (`sk-ant-api03-`). */
const publicHead = /^(?:[a-z][a-z0-9]{0,7}-){1,3}/

/** How long a prefix of this secret must be to be replaced. */
export const prefixLengthOf = (secret: string): number =>
  Math.max(minimumPrefixLength, (publicHead.exec(secret)?.[0].length ?? 0) + identifyingCharacters)

/** A form of a secret as a text may carry it, and how much of it must be there to be replaced. */
interface Form {
  readonly text: string
  readonly shortest: number
}

const jsonEscaped = (text: string): string => JSON.stringify(text).slice(1, -1)

/** The percent escapes in lower case, as some encoders write them (`%2f`). */
const lowerEscapes = (text: string): string => text.replace(/%[0-9A-F]{2}/g, (escape) => escape.toLowerCase())

/** The texts a secret may be carried as: raw, JSON-escaped (once and twice), URL-encoded (as a component, as a form). */
const encodingsOf = (secret: string): ReadonlyArray<string> => {
  const component = encodeURIComponent(secret)
  const form = component.replace(/%20/g, "+")
  return [
    secret,
    jsonEscaped(secret),
    jsonEscaped(jsonEscaped(secret)),
    component,
    lowerEscapes(component),
    form,
    encodeURI(secret)
  ]
}

/**
 * A URL with a password (a database's) is a secret whole, and its password is the secret that matters: its prefix is
 * not, since every URL of the same host begins the same way.
 */
const partsOf = (secret: string): ReadonlyArray<{ readonly value: string; readonly prefix: boolean }> => {
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(secret)) return [{ value: secret, prefix: true }]
  try {
    const password = new URL(secret).password
    const decoded = safeDecode(password)
    return [
      { value: secret, prefix: false },
      ...[...new Set([password, decoded])].filter((p) => p !== "").map((value) => ({ value, prefix: true }))
    ]
  } catch {
    return [{ value: secret, prefix: true }]
  }
}

const safeDecode = (text: string): string => {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}

const formsOf = (secrets: ReadonlyArray<string>): ReadonlyArray<Form> => {
  const shortest = new Map<string, number>()
  for (const part of secrets.flatMap(partsOf)) {
    if (part.value.length < minimumSecretLength) continue
    const prefix = part.prefix ? prefixLengthOf(part.value) : Number.POSITIVE_INFINITY
    for (const text of encodingsOf(part.value)) {
      // An encoding is longer than the raw value by its escapes: the prefix is counted in the encoded text.
      const needed = Math.min(text.length, prefix + (text.length - part.value.length))
      shortest.set(text, Math.min(shortest.get(text) ?? Number.POSITIVE_INFINITY, needed))
    }
  }
  return [...shortest.entries()]
    .map(([text, needed]) => ({ text, shortest: needed }))
    .sort((a, b) => b.text.length - a.text.length)
}

/**
 * The end of a match of `form` at `start`: as far as the text goes on with the form. A match does not end on half an
 * escape (a lone `\` or a `%` and one digit), which would break the JSON or the URL around it.
 */
const matchEnd = (text: string, start: number, form: string, shortest: number): number => {
  let length = shortest
  while (length < form.length && text[start + length] === form[length]) length++
  if (length < form.length) {
    const matched = form.slice(0, length)
    const backslashes = /\\*$/.exec(matched)?.[0].length ?? 0
    if (backslashes % 2 === 1) length--
    const escape = /%[0-9A-Fa-f]?$/.exec(form.slice(0, length))
    if (escape !== null) length -= escape[0].length
  }
  return start + length
}

/** The text with every match of one form (the whole of it, or at least its `shortest` prefix) replaced. */
const replaceForm = (text: string, form: Form, count: () => void): string => {
  const head = form.text.slice(0, form.shortest)
  let from = 0
  let out = ""
  for (let at = text.indexOf(head); at !== -1; at = text.indexOf(head, from)) {
    const end = matchEnd(text, at, form.text, form.shortest)
    if (end - at < Math.min(form.shortest, form.text.length) - 2) {
      // What was left after not ending on half an escape is too short to say anything: kept as it is.
      out += text.slice(from, at + 1)
      from = at + 1
      continue
    }
    count()
    out += text.slice(from, at) + redactedMarker
    from = end
  }
  return from === 0 ? text : out + text.slice(from)
}

/**
 * Removes known secrets (whole or a prefix of at least `prefixLengthOf` characters, raw, JSON-escaped or URL-encoded)
 * and anything shaped like a vendor API key from a text about to be written.
 */
export const makeScrubber = (secrets: ReadonlyArray<string>) => {
  const forms = formsOf(secrets)
  return (text: string): { readonly text: string; readonly removed: number } => {
    let removed = 0
    const count = () => {
      removed++
    }
    let scrubbed = text
    for (const form of forms) scrubbed = replaceForm(scrubbed, form, count)
    scrubbed = scrubbed.replace(vendorKeyPattern, () => {
      count()
      return redactedMarker
    })
    return { text: scrubbed, removed }
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
