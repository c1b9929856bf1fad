/**
 * The supervisor's turn, read: its tools, the decoding of the calls of one turn (what does not decode is answered
 * with the reason, never run) and the new round its directives make. Pure, so the supervisor's loop
 * (`phases/Supervisor.ts`) is left with its state and its steps.
 */
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import * as LanguageModel from "../../LanguageModel.js"
import * as ActionProtocol from "../../phases/ActionProtocol.js"
import * as Prompt from "../../prompts/supervisor.js"
import { Directive, IssuedDirective, SupervisionRound } from "../../Research.js"
import * as Tool from "../../Tool.js"
import { toolNames } from "./supervisorHistory.js"

// =============================================================================
// Tools
// =============================================================================

/** The supervisor's reflection tool. */
export const think = Tool.make(toolNames.think, {
  description:
    "Think before delegating and after each round: what is known, what is missing, what the next directives " +
    "should settle. Has no other effect.",
  schema: Schema.Struct({ reflection: Schema.String })
})

/** Delegates one research directive to one researcher. */
export const conductResearch = Tool.make(toolNames.conductResearch, {
  description:
    "Delegate one research directive to a researcher. Directives of the same turn run in parallel. The topic is a " +
    "standalone paragraph: the researcher sees nothing else of the team's work.",
  schema: Directive
})

/** Ends research: the evidence is enough. */
export const researchComplete = Tool.make("researchComplete", {
  description: "Call when the evidence gathered answers the request; research ends and the report is written.",
  schema: Schema.Struct({})
})

/** The definitions of the supervisor's tools, as sent to the model. */
export const tools = [think.definition, conductResearch.definition, researchComplete.definition]

// What the action protocol reports when a tool-less model's answer could not be read as actions.
const invalidActions = Tool.make(ActionProtocol.invalidActionsTool, {
  description: "An answer that could not be read as actions",
  schema: Schema.Struct({ error: Schema.String })
})

// =============================================================================
// A turn's calls
// =============================================================================

/** What the supervisor's calls of one turn come to. */
export interface Reading {
  /** An answer for every call but the directives that run (their results come from the round). */
  readonly results: ReadonlyArray<LanguageModel.ToolResultMessage>
  readonly directives: ReadonlyArray<Directive>
  /** The decode errors of the directives that could not be read. */
  readonly rejectedDirectives: ReadonlyArray<string>
  /** Calls that could not be used, for the event stream. */
  readonly rejected: ReadonlyArray<{ readonly tool: string; readonly error: string }>
  readonly reflections: ReadonlyArray<string>
  readonly completes: boolean
}

/** Decodes a turn's calls; what does not decode is answered with the reason, never run. */
export const read = (calls: ReadonlyArray<LanguageModel.ToolCall>): Reading => {
  const results: Array<LanguageModel.ToolResultMessage> = []
  const directives: Array<Directive> = []
  const rejectedDirectives: Array<string> = []
  const rejected: Array<{ readonly tool: string; readonly error: string }> = []
  const reflections: Array<string> = []
  const reject = (call: LanguageModel.ToolCall, error: string) => {
    results.push(LanguageModel.toolResult(call, error, true))
    rejected.push({ tool: call.name, error })
  }
  for (const call of calls) {
    if (call.name === think.name) {
      const decoded = Tool.decodeArguments(think, call.arguments)
      if (Either.isLeft(decoded)) reject(call, decoded.left)
      else {
        reflections.push(decoded.right.reflection)
        results.push(LanguageModel.toolResult(call, Prompt.thought))
      }
    } else if (call.name === conductResearch.name) {
      const decoded = Tool.decodeArguments(conductResearch, call.arguments)
      if (Either.isRight(decoded)) directives.push(decoded.right)
      else {
        rejectedDirectives.push(decoded.left)
        reject(call, Prompt.directiveInvalid(decoded.left))
      }
    } else if (call.name === ActionProtocol.invalidActionsTool) {
      const error = Tool.decodeArguments(invalidActions, call.arguments)
      reject(call, Either.isRight(error) ? error.right.error : "Unreadable actions.")
    } else if (call.name === researchComplete.name) {
      // Every call of a turn is answered; this one matters only when the turn goes back to the model.
      results.push(LanguageModel.toolResult(call, Prompt.completeDeferred))
    } else {
      reject(call, `There is no tool named ${call.name}. Use think, conductResearch or researchComplete.`)
    }
  }
  const completes = calls.some((c) => c.name === researchComplete.name)
  return { results, directives, rejectedDirectives, rejected, reflections, completes }
}

const byPriority = (a: Directive, b: Directive) => a.priority - b.priority

/**
 * A new round of the directives read: higher priority first (the sort is stable, so the model's order breaks ties),
 * at most `maxDirectivesPerRound`; the rest waits for a later round.
 */
export const newRound = (
  number: number,
  directives: ReadonlyArray<Directive>,
  reflections: ReadonlyArray<string>,
  maxDirectivesPerRound: number
): SupervisionRound => {
  const ordered = [...directives].sort(byPriority)
  const reflection = reflections.join("\n\n").trim()
  // Not validated again: the directives were decoded from the model's calls and the round number is a count.
  return new SupervisionRound(
    {
      round: number,
      ...(reflection !== "" ? { reflection } : {}),
      directives: ordered
        .slice(0, maxDirectivesPerRound)
        .map((directive, i) => new IssuedDirective({ id: `r${number}-d${i + 1}`, round: number, directive }, true)),
      results: [],
      deferred: ordered.slice(maxDirectivesPerRound),
      completed: false
    },
    true
  )
}
