/**
 * A model request read the same way whatever the vendor (OpenAI chat, Anthropic messages, or the JSON action protocol
 * in a prompt), and what the simulated world reads out of it: the subject, the page being summarised, the numbered
 * sources a text lists.
 */
import { get, getArray, getObjects, getOptionalString, getString, isObject } from "../wire/json.js"

export interface Turn {
  readonly role: "user" | "assistant" | "tool"
  readonly text: string
  readonly toolCalls: ReadonlyArray<string>
}

/** A model request, read the same way whatever the vendor. */
export interface Conversation {
  readonly system: string
  readonly turns: ReadonlyArray<Turn>
  readonly tools: ReadonlyMap<string, unknown>
  readonly forcedTool: string | undefined
  readonly responseSchema: unknown
  readonly model: string
}

export const textOf = (content: unknown): string => {
  if (typeof content === "string") return content
  return getArray({ content }, "content")
    .map((part) => {
      if (typeof part === "string") return part
      const type = getString(part, "type", "")
      if (type === "text" || type === "input_text") return getString(part, "text", "")
      if (type === "tool_result") return textOf(get(part, "content"))
      return ""
    })
    .join("\n")
}

export const readOpenAi = (body: unknown): Conversation => {
  const turns: Array<Turn> = []
  let system = ""
  for (const message of getObjects(body, "messages")) {
    const role = getString(message, "role", "user")
    const text = textOf(get(message, "content"))
    if (role === "system" || role === "developer") system += `${text}\n`
    else if (role === "assistant") {
      const calls = getObjects(message, "tool_calls").map((call) => getString(get(call, "function"), "name", ""))
      turns.push({ role: "assistant", text, toolCalls: calls })
    } else turns.push({ role: role === "tool" ? "tool" : "user", text, toolCalls: [] })
  }
  const tools = new Map<string, unknown>()
  for (const tool of getObjects(body, "tools")) {
    const fn = get(tool, "function")
    tools.set(getString(fn, "name", ""), get(fn, "parameters"))
  }
  const choice = get(body, "tool_choice")
  const format = get(body, "response_format")
  return {
    system,
    turns,
    tools,
    forcedTool: getOptionalString(get(choice, "function"), "name"),
    responseSchema:
      getString(format, "type", "") === "json_schema" ? get(get(format, "json_schema"), "schema") : undefined,
    model: getString(body, "model", "simulated")
  }
}

export const readAnthropic = (body: unknown): Conversation => {
  const turns: Array<Turn> = []
  for (const message of getObjects(body, "messages")) {
    const content = get(message, "content")
    const blocks = Array.isArray(content) ? content.filter(isObject) : []
    if (getString(message, "role", "user") === "assistant") {
      const calls = blocks.filter((b) => get(b, "type") === "tool_use").map((b) => getString(b, "name", ""))
      turns.push({ role: "assistant", text: textOf(content), toolCalls: calls })
    } else {
      const isToolResult = blocks.some((b) => get(b, "type") === "tool_result")
      turns.push({ role: isToolResult ? "tool" : "user", text: textOf(content), toolCalls: [] })
    }
  }
  const tools = new Map<string, unknown>()
  for (const tool of getObjects(body, "tools")) {
    if (get(tool, "input_schema") !== undefined) tools.set(getString(tool, "name", ""), get(tool, "input_schema"))
  }
  const choice = get(body, "tool_choice")
  const format = get(get(body, "output_config"), "format")
  return {
    system: textOf(get(body, "system")),
    turns,
    tools,
    forcedTool: getString(choice, "type", "") === "tool" ? getOptionalString(choice, "name") : undefined,
    responseSchema: getString(format, "type", "") === "json_schema" ? get(format, "schema") : undefined,
    model: getString(body, "model", "simulated")
  }
}

/** The JSON schema core's `generateObject` appends to a prompt when the model has no native structured output. */
export const promptedSchema = (text: string): unknown => {
  const marker = "matching this JSON schema:"
  const at = text.lastIndexOf(marker)
  if (at < 0) return undefined
  const rest = text.slice(at + marker.length).trim()
  let depth = 0
  let inString = false
  let escaped = false
  for (let i = 0; i < rest.length; i++) {
    const c = rest[i]
    if (inString) {
      if (escaped) escaped = false
      else if (c === "\\") escaped = true
      else if (c === '"') inString = false
    } else if (c === '"') inString = true
    else if (c === "{") depth++
    else if (c === "}") {
      depth--
      if (depth === 0) {
        try {
          return JSON.parse(rest.slice(0, i + 1))
        } catch {
          return undefined
        }
      }
    }
  }
  return undefined
}

export const collapse = (text: string): string => text.replace(/\s+/g, " ").trim()

/** Our own directive wording, so that a researcher's subject is the question again. */
const unwrapDirective = (text: string): string =>
  text.replace(/^Research .*? regarding: /, "").replace(/\. Gather specific, sourced facts.*$/, "")

