import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as ServeClient from "../src/http/Client.js"
import { post, request, seedAwaiting, served, settled, sseEvents } from "./ServeHarness.js"

const clientOf = (url: string) => ServeClient.make({ baseUrl: url })

const Event = Schema.parseJson(Schema.Struct({ _tag: Schema.String, sessionId: Schema.String }))

describe("deep-research serve: the API through its typed client", () => {
  it.scopedLive("a session's life: create, follow, list, report, sources, evaluate, resume, cancel, delete", () =>
    Effect.gen(function* () {
      const s = yield* served({ noClarify: true })
      const client = yield* clientOf(s.url)
      const health = yield* client.system.health()
      assert.strictEqual(health.status, "ok")

      // As a question read from a file or a terminal comes: the client sends it trimmed, as the CLI takes it.
      const started = yield* client.sessions.create({ payload: { question: "How do tides work?\n", maxRounds: 2 } })
      assert.strictEqual(started.status, "running")
      const id = started.sessionId
      assert.strictEqual((yield* client.system.health()).running, 1)
      const status = yield* client.sessions.get({ path: { id } })
      assert.strictEqual(status.query, "How do tides work?")
      assert.isTrue(status.running)

      // The events stream ends when the run ends: the client's answer is the whole stream.
      const stream = yield* client.sessions.events({ path: { id }, urlParams: {}, headers: {} })
      const events = sseEvents(stream)
      const last = events[events.length - 1]
      assert.deepStrictEqual(
        [last?.id, last?.event, last?.data],
        [undefined, "end", JSON.stringify({ sessionId: id, status: "completed" })]
      )
      const tags = events.slice(0, -1).map((e) => Schema.decodeUnknownSync(Event)(e.data)._tag)
      assert.strictEqual(tags[0], "SessionStarted")
      assert.strictEqual(tags[tags.length - 1], "SessionCompleted")
      assert.includeMembers(tags, ["RoundStarted", "ResearcherStarted", "SourceFound", "ReportWritten"])
      assert.deepStrictEqual(
        events.slice(0, -1).map((e) => Number(e.id)),
        tags.map((_, i) => i + 1),
        "event ids are the positions in the log, from 1"
      )

      const done = yield* client.sessions.get({ path: { id } })
      assert.strictEqual(done.status, "completed")
      assert.isTrue(done.reportReady)
      const listed = yield* client.sessions.list()
      assert.deepStrictEqual(
        listed.map((l) => [l.id, l.status]),
        [[id, "completed"]]
      )

      const markdown = yield* client.sessions.report({ path: { id }, urlParams: {} })
      assert.match(markdown, /\[1\]/)
      assert.match(markdown, /^## Sources$/m)
      const html = yield* request(`${s.url}/api/sessions/${id}/report?format=html`)
      assert.strictEqual(html.headers.get("content-type"), "text/html; charset=utf-8")
      assert.include(html.text, `<a class="cite" href="#source-1">1</a>`)
      assert.include(html.text, `<li id="source-1" value="1">`)
      const byAccept = yield* request(`${s.url}/api/sessions/${id}/report`, { headers: { accept: "text/html" } })
      assert.include(byAccept.text, "<article")
      const download = yield* request(`${s.url}/api/sessions/${id}/report?download=true`)
      assert.strictEqual(download.headers.get("content-disposition"), `attachment; filename="${id}.md"`)
      assert.strictEqual(download.text, markdown)

      const sources = yield* client.sessions.sources({ path: { id } })
      assert.isAbove(sources.length, 0)
      const cited = sources.filter((source) => source.citation !== null).map((source) => source.citation)
      assert.includeMembers(cited, [1], "the report's first citation is one of the session's sources")

      const evaluation = yield* client.sessions.evaluate({ path: { id } })
      assert.strictEqual(evaluation.sessionId, id)

      const resumed = yield* Effect.flip(client.sessions.resume({ path: { id } }))
      assert.strictEqual(resumed._tag, "Conflict")
      const cancelled = yield* Effect.flip(client.sessions.cancel({ path: { id } }))
      assert.strictEqual(cancelled._tag, "Conflict")

      yield* client.sessions.delete({ path: { id } })
      const gone = yield* Effect.flip(client.sessions.get({ path: { id } }))
      assert.strictEqual(gone._tag, "NotFound")
      assert.strictEqual((yield* Effect.flip(client.sessions.report({ path: { id }, urlParams: {} })))._tag, "NotFound")
      assert.deepStrictEqual(yield* client.sessions.list(), [])
    }).pipe(Effect.provide(FetchHttpClient.layer))
  )

  it.scopedLive("a session waiting for an answer shows its question; the answer resumes it to a report", () =>
    Effect.gen(function* () {
      const s = yield* served()
      const client = yield* clientOf(s.url)
      yield* seedAwaiting(s, "dr-awaiting-1", "Which coast do you mean?")
      const waiting = yield* client.sessions.get({ path: { id: "dr-awaiting-1" } })
      assert.strictEqual(waiting.status, "awaiting_clarification")
      assert.strictEqual(waiting.clarificationQuestion, "Which coast do you mean?")
      // Stored by a run this server never saw, it is shown where the store has it, not as a run starting.
      assert.strictEqual(waiting.phase, "waiting for an answer")

      const empty = yield* post(`${s.url}/api/sessions/dr-awaiting-1/answer`, { answer: "  " })
      assert.strictEqual(empty.status, 400)
      assert.include(empty.text, `"path":["answer"]`)
      assert.strictEqual(JSON.parse(empty.text).message, "'answer': must not be empty.")

      const answered = yield* client.sessions.answer({
        path: { id: "dr-awaiting-1" },
        payload: { answer: " The Bay of Fundy\n" }
      })
      assert.strictEqual(answered.status, "running")
      const again = yield* Effect.flip(
        client.sessions.answer({ path: { id: "dr-awaiting-1" }, payload: { answer: "x" } })
      )
      assert.strictEqual(again._tag, "Conflict")
      yield* settled(s.url, "dr-awaiting-1")
      const done = yield* client.sessions.get({ path: { id: "dr-awaiting-1" } })
      assert.strictEqual(done.status, "completed")
      const session = yield* s.runs.load("dr-awaiting-1")
      assert.strictEqual(session.clarification?.answer, "The Bay of Fundy")
    }).pipe(Effect.provide(FetchHttpClient.layer))
  )

  it.scopedLive("cancel stops a running session and a queued one; resume finishes the cancelled run", () =>
    Effect.gen(function* () {
      const s = yield* served({ noClarify: true, maxSessions: 1 })
      const client = yield* clientOf(s.url)
      const first = yield* client.sessions.create({ payload: { question: "How do tides work?" } })
      // Cancelled once its session is stored (a run cancelled before it starts leaves nothing to resume).
      while ((yield* client.sessions.get({ path: { id: first.sessionId } })).phase === "starting") {
        yield* Effect.sleep("20 millis")
      }
      const second = yield* client.sessions.create({ payload: { question: "Why is the sky blue?" } })
      assert.strictEqual(second.status, "queued")
      const queuedCancel = yield* client.sessions.cancel({ path: { id: second.sessionId } })
      assert.strictEqual(queuedCancel.status, "cancelled")
      const cancelled = yield* client.sessions.cancel({ path: { id: first.sessionId } })
      assert.strictEqual(cancelled.status, "cancelled")
      assert.strictEqual((yield* client.sessions.get({ path: { id: first.sessionId } })).status, "cancelled")

      const resumed = yield* client.sessions.resume({ path: { id: first.sessionId } })
      assert.strictEqual(resumed.sessionId, first.sessionId)
      yield* settled(s.url, first.sessionId)
      const done = yield* client.sessions.get({ path: { id: first.sessionId } })
      assert.strictEqual(done.status, "completed")
      const unknown = yield* Effect.flip(client.sessions.cancel({ path: { id: "dr-no-such-session" } }))
      assert.strictEqual(unknown._tag, "NotFound")
    }).pipe(Effect.provide(FetchHttpClient.layer))
  )
})

describe("deep-research serve: Server-Sent Events", () => {
  it.scopedLive("a client that reconnects with Last-Event-ID gets every event once, in order, then live ones", () =>
    Effect.gen(function* () {
      const s = yield* served({ noClarify: true })
      const started = JSON.parse((yield* post(`${s.url}/api/sessions`, { question: "How do tides work?" })).text)
      const id: string = started.sessionId
      const url = `${s.url}/api/sessions/${id}/events`

      // The first connection drops after five events, mid-run.
      const firstPart = yield* Effect.promise(async () => {
        const controller = new AbortController()
        const response = await fetch(url, { signal: controller.signal })
        assert.strictEqual(response.headers.get("content-type"), "text/event-stream")
        if (response.body === null) throw new Error("no body")
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader()
        let text = ""
        while (sseEvents(text).length < 5) text += (await reader.read()).value ?? ""
        controller.abort()
        return sseEvents(text).slice(0, 5)
      })
      assert.deepStrictEqual(
        firstPart.map((e) => e.id),
        ["1", "2", "3", "4", "5"]
      )
      const rest = sseEvents((yield* request(url, { headers: { "last-event-id": "5" } })).text)
      const ids = rest.filter((e) => e.event === undefined).map((e) => Number(e.id))
      assert.deepStrictEqual(
        ids,
        ids.map((_, i) => i + 6),
        "the replay starts right after the last event seen, with no gap and no repeat"
      )
      assert.strictEqual(rest[rest.length - 1]?.event, "end")

      // Once the run is over, the whole log replays the same events under the same ids, and `after` works too.
      const whole = sseEvents((yield* request(url)).text).filter((e) => e.event === undefined)
      assert.deepStrictEqual(whole, [...firstPart, ...rest.filter((e) => e.event === undefined)])
      const tail = sseEvents((yield* request(`${url}?after=${whole.length - 2}`)).text)
      assert.deepStrictEqual(
        tail.map((e) => e.id ?? e.event),
        [String(whole.length - 1), String(whole.length), "end"]
      )
      const unknown = yield* request(`${s.url}/api/sessions/dr-nothing/events`)
      assert.strictEqual(unknown.status, 404)
    })
  )
})
