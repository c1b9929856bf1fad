/**
 * Reading loosely shaped JSON (request bodies, scripted replies) without casts: every accessor checks the type and
 * falls back when the value is not what was expected.
 */

/** A JSON object. */
export type JsonObject = Readonly<Record<string, unknown>>

/** True for a plain object (not an array, not null). */
export const isObject = (value: unknown): value is JsonObject =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** The field of an object, or undefined. */
export const get = (value: unknown, key: string): unknown => (isObject(value) ? value[key] : undefined)

/** A string field, or the fallback. */
export const getString = (value: unknown, key: string, fallback: string): string => {
  const field = get(value, key)
  return typeof field === "string" ? field : fallback
}

/** A string field, or undefined. */
export const getOptionalString = (value: unknown, key: string): string | undefined => {
  const field = get(value, key)
  return typeof field === "string" ? field : undefined
}

/** A number field, or the fallback. */
export const getNumber = (value: unknown, key: string, fallback: number): number => {
  const field = get(value, key)
  return typeof field === "number" && Number.isFinite(field) ? field : fallback
}

/** An array field, or an empty array. */
export const getArray = (value: unknown, key: string): ReadonlyArray<unknown> => {
  const field = get(value, key)
  return Array.isArray(field) ? field : []
}

/** The object fields of an array field. */
export const getObjects = (value: unknown, key: string): ReadonlyArray<JsonObject> =>
  getArray(value, key).filter(isObject)

/** Splits a text into pieces of about `size` characters, so streams carry several deltas. */
export const pieces = (text: string, size: number): ReadonlyArray<string> => {
  if (text.length === 0) return []
  const out: Array<string> = []
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size))
  return out
}
