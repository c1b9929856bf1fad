// After the report, through the server: a /v1 conversation's follow-up turn is answered from the session its report
// came from (the official openai SDK as the client), a new topic is researched as a new session, and the REST API
// asks, lists the thread and goes deeper.
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import OpenAI from "openai"
import * as OpenAiFollowUp from "../src/http/OpenAiFollowUp.js"
import { post, request, served, settled } from "./ServeHarness.js"

const sdk = (url: string) => new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused", maxRetries: 0 })

const firstTurn = [{ role: "user" as const, content: "How do tides work?" }]

describe("deep-research serve: after the report", () => {
  it.scopedLive("a /v1 follow-up turn is answered from the report's session, with no new research", () =>
    Effect.gen(function* () {
      const s = yield* served({ noClarify: true })
      const client = sdk(s.url)
      const report = yield* Effect.promise(() =>
        client.chat.completions.create({ model: "deep-research", messages: firstTurn })
      )
      const reportText = report.choices[0]?.message.content ?? ""
      const [listed] = yield* s.runs.list
      const sessionId = listed?.id ?? ""
      assert.include(reportText, OpenAiFollowUp.marker(sessionId))
      const researched = yield* s.runs.load(sessionId)
      const followUp = yield* Effect.promise(() =>
        client.chat.completions.create({
          model: "deep-research",
          messages: [
            ...firstTurn,
            { role: "assistant", content: reportText },
            { role: "user", content: "What key figures do the sources give on tides?" }
          ]
        })
      )
      const answer = followUp.choices[0]?.message.content ?? ""
      // No new session, no new round, no new source: the answer is the session's, kept in its thread.
      assert.strictEqual((yield* s.runs.list).length, 1)
      const after = yield* s.runs.load(sessionId)
      assert.strictEqual(after.rounds.length, researched.rounds.length)
      assert.strictEqual(after.sources.length, researched.sources.length)
      assert.strictEqual(after.answers.length, 1)
      assert.strictEqual(after.answers[0]?.question, "What key figures do the sources give on tides?")
      assert.isTrue(after.answers[0]?.covered)
      assert.match(answer, /\[\d+\]/)
      assert.include(answer, after.answers[0]?.markdown.trimEnd() ?? "")
      assert.include(answer, OpenAiFollowUp.marker(sessionId))
      assert.isAbove(followUp.usage?.total_tokens ?? 0, 0)

      // Streamed as today: the answer arrives as content, then the stop.
      const streamed = yield* Effect.promise(async () => {
        const stream = await client.chat.completions.create({
          model: "deep-research",
          stream: true,
          messages: [
            ...firstTurn,
            { role: "assistant", content: reportText },
            { role: "user", content: "What do the sources say about tides and the moon?" }
          ]
        })
        let content = ""
        let finish: string | null | undefined
        for await (const chunk of stream) {
          content += chunk.choices[0]?.delta.content ?? ""
          finish = chunk.choices[0]?.finish_reason ?? finish
        }
        return { content, finish }
      })
      assert.strictEqual(streamed.finish, "stop")
      assert.include(streamed.content, OpenAiFollowUp.marker(sessionId))
      assert.strictEqual((yield* s.runs.list).length, 1)
      assert.strictEqual((yield* s.runs.load(sessionId)).answers.length, 2)
    })
  )

  it.scopedLive("a follow-up turn on a new topic starts a new session", () =>
    Effect.gen(function* () {
      const s = yield* served({ noClarify: true })
      const client = sdk(s.url)
      const report = yield* Effect.promise(() =>
        client.chat.completions.create({ model: "deep-research", messages: firstTurn })
      )
      yield* Effect.promise(() =>
        client.chat.completions.create({
          model: "deep-research",
          messages: [
            ...firstTurn,
            { role: "assistant", content: report.choices[0]?.message.content ?? "" },
            { role: "user", content: "Zebra migration across Kenya" }
          ]
        })
      )
      const listed = yield* s.runs.list
      assert.strictEqual(listed.length, 2)
      assert.include(
        listed.map((l) => l.query),
        "Zebra migration across Kenya"
      )
    })
  )

  it.scopedLive("the API asks a finished session, lists its thread, and goes deeper into a new report version", () =>
    Effect.gen(function* () {
      const s = yield* served({ noClarify: true })
      const created = yield* post(`${s.url}/api/sessions`, { question: "How do tides work?" })
      const { sessionId } = JSON.parse(created.text) as { sessionId: string }
      yield* settled(s.url, sessionId)
      const asked = yield* post(`${s.url}/api/sessions/${sessionId}/ask`, { question: "What drives tides?" })
      assert.strictEqual(asked.status, 200)
      assert.strictEqual(JSON.parse(asked.text).question, "What drives tides?")
      const empty = yield* post(`${s.url}/api/sessions/${sessionId}/ask`, { question: " " })
      assert.strictEqual(empty.status, 400)
      const thread = yield* request(`${s.url}/api/sessions/${sessionId}/answers`)
      assert.deepStrictEqual(
        (JSON.parse(thread.text) as Array<{ question: string }>).map((a) => a.question),
        ["What drives tides?"]
      )
      const continued = yield* post(`${s.url}/api/sessions/${sessionId}/continue`, { direction: "spring tides" })
      assert.strictEqual(continued.status, 202)
      yield* settled(s.url, sessionId)
      const session = yield* s.runs.load(sessionId)
      assert.strictEqual(session.status, "completed")
      assert.strictEqual(session.reportVersions.length, 1)
      assert.strictEqual(session.continuations[0]?.direction, "spring tides")
      const missing = yield* post(`${s.url}/api/sessions/nope/ask`, { question: "What?" })
      assert.strictEqual(missing.status, 404)
    })
  )
})
