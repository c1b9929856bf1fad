import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Redacted from "effect/Redacted"
import OpenAI from "openai"
import * as OpenAiFollowUp from "../src/http/OpenAiFollowUp.js"
import { served, servedSlowly } from "./ServeHarness.js"

/** The official SDK pointed at the server, as any OpenAI client would be. */
const sdk = (url: string, apiKey = "unused") => new OpenAI({ baseURL: `${url}/v1`, apiKey, maxRetries: 0 })

describe("deep-research serve: the OpenAI-compatible endpoint, with the official openai SDK as the client", () => {
  it.scopedLive("lists the deep-research model, retrieves it, and says any other is not found", () =>
    Effect.gen(function* () {
      const s = yield* served({ noClarify: true })
      const models = yield* Effect.promise(() => sdk(s.url).models.list())
      assert.deepStrictEqual(
        models.data.map((m) => [m.id, m.object]),
        [["deep-research", "model"]]
      )
      const model = yield* Effect.promise(() => sdk(s.url).models.retrieve("deep-research"))
      assert.deepStrictEqual([model.id, model.object, model.owned_by], ["deep-research", "model", "deep-research"])
      const missing = yield* Effect.flip(Effect.tryPromise(() => sdk(s.url).models.retrieve("gpt-4o")))
      assert.instanceOf(missing.error, OpenAI.NotFoundError)
      assert.strictEqual((missing.error as InstanceType<typeof OpenAI.NotFoundError>).code, "model_not_found")
    })
  )

  it.scopedLive(
    "non-streamed: the last user message is the question, the report the answer, usage the run's tokens",
    () =>
      Effect.gen(function* () {
        const s = yield* served()
        const completion = yield* Effect.promise(() =>
          sdk(s.url).chat.completions.create({
            model: "deep-research",
            messages: [
              { role: "system", content: "Be thorough." },
              { role: "user", content: "Why is the sky blue?" },
              { role: "assistant", content: "Shall I research it?" },
              { role: "user", content: [{ type: "text", text: "How do tides work?" }] }
            ],
            // Options the answer honours as it is: text, and tools the model may leave alone.
            response_format: { type: "text" },
            tools: [{ type: "function", function: { name: "lookup", parameters: { type: "object", properties: {} } } }],
            tool_choice: "auto"
          })
        )
        const answer = completion.choices[0]?.message.content ?? ""
        assert.strictEqual(completion.object, "chat.completion")
        assert.strictEqual(completion.choices[0]?.finish_reason, "stop")
        assert.match(answer, /tides/i)
        assert.match(answer, /^## Sources$/m)
        // The run is a session like any other: its report is the answer, its tokens the usage.
        const [listed] = yield* s.runs.list
        const session = yield* s.runs.load(listed?.id ?? "")
        assert.strictEqual(session.query, "How do tides work?")
        // The report, then the marker a follow-up turn finds its session by.
        assert.strictEqual(answer, OpenAiFollowUp.marked(session.report?.markdown ?? "", session.id))
        const input = session.usage.reduce((n, r) => n + r.inputTokens, 0)
        const output = session.usage.reduce((n, r) => n + r.outputTokens, 0)
        assert.deepStrictEqual(completion.usage, {
          prompt_tokens: input,
          completion_tokens: output,
          total_tokens: input + output
        })
        assert.isAbove(input, 0)
      })
  )

  it.scopedLive("streamed: progress arrives as reasoning deltas while the run goes, then the report, then usage", () =>
    Effect.gen(function* () {
      const s = yield* served({ noClarify: true })
      const chunks = yield* Effect.promise(async () => {
        const stream = await sdk(s.url).chat.completions.create({
          model: "deep-research",
          messages: [{ role: "user", content: "How do tides work?" }],
          stream: true,
          stream_options: { include_usage: true }
        })
        const seen: Array<{ reasoning?: string; content?: string; finish?: string | null; usage?: unknown }> = []
        for await (const chunk of stream) {
          const choice = chunk.choices[0]
          const delta: object = choice?.delta ?? {}
          const reasoning: unknown = Reflect.get(delta, "reasoning_content")
          seen.push({
            ...(typeof reasoning === "string" ? { reasoning } : {}),
            ...(choice?.delta.content ? { content: choice.delta.content } : {}),
            ...(choice?.finish_reason ? { finish: choice.finish_reason } : {}),
            ...(chunk.usage ? { usage: chunk.usage } : {})
          })
        }
        return seen
      })
      const firstContent = chunks.findIndex((c) => c.content !== undefined)
      const reasoning = chunks.filter((c) => c.reasoning !== undefined).map((c) => c.reasoning ?? "")
      assert.isAbove(firstContent, 0)
      assert.isTrue(
        chunks.slice(0, firstContent).some((c) => c.reasoning?.startsWith("round 1")),
        "the rounds are reported before the report arrives"
      )
      assert.include(reasoning.join(""), "phase synthesis")
      const report = chunks.map((c) => c.content ?? "").join("")
      const [listed] = yield* s.runs.list
      const session = yield* s.runs.load(listed?.id ?? "")
      assert.strictEqual(report, OpenAiFollowUp.marked(session.report?.markdown ?? "", session.id))
      assert.strictEqual(chunks.find((c) => c.finish !== undefined)?.finish, "stop")
      const usage = chunks[chunks.length - 1]?.usage
      assert.deepInclude(usage, { prompt_tokens: session.usage.reduce((n, r) => n + r.inputTokens, 0) })
    })
  )

  it.scopedLive(
    "a client that goes away mid-run cancels its session, streamed or not; the session stays, resumable",
    () =>
      Effect.gen(function* () {
        const s = yield* servedSlowly("150 millis")
        const cancelledAfter = (stream: boolean) =>
          Effect.gen(function* () {
            const before = new Set((yield* s.runs.list).map((l) => l.id))
            const abort = new AbortController()
            const request = sdk(s.url).chat.completions.create(
              { model: "deep-research", stream, messages: [{ role: "user", content: "How do tides work?" }] },
              { signal: abort.signal }
            )
            // Consumed in the background, so that the stream's chunks flow until the client goes.
            const consumed = Effect.runFork(
              Effect.tryPromise(async () => {
                const answer = await request
                if (Symbol.asyncIterator in answer) for await (const _ of answer) void _
              }).pipe(Effect.ignore)
            )
            let id: string | undefined
            for (let polls = 0; id === undefined; polls++) {
              assert.isBelow(polls, 200, "the run starts")
              yield* Effect.sleep("50 millis")
              id = (yield* s.runs.list).find((l) => !before.has(l.id))?.id
            }
            // Once it is researching, the client goes.
            for (let polls = 0; (yield* s.runs.status(id)).phase !== "supervision"; polls++) {
              assert.isBelow(polls, 400, "the run reaches supervision")
              yield* Effect.sleep("50 millis")
            }
            abort.abort()
            yield* Fiber.join(consumed)
            for (let polls = 0; s.runs.isRunning(id); polls++) {
              assert.isBelow(polls, 200, "the run stops when its client goes")
              yield* Effect.sleep("50 millis")
            }
            const session = yield* s.runs.load(id)
            assert.strictEqual(session.status, "cancelled", `stream: ${stream}`)
            assert.isUndefined(session.report)
          })
        yield* cancelledAfter(true)
        yield* cancelledAfter(false)
      }),
    60_000
  )

  it.scopedLive(
    "errors reach the SDK as OpenAI's: unknown model 404, no question 400, bad body 400, n > 1, JSON or a required tool call 400, bad key 401",
    () =>
      Effect.gen(function* () {
        const s = yield* served({ noClarify: true })
        const guarded = yield* served({ noClarify: true }, { token: Redacted.make("dr-openai-token-1f3a") })
        const client = sdk(s.url)
        const unknown = yield* Effect.flip(
          Effect.tryPromise(() =>
            client.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "hi" }] })
          )
        )
        assert.instanceOf(unknown.error, OpenAI.NotFoundError)
        const noQuestion = yield* Effect.flip(
          Effect.tryPromise(() =>
            client.chat.completions.create({ model: "deep-research", messages: [{ role: "system", content: "x" }] })
          )
        )
        assert.instanceOf(noQuestion.error, OpenAI.BadRequestError)
        assert.include(String(noQuestion.error), "messages")
        const noMessages = yield* Effect.flip(
          Effect.tryPromise(() => client.chat.completions.create({ model: "deep-research", messages: [] }))
        )
        assert.instanceOf(noMessages.error, OpenAI.BadRequestError)
        assert.include(
          noMessages.error.message,
          "messages",
          "a body that does not decode names the field, as OpenAI does"
        )
        const severalChoices = yield* Effect.flip(
          Effect.tryPromise(() =>
            client.chat.completions.create({
              model: "deep-research",
              n: 2,
              messages: [{ role: "user", content: "hi" }]
            })
          )
        )
        assert.instanceOf(severalChoices.error, OpenAI.BadRequestError)
        assert.strictEqual(severalChoices.error.param, "n")
        assert.include(severalChoices.error.message, "Invalid value for 'n': this server makes one choice")
        // What the answer could not honour is refused, not answered in another shape: JSON, a required tool call.
        const refusal = (body: Partial<OpenAI.ChatCompletionCreateParamsNonStreaming>) =>
          Effect.flip(
            Effect.tryPromise(() =>
              client.chat.completions.create({
                model: "deep-research",
                messages: [{ role: "user", content: "hi" }],
                ...body
              })
            )
          )
        const asJson = yield* refusal({ response_format: { type: "json_object" } })
        assert.instanceOf(asJson.error, OpenAI.BadRequestError)
        assert.strictEqual(asJson.error.param, "response_format.type")
        assert.include(asJson.error.message, "a Markdown report, not JSON")
        const withSchema = yield* refusal({
          response_format: { type: "json_schema", json_schema: { name: "answer", schema: { type: "object" } } }
        })
        assert.instanceOf(withSchema.error, OpenAI.BadRequestError)
        const tools: Array<OpenAI.ChatCompletionTool> = [
          { type: "function", function: { name: "lookup", parameters: { type: "object", properties: {} } } }
        ]
        const required = yield* refusal({ tools, tool_choice: "required" })
        assert.instanceOf(required.error, OpenAI.BadRequestError)
        assert.strictEqual(required.error.param, "tool_choice")
        const named = yield* refusal({ tools, tool_choice: { type: "function", function: { name: "lookup" } } })
        assert.instanceOf(named.error, OpenAI.BadRequestError)
        const noModel = yield* Effect.flip(
          Effect.tryPromise(() =>
            client.chat.completions.create({ messages: [{ role: "user", content: "hi" }] } as never)
          )
        )
        assert.instanceOf(noModel.error, OpenAI.BadRequestError)
        assert.include(noModel.error.message, "Missing required parameter: 'model'.")
        const unauthorized = yield* Effect.flip(Effect.tryPromise(() => sdk(guarded.url, "wrong").models.list()))
        assert.instanceOf(unauthorized.error, OpenAI.AuthenticationError)
        assert.include(unauthorized.error.message, "API token")
        assert.deepStrictEqual(yield* s.runs.list, [], "no session was started for any")
      })
  )
})
