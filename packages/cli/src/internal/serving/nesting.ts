/**
 * How deeply JSON nests its arrays and objects, counted without recursion: a value is refused past a depth before
 * anything recursive (Schema's decoder, its error formatter) walks it, which thousands of levels would take past the
 * stack. For the HTTP API's bodies (as text, before they are parsed) and MCP's tool arguments (as values).
 */

/** The deepest nesting of arrays and objects taken: an OpenAI client's tool schemas stay far inside it. */
export const maxNesting = 64

/** What is wrong with a value that nests deeper than `maxNesting`. */
export const tooDeep = `nested deeper than ${maxNesting} levels of arrays and objects`

const quote = 0x22
const backslash = 0x5c
const opening = new Set([0x5b, 0x7b])
const closing = new Set([0x5d, 0x7d])

/** Whether a JSON text nests its arrays and objects deeper than `limit`; brackets inside strings are text. */
export const textNestsDeeperThan = (text: string, limit: number): boolean => {
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

/** Whether a value nests arrays and objects deeper than `limit` (the value itself, if one, is the first level). */
export const valueNestsDeeperThan = (value: unknown, limit: number): boolean => {
  const pending: Array<readonly [unknown, number]> = [[value, 1]]
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [current, depth] = next
    if (typeof current !== "object" || current === null) continue
    if (depth > limit) return true
    for (const inner of Object.values(current)) pending.push([inner, depth + 1])
  }
  return false
}
