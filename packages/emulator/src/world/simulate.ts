/**
 * A simulated research world behind the emulator: model endpoints answer the pipeline's calls plausibly without a
 * script (they read the tools offered and the response format), and the search endpoints serve deterministic fake
 * pages under `/web/sim/`. Used by the CLI's `--simulate` mode and by benchmarks; fast and fully offline.
 */
import {
  collapse,
  type Conversation,
  numbered,
  pageTextOf,
  promptedSchema,
  readAnthropic,
  readOpenAi,
  sentence,
  subjectOf,
  textOf
} from "./conversation.js"
import { anthropicToolUseBlocks, fakeFromSchema, type FakeContext } from "./fake.js"
import { resultsFor, searchReply } from "./fakeWeb.js"
import { keylessSearchReply } from "./keylessWorld.js"
import { claimVerdicts, isClaimCheck } from "./verifier.js"
import { get, getObjects, getString, type JsonObject } from "../wire/json.js"
import { type Refusals, refusal } from "./localServers.js"
import type { RecordedRequest, Reply } from "../wire/types.js"

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
  /**
   * The OpenAI-compatible chat endpoint plays a local server that lacks a capability, refusing requests that use it
   * the way that server does: tools as Ollama, vLLM without auto tool choice, or llama.cpp without `--jinja`, and
   * `json_schema` response formats.
   */
  readonly refuse?: Refusals | undefined
}

interface Settings {
  readonly directives: number
  readonly supervisorRounds: number
  readonly searchRounds: number
  readonly resultsPerQuery: number
  readonly refuse: NonNullable<SimulateOptions["refuse"]>
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

/** A tool call whose arguments are made from the tool's schema as the request sent it, worded after the hints. */
const callOf = (
  conversation: Conversation,
  name: string,
  fake: FakeContext,
  hints: Readonly<Record<string, unknown>>
): { readonly name: string; readonly arguments: unknown } => ({
  name,
  arguments: fakeFromSchema(conversation.tools.get(name), { ...fake, hints })
})

const supervisorTurn = (conversation: Conversation, options: Settings, fake: FakeContext): Decision => {
  if (assistantTurns(conversation, "conductResearch") >= options.supervisorRounds) {
    return { kind: "tools", calls: [callOf(conversation, "researchComplete", fake, {})] }
  }
  const subject = subjectOf(conversation)
  const round = assistantTurns(conversation, "conductResearch")
  const count = Math.max(1, round === 0 ? options.directives : Math.min(2, options.directives))
  const calls = Array.from({ length: count }, (_, i) => {
    const angle = directiveAngles[(round * count + i) % directiveAngles.length] ?? "the evidence"
    return callOf(conversation, "conductResearch", fake, {
      topic: `Research ${angle} regarding: ${subject.replace(/[.?!]+$/, "")}. Gather specific, sourced facts and note any disagreement.`,
      perspective: `An analyst focused on ${angle.split(",")[0] ?? angle}`,
      evidenceNeeded: "Figures with dates, primary sources and named studies",
      priority: 1 + (i % 3)
    })
  })
  return { kind: "tools", calls }
}

const researcherTurn = (conversation: Conversation, options: Settings): Decision => {
  const subject = subjectOf(conversation)
  const fake: FakeContext = { subject, index: 0 }
  if (countCalls(conversation, "webSearch") < options.searchRounds) {
    const round = countCalls(conversation, "webSearch")
    const base = subject
    const queries =
      round === 0 ? [base.slice(0, 120), `${base.slice(0, 100)} statistics`] : [`${base.slice(0, 100)} criticism`]
    return { kind: "tools", calls: [callOf(conversation, "webSearch", fake, { queries })] }
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
  return { kind: "tools", calls: [callOf(conversation, "researchComplete", fake, { summary })] }
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
  if (isClaimCheck(conversation)) {
    return { kind: "json", value: claimVerdicts(conversation), tool: conversation.forcedTool }
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
    resultsPerQuery: options?.resultsPerQuery ?? 3,
    refuse: options?.refuse ?? {}
  }
  return (request: RecordedRequest): Reply | undefined => {
    const body = request.body
    const inputText = JSON.stringify(body ?? "")
    switch (request.endpoint) {
      case "openai.chat": {
        const refused = refusal(body, settings.refuse)
        if (refused !== undefined) return refused
        const conversation = readOpenAi(body)
        return openaiReply(decide(conversation, settings), conversation, inputText)
      }
      case "anthropic.messages": {
        const conversation = readAnthropic(body)
        const serverSearch = getObjects(body, "tools").some((t) => getString(t, "type", "").startsWith("web_search_"))
        if (serverSearch) return anthropicWebSearch(baseUrl, conversation, settings)
        return anthropicReply(decide(conversation, settings), conversation, inputText)
      }
      case "openai.models":
        // One model, as a local server with one model loaded lists it.
        return {
          kind: "json",
          body: {
            object: "list",
            data: [{ id: "simulated-model", object: "model", created: 1_700_000_000, owned_by: "emulator" }]
          }
        }
      case "openai.responses":
        return openaiWebSearch(baseUrl, body, settings)
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
      default:
        return (
          searchReply(baseUrl, request, settings.resultsPerQuery) ??
          keylessSearchReply(baseUrl, request, settings.resultsPerQuery)
        )
    }
  }
}