/** The first non-empty line after a `Label:` line, or the rest of a `Label: text` line. */
const labelled = (text: string, label: RegExp): string | undefined => {
  const lines = text.split("\n")
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? ""
    const match = label.exec(line)
    if (match === null) continue
    const rest = line.slice(match.index + match[0].length).trim()
    if (rest !== "") return rest
    const next = lines.slice(i + 1).find((l) => l.trim() !== "")
    if (next !== undefined) return next
  }
  return undefined
}

/** What the conversation is about: the question, the researcher's assignment, or the page to summarise. */
export const subjectOf = (conversation: Conversation): string => {
  const first = conversation.turns.find((turn) => turn.role === "user")?.text ?? ""
  const candidate =
    labelled(first, /^## Your assignment\s*/) ??
    labelled(first, /^(?:Research request|Question|Request|Topic)\s*:/i) ??
    // The evaluation's prompts put the question in a block of its own, before rubrics that say "question:".
    /^<question>\n([\s\S]*?)\n<\/question>$/m.exec(first)?.[1] ??
    labelled(first, /question[^:\n]*:/i) ??
    /<untrusted_data[^>]*\btitle="([^"]+)"/.exec(first)?.[1] ??
    labelled(first, /^Search the web for:/i) ??
    first.split("\n").find((line) => line.trim() !== "" && !line.trim().endsWith(":")) ??
    "the topic"
  return collapse(unwrapDirective(collapse(candidate))).slice(0, 200) || "the topic"
}

/** The text inside the first untrusted-data block of a page, when the request carries one. */
export const pageTextOf = (conversation: Conversation): string | undefined => {
  const text = conversation.turns.find((turn) => turn.role === "user")?.text ?? ""
  const match = /<untrusted_data[^>]*kind="(?:web page|document)"[^>]*>\n?([\s\S]*?)<\/untrusted_data>/.exec(text)
  return match?.[1]?.trim()
}

/** A numbered source a request shows: its number and the best sentence about it. */
interface Numbered {
  readonly n: number
  readonly line: string
}

/** The sentence of a source's text a finding would quote: the first with a measured figure, else the first. */
const firstSentence = (text: string): string => {
  const body = collapse(text.replace(/^[^\n]*:\s*$/m, "").replace(/Key excerpts:[\s\S]*$/, ""))
  const sentences = (body.match(/[^.!?]+[.!?]+/g) ?? [body]).map((s) => s.trim()).filter((s) => s.length >= 20)
  return (sentences.find((s) => /\d%|\d \w+ points/.test(s)) ?? sentences[0] ?? body).slice(0, 300)
}

/**
 * The numbered sources a text lists: entries `[n] … · title` followed by an untrusted block (search results), lines
 * `[n] title — url` (source lists), or else the `[n]` markers inside untrusted blocks (findings).
 */
export const numbered = (text: string): ReadonlyArray<Numbered> => {
  const seen = new Map<number, string>()
  for (const match of text.matchAll(/^\[(\d{1,3})\][^\n]*\n<untrusted_data[^>]*>\n([\s\S]*?)<\/untrusted_data>/gm)) {
    const n = Number(match[1])
    if (!seen.has(n)) seen.set(n, firstSentence(match[2] ?? ""))
  }
  for (const match of text.matchAll(/^\[(\d{1,3})\][^\n]*\n(?!\[)([^\n<]{20,})/gm)) {
    const n = Number(match[1])
    if (!seen.has(n)) seen.set(n, firstSentence(match[2] ?? ""))
  }
  for (const match of text.matchAll(/^\[(\d{1,3})\]\s+(?!already shown)(?:[A-Z]+(?: of \[\d+\])? · )?(.+)$/gm)) {
    const n = Number(match[1])
    if (!seen.has(n)) seen.set(n, collapse((match[2] ?? "").replace(/\s+(?:—\s+\S+|\(\S+\))$/, "")))
  }
  if (seen.size === 0) {
    for (const block of text.matchAll(/<untrusted_data[^>]*>([\s\S]*?)<\/untrusted_data>/g)) {
      for (const match of (block[1] ?? "").matchAll(/([^.\n[\]]{12,200})\s*\[(\d{1,3})\]/g)) {
        const n = Number(match[2])
        if (!seen.has(n)) seen.set(n, collapse(match[1] ?? ""))
      }
    }
  }
  return [...seen.entries()].sort(([a], [b]) => a - b).map(([n, line]) => ({ n, line }))
}

export const sentence = (text: string, fallback: string): string => {
  const cleaned = collapse(text.replace(/^[\s(:,-]+/, "")).replace(/[\s,;:-]+$/, "")
  const base = cleaned.length >= 12 ? cleaned : fallback
  return /[.!?]$/.test(base) ? base : `${base}.`
}
