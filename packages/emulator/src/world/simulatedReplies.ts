/**
 * The simulated model's decisions in each vendor's wire shape: OpenAI chat completions, Anthropic messages, the two
 * vendors' web searches and Perplexity's answers, over the deterministic pages of `fakeWeb.ts`, with ids and token
 * counts as the vendors give them.
 */
import { collapse, type Conversation, readOpenAi, subjectOf, textOf } from "./conversation.js"
import { anthropicToolUseBlocks } from "./fake.js"
import { resultsFor } from "./fakeWeb.js"
import type { Decision } from "./simulatedModel.js"
import { get, getString, type JsonObject } from "../wire/json.js"
import type { Reply } from "../wire/types.js"

let counter = 0
const nextId = (prefix: string): string => `${prefix}sim${(++counter).toString(36).padStart(8, "0")}`
const estimate = (text: string): number => Math.max(1, Math.ceil(text.length / 4))

/** A decision as an OpenAI chat completion. */
export const openaiReply = (decision: Decision, conversation: Conversation, inputText: string): Reply => {
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

/** A decision as an Anthropic message. */
export const anthropicReply = (decision: Decision, conversation: Conversation, inputText: string): Reply => {
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

/** Anthropic's server-side web search: the search, its results and a cited text block per result. */
export const anthropicWebSearch = (baseUrl: string, conversation: Conversation, resultsPerQuery: number): Reply => {
  const query = subjectOf(conversation).replace(/^Search the web for:\s*/i, "")
  const results = resultsFor(baseUrl, query, resultsPerQuery)
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

/** OpenAI's Responses web search: the search call and a message whose lines are cited by `url_citation`s. */
export const openaiWebSearch = (baseUrl: string, body: unknown, resultsPerQuery: number): Reply => {
  const input = get(body, "input")
  const query = collapse(typeof input === "string" ? input : (textOf(input).split("\n")[0] ?? ""))
    .replace(/^Search the web for:\s*/i, "")
    .replace(/\s+(Prefer|Cite) .*$/, "")
  const results = resultsFor(baseUrl, query, resultsPerQuery)
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

/** Perplexity's answer: the pages found for the question's subject, each cited, with `citations` and `search_results`. */
export const perplexityReply = (baseUrl: string, body: unknown, inputText: string, resultsPerQuery: number): Reply => {
  const conversation = readOpenAi(body)
  const results = resultsFor(baseUrl, subjectOf(conversation), resultsPerQuery)
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
