/**
 * Fake secrets for the tests of the doors (the CLI, `/api`, `/v1`, `/mcp` over HTTP and stdio): an API token of 44
 * characters and a key for every vendor, a question that carries each of them in the forms a client or a model may
 * (whole, cut short, URL-encoded, JSON-quoted), and the search for any of them in whatever the product wrote.
 */
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { prefixLengthOf } from "@deep-research/providers/Secrets"

/** The token of the server, 44 characters, as the issue tried it. */
export const token = "Zq7xW2vN9pL4kR8tY3mB6cF1hJ5gD0sA7eU2iO9wQ4zX"

/** A key for every variable the product reads one from. */
export const keys = {
  OPENAI_API_KEY: "sk-proj-FAKEOPENAI0123456789abcdefghijklmn",
  ANTHROPIC_API_KEY: "sk-ant-api03-FAKEANTHROPIC0123456789abcdefgh",
  TAVILY_API_KEY: "tvly-FAKETAVILY-0123456789abcdefghijk",
  EXA_API_KEY: "exa-FAKEEXA-0123456789abcdefghijklmnop",
  PERPLEXITY_API_KEY: "pplx-FAKEPERPLEXITY0123456789abcdefgh",
  SEMANTIC_SCHOLAR_API_KEY: "s2-FAKESCHOLAR0123456789abcdefghijkl",
  OPENALEX_API_KEY: "oa-FAKEOPENALEX0123456789abcdefghijk",
  NCBI_API_KEY: "ncbi-FAKENCBI0123456789abcdefghijklmn"
} as const

/** Every secret: the token and the keys. */
export const secrets: ReadonlyArray<string> = [token, ...Object.values(keys)]

/** The environment of a process that holds them all. */
export const environment: Record<string, string> = { DEEP_RESEARCH_API_TOKEN: token, ...keys }

/**
 * A question holding every secret whole, then cut short (to its shortest identifying prefix and a few characters
 * more), URL-encoded in a link, and JSON-quoted.
 */
export const question = [
  "How do tides work? My credentials, to help:",
  ...secrets.map((secret) => `whole ${secret}`),
  ...secrets.map((secret) => `cut ${secret.slice(0, prefixLengthOf(secret) + 2)}.`),
  ...secrets.map((secret) => `link https://example.test/?key=${encodeURIComponent(`k ${secret}`)}`),
  ...secrets.map((secret) => `quoted ${JSON.stringify({ key: `"${secret}"` })}`)
].join("\n")

/**
 * What must never be found: each secret's shortest identifying prefix, raw and URL-encoded (a prefix is found in
 * every longer form of the secret too).
 */
const needles: ReadonlyArray<string> = secrets.flatMap((secret) => {
  const prefix = secret.slice(0, prefixLengthOf(secret))
  return [...new Set([prefix, encodeURIComponent(prefix)])]
})

/** The needles a text holds, with a little of the text around the first, for the assertion's message. */
export const leaks = (what: string, text: string): ReadonlyArray<string> =>
  needles.flatMap((needle) => {
    const at = text.indexOf(needle)
    return at === -1 ? [] : [`${what}: …${text.slice(Math.max(0, at - 40), at + needle.length + 20)}…`]
  })

/** Every file under a folder, as text. */
export const filesUnder = (dir: string): ReadonlyArray<{ readonly path: string; readonly text: string }> =>
  fs.existsSync(dir)
    ? fs.readdirSync(dir, { recursive: true, withFileTypes: true }).flatMap((entry) => {
        if (!entry.isFile()) return []
        const path = nodePath.join(entry.parentPath, entry.name)
        return [{ path, text: fs.readFileSync(path).toString("utf8") }]
      })
    : []

/** The needles found in every file under a folder. */
export const leaksInFiles = (dir: string): ReadonlyArray<string> =>
  filesUnder(dir).flatMap((file) => leaks(file.path, file.text))
