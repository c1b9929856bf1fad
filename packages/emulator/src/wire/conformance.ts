/**
 * What the vendors refuse, refused the same way: a request that OpenAI or Anthropic would answer with a 400 gets that
 * 400 from the emulator (status, error type, code, param and message in the vendor's shape), before any scripted
 * reply. So a test through the emulator cannot pass where the vendor would refuse the request.
 *
 * Checked, as the vendors document them: tool and response-format schemas with an object at their root (both),
 * OpenAI's strict-mode rules when `strict` is sent, `max_tokens` (Anthropic), tool names, and every tool call of a
 * turn answered by a tool result right after it (both).
 */
import { anthropicError, openaiError } from "./faults.js"
import { get, getArray, getObjects, getOptionalString, getString, isObject, type JsonObject } from "./json.js"
import { rootTypeName, strictViolation } from "./strictRules.js"
import type { RecordedRequest, Reply } from "./types.js"

const badRequest = (body: unknown): Reply => ({ kind: "json", status: 400, body })

const openaiInvalid = (message: string, param: string | null, code: string | null): Reply =>
  badRequest(openaiError(message, "invalid_request_error", param, code))

const anthropicInvalid = (message: string): Reply => badRequest(anthropicError("invalid_request_error", message))

const functionName = /^[a-zA-Z0-9_-]{1,64}$/

// =============================================================================
// OpenAI
// =============================================================================

/** A function's parameters or a response format's schema, checked as OpenAI does. */
const openaiSchema = (
  schema: unknown,
  strict: boolean,
  what: string,
  param: string,
  code: string
): Reply | undefined => {
  if (schema === undefined) return undefined
  if (!isObject(schema) || get(schema, "type") !== "object") {
    return openaiInvalid(
      `Invalid schema for ${what}: schema must be a JSON Schema of 'type: "object"', got 'type: "${rootTypeName(schema)}"'.`,
      param,
      code
    )
  }
  const problem = strict ? strictViolation(schema) : undefined
  return problem === undefined ? undefined : openaiInvalid(`Invalid schema for ${what}: ${problem}`, param, code)
}

const chatTools = (body: unknown): Reply | undefined => {
  const tools = getArray(body, "tools")
  for (const [i, tool] of tools.entries()) {
    const fn = get(tool, "function")
    const name = getString(fn, "name", "")
    if (getString(tool, "type", "") !== "function" || !isObject(fn)) {
      return openaiInvalid(
        `Invalid value: '${getString(tool, "type", "")}'. Supported values are: 'function'.`,
        `tools[${i}].type`,
        "invalid_value"
      )
    }
    if (!functionName.test(name)) {
      return openaiInvalid(
        `Invalid 'tools[${i}].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.`,
        `tools[${i}].function.name`,
        "invalid_value"
      )
    }
    const problem = openaiSchema(
      get(fn, "parameters"),
      get(fn, "strict") === true,
      `function '${name}'`,
      `tools[${i}].function.parameters`,
      "invalid_function_parameters"
    )
    if (problem !== undefined) return problem
  }
  if (tools.length === 0 && get(body, "tool_choice") !== undefined) {
    return openaiInvalid(
      "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.",
      "tool_choice",
      null
    )
  }
  if (tools.length === 0 && get(body, "parallel_tool_calls") !== undefined) {
    return openaiInvalid(
      "Invalid value for 'parallel_tool_calls': 'parallel_tool_calls' is only allowed when 'tools' are specified.",
      "parallel_tool_calls",
      null
    )
  }
  return undefined
}

const chatFormat = (body: unknown): Reply | undefined => {
  const format = get(body, "response_format")
  if (getString(format, "type", "") !== "json_schema") return undefined
  const spec = get(format, "json_schema")
  const name = getString(spec, "name", "")
  if (!functionName.test(name)) {
    return openaiInvalid(
      `Invalid 'response_format.json_schema.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.`,
      "response_format.json_schema.name",
      "invalid_value"
    )
  }
  return openaiSchema(
    get(spec, "schema"),
    get(spec, "strict") === true,
    `response_format '${name}'`,
    "response_format",
    "invalid_json_schema"
  )
}

/** Every assistant message with tool calls is followed by a tool message for each call, and no tool message floats. */
const chatToolAnswers = (body: unknown): Reply | undefined => {
  const messages = getObjects(body, "messages")
  let expected: ReadonlyArray<string> = []
  let answered = new Set<string>()
  let expectedAt = -1
  const unanswered = (): Reply | undefined => {
    const missing = expected.filter((id) => !answered.has(id))
    return missing.length === 0
      ? undefined
      : openaiInvalid(
          "An assistant message with 'tool_calls' must be followed by tool messages responding to each " +
            `'tool_call_id'. The following tool_call_ids did not have response messages: ${missing.join(", ")}`,
          `messages.[${expectedAt}].role`,
          null
        )
  }
  for (const [i, message] of messages.entries()) {
    const role = getString(message, "role", "")
    if (role === "tool") {
      const id = getString(message, "tool_call_id", "")
      if (!expected.includes(id)) {
        return openaiInvalid(
          "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
          `messages.[${i}].role`,
          null
        )
      }
      answered.add(id)
      continue
    }
    const problem = unanswered()
    if (problem !== undefined) return problem
    expected = role === "assistant" ? getObjects(message, "tool_calls").map((call) => getString(call, "id", "")) : []
    answered = new Set()
    expectedAt = i
  }
  return unanswered()
}

