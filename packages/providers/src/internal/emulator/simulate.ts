/**
 * A simulated research world behind the emulator: model endpoints answer the pipeline's calls plausibly without a
 * script (they read the tools offered and the response format), and the search endpoints serve deterministic fake
 * pages under `/web/sim/`. Used by the CLI's `--simulate` mode and by benchmarks; fast and fully offline.
 */
import { anthropicToolUseBlocks, fakeFromSchema, type FakeContext } from "./fake.js"
import {
  get,
  getArray,
  getNumber,
  getObjects,
  getOptionalString,
  getString,
  isObject,
  type JsonObject
} from "./json.js"
import type { RecordedRequest, Reply } from "./types.js"

/** Options of the simulation. */
export interface SimulateOptions {
  /** Directives the supervisor delegates in its first round. Default 3. */
  readonly directives?: number | undefined
  /** Supervision rounds with directives before `researchComplete`. Default 1. */
  readonly supervisorRounds?: number | undefined
  /** Search rounds of each researcher before `researchComplete`. Default 1. */
  readonly searchRounds?: number | undefined
  /** Results per search query. Default 3. */
  readonly resultsPerQuery?: number | undefined
}

interface Settings {
  readonly directives: number
  readonly supervisorRounds: number
  readonly searchRounds: number
  readonly resultsPerQuery: number
}

// =============================================================================
// Fake web
// =============================================================================

const hash = (text: string): number => {
  let h = 2166136261
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i)
    h = Math.imul(h, 16777619)
  }
  return h >>> 0
}

const stopWords = new Set(
  (
    "the a an of and or in on for to is are was were be what how much many did does do which why when who whom " +
    "whose where there their this that these those with from by about into than as at it its"
  ).split(" ")
)

/** A URL-safe slug of a query: its first meaningful words. */
export const slugOf = (text: string): string =>
  text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s-]/gu, " ")
    .split(/\s+/)
    .filter((word) => word.length > 1 && !stopWords.has(word))
    .slice(0, 6)
    .join("-") || "topic"

const angles = [
  "an overview of the evidence",
  "key figures and recent data",
  "arguments for and against",
  "a review of the literature",
  "what practitioners report",
  "open questions and outlook"
]
const publishers = ["Research Institute", "University Press", "Policy Review", "Data Journal", "Science Weekly"]

/** One fake page: deterministic title and paragraphs from its slug and number. */
export const fakePage = (slug: string, index: number) => {
  const subject = slug.replace(/-/g, " ")
  const h = hash(`${slug}#${index}`)
  const share = 20 + (h % 60)
  const year = 2019 + (h % 6)
  const growth = 2 + (h % 17)
  const publisher = publishers[h % publishers.length] ?? "Research Institute"
  const angle = angles[index % angles.length] ?? "an overview"
  const title = `${subject.charAt(0).toUpperCase()}${subject.slice(1)}: ${angle}`
  const paragraphs = [
    `This article from the ${publisher} gives ${angle} on ${subject}.`,
    `A ${year} survey found that ${share}% of the organisations studied had direct experience with ${subject}, ` +
      `up ${growth} points on the previous survey.`,
    `Analysts attribute the change to lower costs, better tooling and clearer regulation, while noting that ` +
      `evidence on long-term effects of ${subject} remains limited.`,
    `Critics argue that the benefits of ${subject} are unevenly distributed and that independent replication ` +
      `is still scarce; the authors recommend further study before drawing firm conclusions.`
  ]
  return { title, paragraphs, publishedDate: `${year}-0${1 + (h % 9)}-1${h % 10}` }
}

const pageHtml = (slug: string, index: number): string => {
  const page = fakePage(slug, index)
  return [
    "<!doctype html>",
    `<html><head><meta charset="utf-8"><title>${page.title}</title></head>`,
    `<body><article><h1>${page.title}</h1>`,
    ...page.paragraphs.map((p) => `<p>${p}</p>`),
    `<p>Published ${page.publishedDate}.</p>`,
    "</article></body></html>"
  ].join("\n")
}

interface FakeResult {
  readonly url: string
  readonly title: string
  readonly snippet: string
  readonly text: string
  readonly publishedDate: string
}

