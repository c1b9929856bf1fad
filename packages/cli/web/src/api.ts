/** Calls to the server's API, with the API token when the server asked for one. */

const tokenKey = "deep-research-token"

/** A JSON value read from the server, before its fields are checked. */
export type Json = unknown

/** A field of an object as a string, if it is one. */
export const str = (value: Json, key: string): string | undefined => {
  if (typeof value !== "object" || value === null) return undefined
  const field: unknown = Reflect.get(value, key)
  return typeof field === "string" ? field : undefined
}

/** A field of an object as a number, if it is one. */
export const num = (value: Json, key: string): number | undefined => {
  if (typeof value !== "object" || value === null) return undefined
  const field: unknown = Reflect.get(value, key)
  return typeof field === "number" ? field : undefined
}

/** A field of an object as a boolean, if it is one. */
export const bool = (value: Json, key: string): boolean | undefined => {
  if (typeof value !== "object" || value === null) return undefined
  const field: unknown = Reflect.get(value, key)
  return typeof field === "boolean" ? field : undefined
}

/** A field of an object as a list, if it is one. */
export const list = (value: Json, key?: string): ReadonlyArray<Json> => {
  const field: unknown =
    key === undefined ? value : typeof value === "object" && value !== null ? Reflect.get(value, key) : undefined
  return Array.isArray(field) ? field : []
}

/** A failed call, with the server's message. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string
  ) {
    super(message)
  }
}

/** Raised when the server wants a token this page does not have (or has wrong). */
export const onUnauthorized: { callback: () => void } = { callback: () => {} }

export const setToken = (token: string): void => sessionStorage.setItem(tokenKey, token)

/** The headers every call carries. */
export const headers = (extra: Record<string, string> = {}): Record<string, string> => {
  const token = sessionStorage.getItem(tokenKey)
  return token === null || token === "" ? extra : { ...extra, authorization: `Bearer ${token}` }
}

const failure = async (response: Response): Promise<ApiError> => {
  if (response.status === 401) onUnauthorized.callback()
  const text = await response.text()
  let message = text
  try {
    const body: Json = JSON.parse(text)
    message = str(body, "message") ?? text
  } catch {
    // Not JSON: the text says it.
  }
  return new ApiError(response.status, message || `${response.status} ${response.statusText}`)
}

/** A call that answers JSON (or nothing). */
export const call = async (method: string, path: string, body?: Json): Promise<Json> => {
  const response = await fetch(path, {
    method,
    headers: headers(body === undefined ? {} : { "content-type": "application/json" }),
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  if (!response.ok) throw await failure(response)
  if (response.status === 204) return undefined
  return response.json()
}

/** A call that answers text. */
export const text = async (path: string): Promise<string> => {
  const response = await fetch(path, { headers: headers() })
  if (!response.ok) throw await failure(response)
  return response.text()
}

/** Saves a response as a file, through a link to a blob (the token rules out a plain link). */
export const download = async (path: string, name: string): Promise<void> => {
  const response = await fetch(path, { headers: headers() })
  if (!response.ok) throw await failure(response)
  const url = URL.createObjectURL(await response.blob())
  const link = document.createElement("a")
  link.href = url
  link.download = name
  document.body.append(link)
  link.click()
  link.remove()
  setTimeout(() => URL.revokeObjectURL(url), 10_000)
}
