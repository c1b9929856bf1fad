/**
 * Follow-up turns of a `/v1` conversation. Every report and answer this server writes there ends with a marker, an
 * HTML comment that markdown does not show: `<!-- deep-research:session=<id> -->`. A request whose last user message
 * comes after an assistant message carrying one asks about that session: when the session is completed and its stored
 * sources hold a passage that shares a term with the question, the question is answered from them (`FollowUp.ask`,
 * kept in the session's thread), with no new research; otherwise (a new topic) the message is researched as a new
 * session, as any first turn is. See docs/serve.md.
 */
import { FollowUp, type Research } from "@deep-research/core"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type * as Runs from "../Runs.js"
import * as OpenAiSchema from "./OpenAiSchema.js"
import * as Sse from "./Sse.js"

/** The marker that ends a report or answer of `sessionId` in a `/v1` conversation. */
export const marker = (sessionId: string): string => `<!-- deep-research:session=${sessionId} -->`

const markerPattern = /<!-- deep-research:session=([A-Za-z0-9][A-Za-z0-9_-]{0,127}) -->/g

/** The text with its marker at the end, on a line of its own. */
export const marked = (text: string, sessionId: string): string => `${text.trimEnd()}\n\n${marker(sessionId)}\n`

/** The session a follow-up turn is about: the last marker in an assistant message before the last user message. */
export const followedSession = (messages: ReadonlyArray<OpenAiSchema.ChatMessage>): string | undefined => {
  let lastUser = -1
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i]
    if (message?.role === "user" && OpenAiSchema.textOf(message).trim() !== "") {
      lastUser = i
      break
    }
  }
  for (let i = lastUser - 1; i >= 0; i--) {
    const message = messages[i]
    if (message === undefined || message.role !== "assistant") continue
    const found = [...OpenAiSchema.textOf(message).matchAll(markerPattern)].at(-1)?.[1]
    if (found !== undefined) return found
  }
  return undefined
}

/** The answer as the chat shows it: the answer, its sources under the session's numbers, and the marker. */
export const answerContent = (sessionId: string, answer: Research.FollowUpAnswer): string =>
  marked(
    [
      answer.markdown.trimEnd(),
      ...(answer.citations.length > 0
        ? ["", "Sources:", ...answer.citations.map((c) => `[${c.number}] ${c.title}: ${c.url}`)]
        : [])
    ].join("\n"),
    sessionId
  )

/**
 * The answer to a follow-up turn about `sessionId`, or undefined when the turn is not one this server answers from the
 * session (the session is unknown, not completed, or its sources share no term with the question: a new topic).
 */
export const answerOf = (runs: Runs.Runs, sessionId: string, question: string) =>
  Effect.gen(function* () {
    const ask = runs.ask
    if (ask === undefined) return undefined
    const session = yield* Effect.option(runs.load(sessionId))
    if (session._tag === "None" || session.value.status !== "completed") return undefined
    if (FollowUp.retrieve(FollowUp.numbering(session.value), question).length === 0) return undefined
    return yield* Effect.mapError(ask(sessionId, question), (error) => OpenAiSchema.ResearchFailed.of(error.message))
  })

const usageOf = (answer: Research.FollowUpAnswer) => {
  const prompt = answer.usage.reduce((n, r) => n + r.inputTokens, 0)
  const completion = answer.usage.reduce((n, r) => n + r.outputTokens, 0)
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion }
}

/** The non-streamed completion of an answer. */
export const completion = (sessionId: string, answer: Research.FollowUpAnswer, created: number, turn: number) => ({
  id: `chatcmpl-${sessionId}-a${turn}`,
  object: "chat.completion" as const,
  created,
  model: OpenAiSchema.modelId,
  choices: [
    {
      index: 0,
      message: { role: "assistant" as const, content: answerContent(sessionId, answer), refusal: null },
      finish_reason: "stop" as const,
      logprobs: null
    }
  ],
  usage: usageOf(answer)
})

/** The streamed chunks of an answer, as a report's are streamed. */
export const chunks = (
  sessionId: string,
  answer: Research.FollowUpAnswer,
  created: number,
  turn: number,
  includeUsage: boolean
): Stream.Stream<string> => {
  const chunk = OpenAiSchema.chunkOf(`chatcmpl-${sessionId}-a${turn}`, created, includeUsage)
  const data = (value: unknown) => Sse.encode({ data: JSON.stringify(value) })
  const lines = [
    data(chunk({ role: "assistant", content: "" })),
    data(chunk({ content: answerContent(sessionId, answer) })),
    data(chunk({}, "stop")),
    ...(includeUsage ? [data({ ...chunk({}), choices: [], usage: usageOf(answer) })] : []),
    "data: [DONE]\n\n"
  ]
  return Stream.fromChunk(Chunk.unsafeFromArray(lines))
}
