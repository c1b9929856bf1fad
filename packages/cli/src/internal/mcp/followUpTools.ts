/**
 * The MCP tools of a session's life after its report: `ask_session` answers a follow-up question from a finished
 * session's stored sources (its thread in `get_answers`), and `continue_research` goes deeper in a new direction.
 */
import * as Effect from "effect/Effect"
import type * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import type * as Runs from "../../Runs.js"
import * as RunSchema from "../../RunSchema.js"
import type * as DatabaseProbe from "../serving/databaseProbe.js"
import * as McpCall from "./mcpCall.js"
import { StartedHere } from "./toolResults.js"
import { spec, type ToolSpec } from "./toolSpecs.js"

const AskArgs = Schema.Struct({
  sessionId: Schema.String.annotations({ description: "A completed session's id" }),
  question: RunSchema.trimmedText("The follow-up question, answered from the session's stored sources")
})

const ContinueArgs = Schema.Struct({
  sessionId: Schema.String.annotations({ description: "A completed session's id" }),
  direction: RunSchema.trimmedText("What to research further, from what the session found"),
  rounds: Schema.optional(Schema.Int.pipe(Schema.between(1, 50))).annotations({
    description: "Supervision rounds at most (default 2)"
  })
})

const SessionIdArgs = Schema.Struct({ sessionId: Schema.String })

/** The tools, as `tools/list` gives them. */
export const specs: ReadonlyArray<ToolSpec> = [
  spec(
    "ask_session",
    "Ask a finished session",
    "Answer a follow-up question from a completed session's stored sources (not only its report), cited with the session's own numbers and checked against them. When they do not cover it the answer says so and names a direction continue_research can take. Kept in the session's thread.",
    AskArgs,
    { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false }
  ),
  spec("get_answers", "Follow-up answers", "The follow-up answers of a session, in the order asked.", SessionIdArgs, {
    readOnlyHint: true,
    openWorldHint: false
  }),
  spec(
    "continue_research",
    "Go deeper",
    "A completed session researches a new direction in a few more rounds, from its brief, findings and sources (nothing it read is fetched again); its report is written again as a new version, the earlier kept. Returns at once; the research runs in the background.",
    ContinueArgs,
    { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    StartedHere
  )
]

const answerText = (
  sessionId: string,
  answer: {
    readonly markdown: string
    readonly covered: boolean
    readonly suggestedDirection?: string | undefined
    readonly citations: ReadonlyArray<{ readonly number: number; readonly title: string; readonly url: string }>
  }
) =>
  [
    answer.markdown.trimEnd(),
    ...(answer.citations.length > 0
      ? ["", "Sources:", ...answer.citations.map((c) => `[${c.number}] ${c.title}: ${c.url}`)]
      : []),
    ...(answer.covered || answer.suggestedDirection === undefined
      ? []
      : [
          "",
          `Not covered by the stored sources. continue_research with sessionId ${sessionId} and direction: ${answer.suggestedDirection}`
        ])
  ].join("\n")

/** The handlers of the tools over some runs. */
export const handlers = (
  runs: Runs.Runs,
  runtime: Runtime.Runtime<never>,
  database: DatabaseProbe.Probe | undefined,
  startedHere: (started: RunSchema.Started) => McpCall.Content
): Record<string, McpCall.Handler> => {
  const answer = McpCall.answerIn(runtime, database)
  const { ask, extend } = runs
  return {
    ask_session: McpCall.withArgs(AskArgs, ({ question, sessionId }) =>
      ask === undefined
        ? Promise.resolve(McpCall.failure("follow-up questions are answered by a local server"))
        : answer(ask(sessionId, question), (result) => McpCall.text(answerText(sessionId, result)))
    ),
    get_answers: McpCall.withArgs(SessionIdArgs, ({ sessionId }) =>
      answer(
        Effect.map(runs.load(sessionId), (session) => session.answers),
        (answers) =>
          McpCall.text(
            answers.length === 0
              ? "No follow-up questions yet."
              : answers.map((a, i) => `Q${i + 1}: ${a.question}\n${answerText(sessionId, a)}`).join("\n\n")
          )
      )
    ),
    continue_research: McpCall.withArgs(ContinueArgs, ({ direction, rounds, sessionId }) =>
      extend === undefined
        ? Promise.resolve(McpCall.failure("continuations run on a local server"))
        : answer(extend(sessionId, direction, rounds), startedHere)
    )
  }
}
