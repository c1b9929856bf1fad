/**
 * Tools for models without tool calling: the same tools, described in the system prompt, answered as a JSON object
 * naming the actions to take. `wrap` turns such a model into one that looks tool-calling to the agent loops: the
 * conversation is rendered as text on the way in, and the answer's actions come back as tool calls. A loop therefore
 * runs the same code (and the same context-window recovery) whichever kind of model plays its role.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import * as LanguageModel from "../LanguageModel.js"
import * as StructuredOutput from "../StructuredOutput.js"
import type { ToolDefinition } from "../Tool.js"

/**
 * The name of the tool call that stands for an answer whose actions could not be read. Its arguments are
 * `{ error }`, a message fit to show the model; a loop answers it as a tool error so the model can correct itself.
 */
export const invalidActionsTool = "invalid_actions"

/** An answer of the protocol: the actions to take, in order. An empty list means no action (the model is done). */
export const Answer = Schema.Struct({
  actions: Schema.Array(
    Schema.Struct({
      tool: Schema.String,
      arguments: Schema.optionalWith(Schema.Unknown, { default: () => ({}) })
    })
  )
})

// Some models answer one action without the wrapping list; it is accepted as a list of one.
const SingleAction = Schema.Struct({
  tool: Schema.String,
  arguments: Schema.optionalWith(Schema.Unknown, { default: () => ({}) })
})

/** The system-prompt part that describes the tools and the answer format. */
export const instructions = (tools: ReadonlyArray<ToolDefinition>): string =>
  [
    "You act through tools. You cannot call them natively: instead, answer with a single JSON object and nothing " +
      "else, naming the actions to take this turn, in order:",
    '{"actions": [{"tool": "<tool name>", "arguments": { ... }}]}',
    "You may name several actions in one answer. The results come back in the next message. To stop without " +
      'acting, answer {"actions": []}. The tools, with the JSON schema of their arguments:',
    ...tools.map((tool) => `- ${tool.name}: ${tool.description}\n  arguments: ${JSON.stringify(tool.parameters)}`)
  ].join("\n")

const renderActions = (calls: ReadonlyArray<LanguageModel.ToolCall>): string =>
  JSON.stringify({ actions: calls.map((call) => ({ tool: call.name, arguments: call.arguments })) })

const renderResults = (results: ReadonlyArray<LanguageModel.ToolResultMessage>): string =>
  [
    "Results of your actions:",
    ...results.map(
      (result) => `### ${result.name}${result.isError ? " (error)" : ""} [${result.toolCallId}]\n${result.content}`
    )
  ].join("\n\n")

/**
 * A conversation with tool calls rendered for a model without them: the tools and the format go into the system
 * prompt, the model's calls become the JSON it would have written, and tool results become user messages. Adjacent
 * user messages are joined, since some vendors require turns to alternate.
 */
export const render = (request: LanguageModel.GenerateRequest): LanguageModel.GenerateRequest => {
  const tools = request.tools ?? []
  const system = [request.system ?? "", tools.length > 0 ? instructions(tools) : ""]
    .filter((part) => part !== "")
    .join("\n\n")
  const messages: Array<LanguageModel.Message> = []
  const pendingResults: Array<LanguageModel.ToolResultMessage> = []
  const pushUser = (content: string): void => {
    const last = messages[messages.length - 1]
    if (last !== undefined && last._tag === "user") {
      messages[messages.length - 1] = LanguageModel.user(`${last.content}\n\n${content}`)
    } else {
      messages.push(LanguageModel.user(content))
    }
  }
  const flushResults = (): void => {
    if (pendingResults.length === 0) return
    pushUser(renderResults(pendingResults))
    pendingResults.length = 0
  }
  for (const message of request.messages) {
    switch (message._tag) {
      case "tool":
        pendingResults.push(message)
        break
      case "user":
        flushResults()
        pushUser(message.content)
        break
      case "assistant": {
        flushResults()
        const content =
          message.content.trim() !== ""
            ? message.content
            : message.toolCalls.length > 0
              ? renderActions(message.toolCalls)
              : '{"actions": []}'
        messages.push(LanguageModel.assistant(content))
        break
      }
    }
  }
  flushResults()
  const { toolChoice: _toolChoice, tools: _tools, ...rest } = request
  return { ...rest, system, messages }
}

// Every answer of the protocol is an object; brackets alone are prose ("measured at 42 units [1]").
const hasObject = (text: string): boolean => text.includes("{")

/**
 * The tool calls an answer names. No JSON object at all (prose, even prose citing `[1]`), or an empty action list,
 * is no call (the model is done); an object that cannot be read is one `invalid_actions` call carrying the reason.
 * Ids are `action_<turn>_<index>`.
 */
export const parse = (text: string, turn: number): ReadonlyArray<LanguageModel.ToolCall> => {
  const cleaned = StructuredOutput.stripThinking(text)
  if (!hasObject(cleaned)) return []
  const call = (index: number, name: string, args: unknown) =>
    new LanguageModel.ToolCall({ id: `action_${turn}_${index}`, name, arguments: args })
  const answer = StructuredOutput.parseAnswer(Answer, cleaned)
  if (Either.isRight(answer)) return answer.right.actions.map((action, i) => call(i, action.tool, action.arguments))
  const single = StructuredOutput.parseAnswer(SingleAction, cleaned)
  if (Either.isRight(single)) return [call(0, single.right.tool, single.right.arguments)]
  return [
    call(0, invalidActionsTool, {
      error:
        `Your answer could not be read as actions. ${answer.left}\n` +
        'Answer with only a JSON object of the form {"actions": [{"tool": "...", "arguments": {...}}]}.'
    })
  ]
}

/**
 * A model without tool calling made to look like one: requests are rendered with `render`, answers parsed with
 * `parse`. A model that calls tools natively is returned as it is.
 */
export const wrap = (model: LanguageModel.Service): LanguageModel.Service => {
  if (model.capabilities.toolCalling) return model
  return {
    ...model,
    generate: (request) => {
      const turn = request.messages.filter((message) => message._tag === "assistant").length + 1
      return Effect.map(model.generate(render(request)), (completion) => {
        const toolCalls = parse(completion.text, turn)
        const readable =
          toolCalls.length === 0
            ? hasObject(StructuredOutput.stripThinking(completion.text))
            : toolCalls.every((call) => call.name !== invalidActionsTool)
        // Read actions are the message (an empty list included); prose, or an answer that could not be read, stays
        // as text so that it can close the research or be shown back to the model.
        return new LanguageModel.Completion({
          text: readable ? "" : completion.text,
          toolCalls,
          finishReason: toolCalls.length > 0 ? "tool_calls" : completion.finishReason,
          usage: completion.usage,
          model: completion.model
        })
      })
    }
  }
}
