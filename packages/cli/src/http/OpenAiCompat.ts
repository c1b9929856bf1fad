/**
 * `POST /v1/chat/completions`, `GET /v1/models` and `GET /v1/models/{model}` for any OpenAI client: the
 * conversation's last user message is the question, the research runs as a session like any other (listed, stored,
 * resumable), and the report is the answer. Streamed, the progress lines arrive as `reasoning_content` (where OpenAI-compatible servers put a model's
 * thinking, so clients show them apart from the answer) and the report as `content`. A client that goes away cancels
 * the run, as closing a completion stops generation. A follow-up turn about a report this server wrote is answered
 * from that session's sources (`OpenAiFollowUp.ts`).
 */
import type { Session } from "@deep-research/core"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as Chunk from "effect/Chunk"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as Progress from "../Progress.js"
import type * as Runs from "../Runs.js"
import * as ServingRuns from "../ServingRuns.js"
import { Api, ServiceUnavailable } from "./Api.js"
import type { RunsOf } from "./Callers.js"
import * as OpenAiFollowUp from "./OpenAiFollowUp.js"
import * as OpenAiSchema from "./OpenAiSchema.js"
import * as Sse from "./Sse.js"

const usageOf = (session: Session.Session) => {
  const prompt = session.usage.reduce((n, r) => n + r.inputTokens, 0)
  const completion = session.usage.reduce((n, r) => n + r.outputTokens, 0)
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion }
}

const failureOf = (session: Session.Session): string =>
  session.error?.message ?? `the research ended ${session.status} without a report`

/** The report cut at paragraph ends into pieces of about `size` characters, so it streams in a few chunks. */
export const pieces = (text: string, size = 2_000): ReadonlyArray<string> => {
  const out: Array<string> = []
  let current = ""
  for (const paragraph of text.split(/(?<=\n\n)/)) {
    if (current.length > 0 && current.length + paragraph.length > size) {
      out.push(current)
      current = ""
    }
    current += paragraph
  }
  if (current.length > 0) out.push(current)
  return out
}

const start = (runs: Runs.Runs, request: OpenAiSchema.ChatRequest) =>
  Effect.gen(function* () {
    if (request.model !== OpenAiSchema.modelId) {
      return yield* OpenAiSchema.ModelNotFound.of(request.model)
    }
    const question = OpenAiSchema.questionOf(request.messages)
    if (question === undefined) {
      return yield* OpenAiSchema.InvalidRequest.of(
        "messages: no user message with text; the last one is the question",
        "messages"
      )
    }
    // A chat cannot stop to ask: a clarifying question's understanding is kept as constraints and research goes on,
    // and a plan is not held for review (a server's `--review` is for its own API, MCP and web page).
    const started = yield* ServingRuns.catchNotStored(
      Effect.mapError(runs.start(question, { review: false }, "proceed"), (error) =>
        OpenAiSchema.InvalidRequest.of(error.message, null)
      ),
      (error) => new ServiceUnavailable({ message: error.message })
    )
    return started.sessionId
  })

const loaded = (runs: Runs.Runs, sessionId: string) =>
  Effect.mapError(runs.load(sessionId), (error) => OpenAiSchema.ResearchFailed.of(error.message))

const completion = (runs: Runs.Runs, sessionId: string) =>
  Effect.gen(function* () {
    yield* runs.awaitRun(sessionId)
    const session = yield* loaded(runs, sessionId)
    if (session.report === undefined) return yield* OpenAiSchema.ResearchFailed.of(failureOf(session))
    return {
      id: `chatcmpl-${sessionId}`,
      object: "chat.completion" as const,
      created: Math.floor((yield* Clock.currentTimeMillis) / 1000),
      model: OpenAiSchema.modelId,
      choices: [
        {
          index: 0,
          message: {
            role: "assistant" as const,
            content: OpenAiFollowUp.marked(session.report.markdown, sessionId),
            refusal: null
          },
          finish_reason: "stop" as const,
          logprobs: null
        }
      ],
      usage: usageOf(session),
      ...(session.report.grounding === undefined ? {} : { grounding: session.report.grounding })
    }
  }).pipe(Effect.onInterrupt(() => Effect.ignore(runs.cancel(sessionId))))