const openaiChat = (body: unknown): Reply | undefined => chatTools(body) ?? chatFormat(body) ?? chatToolAnswers(body)

const openaiResponses = (body: unknown): Reply | undefined => {
  for (const [i, tool] of getArray(body, "tools").entries()) {
    if (getString(tool, "type", "") !== "function") continue
    const problem = openaiSchema(
      get(tool, "parameters"),
      get(tool, "strict") === true,
      `function '${getString(tool, "name", "")}'`,
      `tools[${i}].parameters`,
      "invalid_function_parameters"
    )
    if (problem !== undefined) return problem
  }
  const format = get(get(body, "text"), "format")
  if (getString(format, "type", "") === "json_schema") {
    const problem = openaiSchema(
      get(format, "schema"),
      get(format, "strict") === true,
      `response_format '${getString(format, "name", "")}'`,
      "text.format.schema",
      "invalid_json_schema"
    )
    if (problem !== undefined) return problem
  }
  const input = getObjects(body, "input")
  const calls = input
    .filter((item) => get(item, "type") === "function_call")
    .map((item) => getString(item, "call_id", ""))
  const outputs = new Set(
    input.filter((item) => get(item, "type") === "function_call_output").map((item) => getString(item, "call_id", ""))
  )
  const missing = calls.find((id) => !outputs.has(id))
  return missing === undefined
    ? undefined
    : openaiInvalid(`No tool output found for function call ${missing}.`, "input", null)
}

// =============================================================================
// Anthropic
// =============================================================================

const blocksOf = (message: JsonObject): ReadonlyArray<JsonObject> => getObjects(message, "content")

const anthropicTools = (body: unknown): Reply | undefined => {
  for (const [i, tool] of getArray(body, "tools").entries()) {
    const type = getOptionalString(tool, "type")
    // Server tools (web search, code execution) carry a versioned type and no input schema.
    if (type !== undefined && type !== "custom") continue
    const name = getString(tool, "name", "")
    if (!functionName.test(name)) {
      return anthropicInvalid(`tools.${i}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'`)
    }
    const schema = get(tool, "input_schema")
    if (!isObject(schema)) return anthropicInvalid(`tools.${i}.custom.input_schema: Field required`)
    if (get(schema, "type") !== "object")
      return anthropicInvalid(`tools.${i}.custom.input_schema.type: Input should be 'object'`)
  }
  return undefined
}

const anthropicMessages = (body: unknown): Reply | undefined => {
  const messages = getObjects(body, "messages")
  for (const [i, message] of messages.entries()) {
    const content = get(message, "content")
    const empty = content === "" || (Array.isArray(content) && content.length === 0)
    if (empty && !(i === messages.length - 1 && getString(message, "role", "") === "assistant")) {
      return anthropicInvalid(
        `messages.${i}: all messages must have non-empty content except for the optional final assistant message`
      )
    }
    const uses =
      getString(message, "role", "") === "assistant"
        ? blocksOf(message).filter((b) => get(b, "type") === "tool_use")
        : []
    const previous = i > 0 ? messages[i - 1] : undefined
    const previousUses =
      previous === undefined
        ? []
        : blocksOf(previous)
            .filter((b) => get(b, "type") === "tool_use")
            .map((b) => getString(b, "id", ""))
    for (const [j, block] of blocksOf(message).entries()) {
      if (get(block, "type") !== "tool_result") continue
      const id = getString(block, "tool_use_id", "")
      if (!previousUses.includes(id)) {
        return anthropicInvalid(
          `messages.${i}.content.${j}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${id}. ` +
            "Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
        )
      }
    }
    if (uses.length === 0) continue
    const next = messages[i + 1]
    const answered = new Set(
      next === undefined
        ? []
        : blocksOf(next)
            .filter((b) => get(b, "type") === "tool_result")
            .map((b) => getString(b, "tool_use_id", ""))
    )
    const missing = uses.map((b) => getString(b, "id", "")).filter((id) => !answered.has(id))
    if (missing.length > 0) {
      return anthropicInvalid(
        `messages.${i + 1}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(", ")}. ` +
          "Each `tool_use` block must have a corresponding `tool_result` block in the next message."
      )
    }
  }
  return undefined
}

const anthropic = (body: unknown): Reply | undefined => {
  const maxTokens = get(body, "max_tokens")
  if (maxTokens === undefined) return anthropicInvalid("max_tokens: Field required")
  if (typeof maxTokens !== "number" || !Number.isInteger(maxTokens) || maxTokens < 1) {
    return anthropicInvalid("max_tokens: Input should be a valid integer greater than or equal to 1")
  }
  return anthropicTools(body) ?? anthropicMessages(body)
}

// =============================================================================
// Dispatch
// =============================================================================

/** The 400 the vendor would answer this request with, or undefined when the vendor would take it. */
export const rejection = (request: RecordedRequest): Reply | undefined => {
  if (!isObject(request.body)) return undefined
  switch (request.endpoint) {
    case "openai.chat":
      return openaiChat(request.body)
    case "openai.responses":
      return openaiResponses(request.body)
    case "anthropic.messages":
      return anthropic(request.body)
    default:
      return undefined
  }
}