const resultsFor = (baseUrl: string, query: string, count: number): ReadonlyArray<FakeResult> => {
  const slug = slugOf(query)
  return Array.from({ length: count }, (_, i) => {
    const page = fakePage(slug, i + 1)
    return {
      url: `${baseUrl}/web/sim/${slug}-${i + 1}`,
      title: page.title,
      snippet: page.paragraphs.slice(0, 2).join(" "),
      text: page.paragraphs.join("\n\n"),
      publishedDate: page.publishedDate
    }
  })
}

const pageOfUrl = (url: string): { readonly slug: string; readonly index: number } | undefined => {
  const match = /\/web\/sim\/([a-z0-9\p{L}-]+)-(\d+)$/u.exec(url.replace(/[?#].*$/, ""))
  return match?.[1] === undefined || match[2] === undefined ? undefined : { slug: match[1], index: Number(match[2]) }
}

// =============================================================================
// Conversations
// =============================================================================

interface Turn {
  readonly role: "user" | "assistant" | "tool"
  readonly text: string
  readonly toolCalls: ReadonlyArray<string>
}

/** A model request, read the same way whatever the vendor. */
interface Conversation {
  readonly system: string
  readonly turns: ReadonlyArray<Turn>
  readonly tools: ReadonlyMap<string, unknown>
  readonly forcedTool: string | undefined
  readonly responseSchema: unknown
  readonly model: string
}

const textOf = (content: unknown): string => {
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

const readOpenAi = (body: unknown): Conversation => {
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

const readAnthropic = (body: unknown): Conversation => {
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
const promptedSchema = (text: string): unknown => {
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

const collapse = (text: string): string => text.replace(/\s+/g, " ").trim()

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
const subjectOf = (conversation: Conversation): string => {
  const first = conversation.turns.find((turn) => turn.role === "user")?.text ?? ""
  const candidate =
    labelled(first, /^## Your assignment\s*/) ??
    labelled(first, /^(?:Research request|Question|Request|Topic)\s*:/i) ??
    labelled(first, /question[^:\n]*:/i) ??
    /<untrusted_data[^>]*\btitle="([^"]+)"/.exec(first)?.[1] ??
    labelled(first, /^Search the web for:/i) ??
    first.split("\n").find((line) => line.trim() !== "" && !line.trim().endsWith(":")) ??
    "the topic"
  return collapse(unwrapDirective(collapse(candidate))).slice(0, 200) || "the topic"
}

/** The text inside the first untrusted-data block of a page, when the request carries one. */
const pageTextOf = (conversation: Conversation): string | undefined => {
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
const numbered = (text: string): ReadonlyArray<Numbered> => {
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

const sentence = (text: string, fallback: string): string => {
  const cleaned = collapse(text.replace(/^[\s(:,-]+/, "")).replace(/[\s,;:-]+$/, "")
  const base = cleaned.length >= 12 ? cleaned : fallback
  return /[.!?]$/.test(base) ? base : `${base}.`
}

// =============================================================================
// Decisions
// =============================================================================

type Decision =
  | { readonly kind: "text"; readonly text: string }
  | { readonly kind: "json"; readonly value: unknown; readonly tool: string | undefined }
  | { readonly kind: "tools"; readonly calls: ReadonlyArray<{ readonly name: string; readonly arguments: unknown }> }

const countCalls = (conversation: Conversation, name: string): number =>
  conversation.turns.reduce((n, turn) => n + turn.toolCalls.filter((call) => call === name).length, 0)

const assistantTurns = (conversation: Conversation, name: string): number =>
  conversation.turns.filter((turn) => turn.toolCalls.includes(name)).length

const directiveAngles = [
  "the current evidence, key figures and how they were measured",
  "the main arguments, stakeholders and competing perspectives",
  "recent developments, open questions and what experts expect next",
  "practical consequences and documented case studies",
  "the history and the definitions that frame the debate"
]

const supervisorTurn = (conversation: Conversation, options: Settings, fake: FakeContext): Decision => {
  if (assistantTurns(conversation, "conductResearch") >= options.supervisorRounds) {
    return { kind: "tools", calls: [{ name: "researchComplete", arguments: {} }] }
  }
  const subject = subjectOf(conversation)
  const schema = conversation.tools.get("conductResearch")
  const round = assistantTurns(conversation, "conductResearch")
  const count = Math.max(1, round === 0 ? options.directives : Math.min(2, options.directives))
  const calls = Array.from({ length: count }, (_, i) => {
    const angle = directiveAngles[(round * count + i) % directiveAngles.length] ?? "the evidence"
    const base = fakeFromSchema(schema, fake)
    return {
      name: "conductResearch",
      arguments: {
        ...(isObject(base) ? base : {}),
        topic: `Research ${angle} regarding: ${subject.replace(/[.?!]+$/, "")}. Gather specific, sourced facts and note any disagreement.`,
        perspective: `An analyst focused on ${angle.split(",")[0] ?? angle}`,
        evidenceNeeded: "Figures with dates, primary sources and named studies",
        priority: 1 + (i % 3)
      }
    }
  })
  return { kind: "tools", calls }
}

const researcherTurn = (conversation: Conversation, options: Settings): Decision => {
  const subject = subjectOf(conversation)
  if (countCalls(conversation, "webSearch") < options.searchRounds) {
    const round = countCalls(conversation, "webSearch")
    const base = subject
    const queries =
      round === 0 ? [base.slice(0, 120), `${base.slice(0, 100)} statistics`] : [`${base.slice(0, 100)} criticism`]
    return { kind: "tools", calls: [{ name: "webSearch", arguments: { queries } }] }
  }
  // Results arrive as tool messages, or as user messages under the JSON action protocol.
  const sources = numbered(
    conversation.turns
      .slice(1)
      .filter((turn) => turn.role !== "assistant")
      .map((t) => t.text)
      .join("\n")
  )
  const summary =
    sources.length === 0
      ? `No usable sources were found on ${subject}.`
      : sources
          .slice(0, 5)
          .map((source) => `${sentence(source.line, `A source addresses ${subject}`)} [${source.n}]`)
          .join(" ")
  return { kind: "tools", calls: [{ name: "researchComplete", arguments: { summary } }] }
}

const reportText = (conversation: Conversation): string => {
  const all = [conversation.system, ...conversation.turns.map((turn) => turn.text)].join("\n")
  const subject = subjectOf(conversation).replace(/[.?!]$/, "")
  const sources = numbered(all).slice(0, 8)
  const cite = (i: number): string => {
    const source = sources[i % Math.max(1, sources.length)]
    return source === undefined ? "" : ` [${source.n}]`
  }
  const findings = sources.map((source) => `${sentence(source.line, `Evidence on ${subject}`)} [${source.n}]`)
  if (!/final report/i.test(conversation.system)) {
    // Intermediate writing (compression, notes): the findings themselves, each cited.
    return findings.length > 0 ? findings.join("\n\n") : `The available evidence on ${subject} is limited.`
  }
  return [
    `# ${subject}`,
    "",
    `${subject} has been examined from several angles, with measured effects and open questions${cite(0)}.`,
    "",
    "## Key findings",
    "",
    ...(findings.length > 0 ? findings.map((f) => `- ${f}`) : [`- The available evidence on ${subject} is limited.`]),
    "",
    "## Conclusion",
    "",
    `The evidence points in a consistent direction, though independent replication remains scarce${cite(1)}.`
  ].join("\n")
}

const actionNames = (text: string): ReadonlyArray<string> => {
  try {
    return getObjects(JSON.parse(text), "actions").map((action) => getString(action, "tool", ""))
  } catch {
    return []
  }
}

/**
 * A model without tool calling gets the tools in its system prompt (core's JSON action protocol) and its earlier
 * actions as JSON text: read both back, so the agent turns work the same.
 */
const actionProtocol = (conversation: Conversation): Conversation | undefined => {
  if (!conversation.system.includes("You act through tools.")) return undefined
  const tools = new Map<string, unknown>()
  for (const match of conversation.system.matchAll(/^- ([A-Za-z0-9_-]+): [^\n]*\n {2}arguments: (.+)$/gm)) {
    const name = match[1] ?? ""
    try {
      tools.set(name, JSON.parse(match[2] ?? ""))
    } catch {
      tools.set(name, undefined)
    }
  }
  const turns = conversation.turns.map((turn) =>
    turn.role === "assistant" ? { ...turn, toolCalls: actionNames(turn.text) } : turn
  )
  return { ...conversation, tools, turns }
}

const decide = (conversation: Conversation, options: Settings): Decision => {
  const protocol = actionProtocol(conversation)
  if (protocol !== undefined) {
    const turn = protocol.tools.has("conductResearch")
      ? supervisorTurn(protocol, options, { subject: subjectOf(protocol), index: 0 })
      : protocol.tools.has("webSearch")
        ? researcherTurn(protocol, options)
        : undefined
    if (turn?.kind === "tools") {
      const actions = turn.calls.map((call) => ({ tool: call.name, arguments: call.arguments }))
      return { kind: "text", text: JSON.stringify({ actions }) }
    }
  }
  const fake: FakeContext = { subject: subjectOf(conversation), index: 0, pageText: pageTextOf(conversation) }
  if (conversation.responseSchema !== undefined) {
    return { kind: "json", value: fakeFromSchema(conversation.responseSchema, fake), tool: undefined }
  }
  const forced = conversation.forcedTool
  if (forced !== undefined && !["conductResearch", "webSearch", "extractContent"].includes(forced)) {
    return { kind: "json", value: fakeFromSchema(conversation.tools.get(forced), fake), tool: forced }
  }
  const prompted = promptedSchema(
    [conversation.system, ...conversation.turns.filter((t) => t.role === "user").map((t) => t.text)].join("\n")
  )
  if (prompted !== undefined) return { kind: "json", value: fakeFromSchema(prompted, fake), tool: undefined }
  if (conversation.tools.has("conductResearch")) return supervisorTurn(conversation, options, fake)
  if (conversation.tools.has("webSearch")) return researcherTurn(conversation, options)
  return { kind: "text", text: reportText(conversation) }
}

// =============================================================================
// Replies
// =============================================================================

let counter = 0
const nextId = (prefix: string): string => `${prefix}sim${(++counter).toString(36).padStart(8, "0")}`
const estimate = (text: string): number => Math.max(1, Math.ceil(text.length / 4))

const openaiReply = (decision: Decision, conversation: Conversation, inputText: string): Reply => {
  const content =
    decision.kind === "text"
      ? decision.text
      : decision.kind === "json" && decision.tool === undefined
        ? JSON.stringify(decision.value)
        : null
  const calls =
    decision.kind === "tools"
      ? decision.calls
      : decision.kind === "json" && decision.tool !== undefined
        ? [{ name: decision.tool, arguments: decision.value }]
        : []
  const toolCalls = calls.map((call) => ({
    id: nextId("call_"),
    type: "function",
    function: { name: call.name, arguments: JSON.stringify(call.arguments) }
  }))
  const output = (content ?? "") + toolCalls.map((call) => call.function.arguments).join("")
  return {
    kind: "json",
    body: {
      id: nextId("chatcmpl-"),
      object: "chat.completion",
      created: Math.floor(Date.now() / 1000),
      model: conversation.model,
      choices: [
        {
          index: 0,
          message: { role: "assistant", content, ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}) },
          finish_reason: toolCalls.length > 0 ? "tool_calls" : "stop"
        }
      ],
      usage: {
        prompt_tokens: estimate(inputText),
        completion_tokens: estimate(output),
        total_tokens: estimate(inputText) + estimate(output)
      }
    }
  }
}

const anthropicReply = (decision: Decision, conversation: Conversation, inputText: string): Reply => {
  const blocks: Array<JsonObject> =
    decision.kind === "text"
      ? [{ type: "text", text: decision.text }]
      : decision.kind === "json"
        ? decision.tool === undefined
          ? [{ type: "text", text: JSON.stringify(decision.value) }]
          : anthropicToolUseBlocks([{ name: decision.tool, arguments: decision.value }], nextId)
        : anthropicToolUseBlocks(decision.calls, nextId)
  const output = JSON.stringify(blocks)
  return {
    kind: "json",
    body: {
      id: nextId("msg_"),
      type: "message",
      role: "assistant",
      model: conversation.model,
      content: blocks,
      stop_reason: blocks.some((b) => b["type"] === "tool_use") ? "tool_use" : "end_turn",
      stop_sequence: null,
      usage: { input_tokens: estimate(inputText), output_tokens: estimate(output) }
    }
  }
}

const anthropicWebSearch = (baseUrl: string, conversation: Conversation, options: Settings): Reply => {
  const query = subjectOf(conversation).replace(/^Search the web for:\s*/i, "")
  const results = resultsFor(baseUrl, query, options.resultsPerQuery)
  const toolId = nextId("srvtoolu_")
  const content: Array<JsonObject> = [
    { type: "server_tool_use", id: toolId, name: "web_search", input: { query } },
    {
      type: "web_search_tool_result",
      tool_use_id: toolId,
      content: results.map((r) => ({
        type: "web_search_result",
        url: r.url,
        title: r.title,
        encrypted_content: "",
        page_age: null
      }))
    },
    ...results.map((r) => ({
      type: "text",
      text: r.snippet,
      citations: [
        { type: "web_search_result_location", url: r.url, title: r.title, cited_text: r.snippet, encrypted_index: "" }
      ]
    }))
  ]
  return {
    kind: "json",
    body: {
      id: nextId("msg_"),
      type: "message",
      role: "assistant",
      model: conversation.model,
      content,
      stop_reason: "end_turn",
      stop_sequence: null,
      usage: { input_tokens: 500, output_tokens: 200, server_tool_use: { web_search_requests: 1 } }
    }
  }
}

const openaiWebSearch = (baseUrl: string, body: unknown, options: Settings): Reply => {
  const input = get(body, "input")
  const query = collapse(typeof input === "string" ? input : (textOf(input).split("\n")[0] ?? ""))
    .replace(/^Search the web for:\s*/i, "")
    .replace(/\s+(Prefer|Cite) .*$/, "")
  const results = resultsFor(baseUrl, query, options.resultsPerQuery)
  let text = ""
  const annotations: Array<JsonObject> = []
  for (const result of results) {
    text += `- ${result.snippet}`
    const link = ` ([${new URL(result.url).host}](${result.url}))`
    annotations.push({
      type: "url_citation",
      start_index: text.length + 1,
      end_index: text.length + link.length,
      title: result.title,
      url: result.url
    })
    text += `${link}\n`
  }
  return {
    kind: "json",
    body: {
      id: nextId("resp_"),
      object: "response",
      status: "completed",
      model: getString(body, "model", "simulated"),
      output: [
        {
          id: nextId("ws_"),
          type: "web_search_call",
          status: "completed",
          action: { type: "search", query, sources: results.map((r) => ({ type: "url", url: r.url })) }
        },
        {
          id: nextId("msg_"),
          type: "message",
          role: "assistant",
          status: "completed",
          content: [{ type: "output_text", text, annotations, logprobs: [] }]
        }
      ],
      usage: { input_tokens: 500, output_tokens: estimate(text), total_tokens: 500 + estimate(text) }
    }
  }
}

// =============================================================================
// The fallback
// =============================================================================

/** The fallback answering every endpoint of a simulated world. */
export const simulator = (baseUrl: string, options?: SimulateOptions) => {
  const settings: Settings = {
    directives: options?.directives ?? 3,
    supervisorRounds: options?.supervisorRounds ?? 1,
    searchRounds: options?.searchRounds ?? 1,
    resultsPerQuery: options?.resultsPerQuery ?? 3
  }
  return (request: RecordedRequest): Reply | undefined => {
    const body = request.body
    const inputText = JSON.stringify(body ?? "")
    switch (request.endpoint) {
      case "openai.chat": {
        const conversation = readOpenAi(body)
        return openaiReply(decide(conversation, settings), conversation, inputText)
      }
      case "anthropic.messages": {
        const conversation = readAnthropic(body)
        const serverSearch = getObjects(body, "tools").some((t) => getString(t, "type", "").startsWith("web_search_"))
        if (serverSearch) return anthropicWebSearch(baseUrl, conversation, settings)
        return anthropicReply(decide(conversation, settings), conversation, inputText)
      }
      case "openai.responses":
        return openaiWebSearch(baseUrl, body, settings)
      case "tavily.search": {
        const count = Math.min(getNumber(body, "max_results", settings.resultsPerQuery), settings.resultsPerQuery)
        const raw = get(body, "include_raw_content")
        const results = resultsFor(baseUrl, getString(body, "query", ""), count)
        return {
          kind: "json",
          body: {
            query: getString(body, "query", ""),
            answer: null,
            follow_up_questions: null,
            images: [],
            results: results.map((r, i) => ({
              url: r.url,
              title: r.title,
              content: r.snippet,
              score: Math.round((0.9 - i * 0.07) * 100) / 100,
              raw_content: raw === true || raw === "markdown" || raw === "text" ? r.text : null,
              published_date: r.publishedDate
            })),
            response_time: 0.01,
            request_id: nextId("")
          }
        }
      }
      case "tavily.extract": {
        const urls = getArray(body, "urls").filter((u): u is string => typeof u === "string")
        const pages = urls.map((url) => ({ url, page: pageOfUrl(url) }))
        return {
          kind: "json",
          body: {
            results: pages.flatMap(({ url, page }) =>
              page === undefined
                ? []
                : [{ url, raw_content: fakePage(page.slug, page.index).paragraphs.join("\n\n"), images: [] }]
            ),
            failed_results: pages.flatMap(({ url, page }) =>
              page === undefined ? [{ url, error: "Failed to fetch url" }] : []
            ),
            response_time: 0.01,
            request_id: nextId("")
          }
        }
      }
      case "exa.search": {
        const results = resultsFor(
          baseUrl,
          getString(body, "query", ""),
          Math.min(getNumber(body, "numResults", 3), settings.resultsPerQuery)
        )
        return {
          kind: "json",
          body: {
            requestId: nextId(""),
            resolvedSearchType: "neural",
            results: results.map((r, i) => ({
              id: r.url,
              url: r.url,
              title: r.title,
              publishedDate: r.publishedDate,
              author: null,
              score: 0.9 - i * 0.05,
              text: r.text,
              highlights: [r.snippet]
            })),
            costDollars: { total: 0.005 }
          }
        }
      }
      case "exa.contents": {
        const urls = [...getArray(body, "urls"), ...getArray(body, "ids")].filter(
          (u): u is string => typeof u === "string"
        )
        const pages = urls.map((url) => ({ url, page: pageOfUrl(url) }))
        return {
          kind: "json",
          body: {
            requestId: nextId(""),
            results: pages.flatMap(({ url, page }) => {
              if (page === undefined) return []
              const fake = fakePage(page.slug, page.index)
              return [{ id: url, url, title: fake.title, text: fake.paragraphs.join("\n\n") }]
            }),
            statuses: pages.map(({ url, page }) =>
              page === undefined
                ? { id: url, status: "error", error: { tag: "CRAWL_NOT_FOUND", httpStatusCode: 404 } }
                : { id: url, status: "success" }
            )
          }
        }
      }
      case "perplexity.chat": {
        const conversation = readOpenAi(body)
        const results = resultsFor(baseUrl, subjectOf(conversation), settings.resultsPerQuery)
        const text = results.map((r, i) => `${r.snippet} [${i + 1}]`).join("\n\n")
        return {
          kind: "json",
          body: {
            id: nextId("pplx-"),
            object: "chat.completion",
            created: Math.floor(Date.now() / 1000),
            model: conversation.model,
            choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop" }],
            citations: results.map((r) => r.url),
            search_results: results.map((r) => ({
              title: r.title,
              url: r.url,
              date: r.publishedDate,
              snippet: r.snippet,
              source: "web"
            })),
            usage: {
              prompt_tokens: estimate(inputText),
              completion_tokens: estimate(text),
              total_tokens: estimate(inputText) + estimate(text)
            }
          }
        }
      }
      case "semanticScholar.search": {
        const query = request.query["query"] ?? ""
        const limit = Math.min(Number(request.query["limit"] ?? "3") || 3, settings.resultsPerQuery)
        const results = resultsFor(baseUrl, query, limit)
        return {
          kind: "json",
          body: {
            total: results.length,
            offset: 0,
            data: results.map((r, i) => ({
              paperId: `sim${hash(r.url).toString(16)}`,
              title: r.title,
              url: r.url,
              abstract: r.text,
              year: Number(r.publishedDate.slice(0, 4)),
              authors: [{ authorId: String(1000 + i), name: `Author ${String.fromCharCode(65 + i)}` }],
              citationCount: 10 + i,
              publicationDate: r.publishedDate,
              venue: "Simulated Journal",
              externalIds: {},
              openAccessPdf: null
            }))
          }
        }
      }
      case "web.page": {
        const page = pageOfUrl(request.path)
        if (page === undefined) return undefined
        return {
          kind: "raw",
          status: 200,
          headers: { "content-type": "text/html; charset=utf-8" },
          body: pageHtml(page.slug, page.index)
        }
      }
    }
  }
}
