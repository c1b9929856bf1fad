/**
 * What a value that did not decode got wrong, said as a person reads it: each field at fault once, with what is wrong
 * with it. For the HTTP API, whose `HttpApiDecodeError` carries the issues with their paths and a message that is
 * Schema's whole tree (`CreateSession └─ ["question"] └─ ...`), which the web page and every client would show as it
 * is (the issues stay in the body for programs); for MCP's tool arguments and for the config file's errors. A value
 * or a field's name is quoted only in part, and a few issues are said: an error never echoes a whole body back.
 */
/** One issue as the API's decode error carries it. */
export interface Issue {
  readonly tag: string
  readonly path: ReadonlyArray<string>
  readonly message: string
}

/** The most characters of a value or a name an error quotes. */
const quoteLimit = 80

/** The most characters of one issue. */
const issueLimit = 300

/** The most issues an error says; the others are counted. */
export const saidAtMost = 10

/** A text cut to `limit` characters, `…` where it was cut. */
export const excerpt = (text: string, limit = quoteLimit): string =>
  text.length <= limit ? text : `${text.slice(0, limit)}…`

const expectation = /^Expected (.+), actual (.+)$/s

/** An issue's message with the value it quotes cut short (`Expected string, actual "xxxxx…"`). */
const shortened = (message: string): string => {
  const match = /^(.*?), actual (.*)$/s.exec(message)
  return excerpt(match === null ? message : `${match[1]}, actual ${excerpt(match[2] ?? "")}`, issueLimit)
}

const issueOf = (value: unknown): Issue | undefined => {
  if (typeof value !== "object" || value === null) return undefined
  const tag: unknown = Reflect.get(value, "_tag")
  const path: unknown = Reflect.get(value, "path")
  const message: unknown = Reflect.get(value, "message")
  if (typeof tag !== "string" || !Array.isArray(path) || typeof message !== "string") return undefined
  return { tag, path: path.map((segment) => excerpt(String(segment))), message: shortened(message) }
}

/** A decode error's issues as its body carries them (`_tag`, `path`, `message`), the first few, each cut short. */
export const boundedIssues = (
  issues: unknown
): ReadonlyArray<{ readonly _tag: string; readonly path: ReadonlyArray<string>; readonly message: string }> =>
  (Array.isArray(issues) ? issues.slice(0, saidAtMost) : [])
    .map(issueOf)
    .filter((issue) => issue !== undefined)
    .map(({ message, path, tag }) => ({ _tag: tag, path, message }))

/**
 * A field's issues as one: a union fails once a member (`Expected "markdown", actual "pdf"`, then `"html"`, ...), said
 * together as `Expected "markdown" | "html" | ..., actual "pdf"`. Otherwise the first says it.
 */
const merged = (issues: ReadonlyArray<Issue>): Issue => {
  const first = issues[0] as Issue
  const expected = issues.map((issue) => expectation.exec(issue.message))
  const actual = expected[0]?.[2]
  if (issues.length < 2 || expected.some((match) => match === null || match[2] !== actual)) return first
  const alternatives = [...new Set(expected.map((match) => match?.[1] ?? ""))]
  return { ...first, message: `Expected ${alternatives.join(" | ")}, actual ${actual}` }
}

const saysNothing = (issue: Issue) => /^Expected undefined, /.test(issue.message)

/**
 * The issues as a decode error carries them, less those that say nothing (a wrong value's `Expected undefined` beside
 * what is really wrong with it): for the body's `issues`, which programs read.
 */
export const tellingIssues = (issues: unknown): ReadonlyArray<unknown> => {
  if (!Array.isArray(issues)) return []
  const telling = issues.filter((raw) => {
    const issue = issueOf(raw)
    return issue === undefined || !saysNothing(issue)
  })
  return telling.length === 0 ? issues : telling
}

/**
 * The issues worth saying, one a field, in the order of the fields' first issues. A wrong value inside an optional
 * field also fails the field's `undefined` alternative, at the field's own path: said only when nothing else is.
 */
export const issuesOf = (issues: unknown): ReadonlyArray<Issue> => {
  if (!Array.isArray(issues)) return []
  const all = issues.map(issueOf).filter((issue) => issue !== undefined)
  const worth = all.some((issue) => !saysNothing(issue)) ? all.filter((issue) => !saysNothing(issue)) : all
  const byField = new Map<string, Array<Issue>>()
  for (const issue of worth) {
    const key = issue.path.join(".")
    const field = byField.get(key) ?? []
    byField.set(key, field)
    field.push(issue)
  }
  return [...byField.values()].map(merged)
}

/** One issue in a sentence: `'question' is required`, `'maxRounds': Expected a positive number, actual 0`. */
const sentenceOf = (issue: Issue): string => {
  if (issue.path.length === 0) return issue.message
  const field = `'${issue.path.join(".")}'`
  if (issue.tag === "Missing") return `${field} is required`
  return issue.tag === "Unexpected" ? `${field} ${issue.message}` : `${field}: ${issue.message}`
}

/** The sentence for a decode error's issues (the first few of them), or undefined when it carries none. */
export const messageOf = (issues: unknown): string | undefined => {
  const worth = issuesOf(issues)
  if (worth.length === 0) return undefined
  const more = worth.length - saidAtMost
  return `${worth.slice(0, saidAtMost).map(sentenceOf).join("; ")}${more > 0 ? `; and ${more} more` : ""}.`
}