const chunkStream = (runs: Runs.Runs, sessionId: string, includeUsage: boolean, created: number) => {
  const chunk = OpenAiSchema.chunkOf(`chatcmpl-${sessionId}`, created, includeUsage)
  const data = (value: unknown) => Sse.encode({ data: JSON.stringify(value) })
  const progress = runs.events(sessionId, 0).pipe(
    Stream.filterMap(({ event }) => {
      const line = Progress.plainLine(event)
      return line === undefined ? Option.none() : Option.some(data(chunk({ reasoning_content: `${line}\n` })))
    })
  )
  const ending = Effect.map(Effect.either(loaded(runs, sessionId)), (outcome) => {
    if (outcome._tag === "Left" || outcome.right.report === undefined) {
      const message = outcome._tag === "Left" ? outcome.left.error.message : failureOf(outcome.right)
      return [data({ error: { message, type: "server_error", code: null } })]
    }
    const session = outcome.right
    return [
      ...pieces(OpenAiFollowUp.marked(session.report?.markdown ?? "", sessionId)).map((piece) =>
        data(chunk({ content: piece }))
      ),
      data({
        ...chunk({}, "stop"),
        ...(session.report?.grounding === undefined ? {} : { grounding: session.report.grounding })
      }),
      ...(includeUsage ? [data({ ...chunk({}), choices: [], usage: usageOf(session) })] : []),
      "data: [DONE]\n\n"
    ]
  })
  return Stream.make(data(chunk({ role: "assistant", content: "" }))).pipe(
    Stream.concat(progress),
    Stream.concat(Stream.flatMap(Stream.fromEffect(ending), (lines) => Stream.fromChunk(Chunk.unsafeFromArray(lines)))),
    Stream.ensuring(Effect.ignore(runs.cancel(sessionId)))
  )
}

/** The openai group. */
export const layer = (runsOf: RunsOf) =>
  HttpApiBuilder.group(Api, "openai", (handlers) =>
    handlers
      .handle("models", () => Effect.succeed({ object: "list" as const, data: [OpenAiSchema.theModel] }))
      .handle("model", ({ path }) =>
        path.model === OpenAiSchema.modelId
          ? Effect.succeed(OpenAiSchema.theModel)
          : Effect.fail(OpenAiSchema.ModelNotFound.of(path.model))
      )
      .handle("chatCompletions", ({ payload, request }) =>
        Effect.gen(function* () {
          // The caller's own sessions and no one's: another caller's session is not followed up.
          const runs = runsOf(request.headers["authorization"])
          const followed = OpenAiFollowUp.followedSession(payload.messages)
          const question = OpenAiSchema.questionOf(payload.messages)
          if (followed !== undefined && question !== undefined && payload.model === OpenAiSchema.modelId) {
            const answer = yield* OpenAiFollowUp.answerOf(runs, followed, question)
            if (answer !== undefined) {
              const created = Math.floor((yield* Clock.currentTimeMillis) / 1000)
              const turn = (yield* Effect.orElseSucceed(runs.load(followed), () => undefined))?.answers.length ?? 0
              const includeUsage = payload.stream_options?.include_usage === true
              return payload.stream === true
                ? Sse.response(OpenAiFollowUp.chunks(followed, answer, created, turn, includeUsage))
                : OpenAiFollowUp.completion(followed, answer, created, turn)
            }
          }
          const sessionId = yield* start(runs, payload)
          if (payload.stream !== true) return yield* completion(runs, sessionId)
          const created = Math.floor((yield* Clock.currentTimeMillis) / 1000)
          return Sse.response(chunkStream(runs, sessionId, payload.stream_options?.include_usage === true, created))
        })
      )
  )
