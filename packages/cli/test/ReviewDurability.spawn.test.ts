/**
 * A reviewed run over the wire of `deep-research serve`: started with `review: true`, it stops before any search with
 * the status `awaiting_review` and its plan; killed then (SIGKILL: no finalizer runs) and restarted on the same store,
 * the server keeps it waiting (a restart resumes what was running, never a plan waiting for its review); the edit
 * POSTed to `/api/sessions/{id}/review` is what gets researched, not the plan it replaced.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import { ensureBuilt } from "./support/built.js"
import { describeRun, type Sandbox, sandbox, start } from "./support/builtCli.js"

const Status = Schema.Struct({
  status: Schema.String,
  plan: Schema.optional(Schema.Struct({ brief: Schema.String, directives: Schema.Array(Schema.String) }))
})
const Started = Schema.Struct({ sessionId: Schema.String, status: Schema.String })
const Event = Schema.Struct({ _tag: Schema.String, topic: Schema.optional(Schema.String) })

const serving = (box: Sandbox) =>
  Effect.gen(function* () {
    const server = start(box, ["serve", "--simulate", "--no-clarify", "--port", "0"])
    for (let waited = 0; waited < 600; waited++) {
      const url = /(http:\/\/127\.0\.0\.1:\d+)\//.exec(server.output().stderr)?.[1]
      if (url !== undefined) return { server, url }
      if (server.child.exitCode !== null) break
      yield* Effect.sleep("100 millis")
    }
    const finished = yield* Effect.promise(() => {
      server.child.kill("SIGKILL")
      return server.done
    })
    return yield* Effect.dieMessage(`serve did not start:\n${describeRun(finished)}`)
  })

const json = <A, I>(schema: Schema.Schema<A, I>, url: string, init?: RequestInit) =>
  Effect.promise(async () => {
    const response = await fetch(url, init)
    const text = await response.text()
    return { status: response.status, body: Schema.decodeUnknownSync(Schema.parseJson(schema))(text) }
  })

const post = <A, I>(schema: Schema.Schema<A, I>, url: string, body: unknown) =>
  json(schema, url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })

/** Polls the session's status until it is one of `wanted`, or not queued or running; bounded. */
const statusOnce = (url: string, id: string, wanted: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    for (let round = 0; round < 900; round++) {
      const { body } = yield* json(Status, `${url}/api/sessions/${id}`)
      if (wanted.includes(body.status) || (body.status !== "queued" && body.status !== "running")) return body
      yield* Effect.sleep("200 millis")
    }
    return yield* Effect.dieMessage(`session ${id} never settled`)
  })

/** The session's logged events, read from its event stream (which ends at once for a session no run holds). */
const eventsOf = (url: string, id: string) =>
  Effect.promise(async () => {
    const text = await (await fetch(`${url}/api/sessions/${id}/events`)).text()
    return text
      .split("\n\n")
      .flatMap((block) => block.split("\n").filter((line) => line.startsWith("data: ")))
      .map((line) => line.slice("data: ".length))
      .flatMap((data) => {
        try {
          return [Schema.decodeUnknownSync(Event)(JSON.parse(data))]
        } catch {
          return []
        }
      })
  })

const edited = "Investigate how the Moon's gravity raises ocean tides, with the measurements of tide gauges since 1990."

describe("deep-research serve with a reviewed run", () => {
  it.scopedLive(
    "waits before any search, survives a SIGKILL while it waits, and researches the edited directives",
    () =>
      Effect.gen(function* () {
        ensureBuilt()
        const box = sandbox()
        yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(box.dir, { recursive: true, force: true })))
        const first = yield* serving(box)
        const created = yield* post(Started, `${first.url}/api/sessions`, {
          question: "How do ocean tides work?",
          allowClarification: false,
          review: true
        })
        assert.strictEqual(created.status, 202)
        const id = created.body.sessionId
        const waiting = yield* statusOnce(first.url, id, ["awaiting_review"])
        assert.strictEqual(waiting.status, "awaiting_review", first.server.output().stderr.slice(-3000))
        const original = waiting.plan?.directives ?? []
        assert.isAtLeast(original.length, 1)
        const before = yield* eventsOf(first.url, id)
        assert.deepStrictEqual(
          before.filter((e) => e._tag === "ToolCalled" || e._tag === "ResearcherStarted"),
          [],
          "no search or researcher before the review"
        )
        assert.isTrue(before.some((e) => e._tag === "SessionAwaitingReview"))

        first.server.child.kill("SIGKILL")
        const killed = yield* Effect.promise(() => first.server.done)
        assert.strictEqual(killed.signal, "SIGKILL")

        const second = yield* serving(box)
        yield* Effect.addFinalizer(() =>
          Effect.promise(() => {
            second.server.child.kill("SIGTERM")
            return second.server.done
          })
        )
        // The restarted server resumes what was running, never a plan waiting for its review.
        yield* Effect.sleep("1 second")
        const still = yield* json(Status, `${second.url}/api/sessions/${id}`)
        assert.strictEqual(still.body.status, "awaiting_review")
        assert.deepStrictEqual(still.body.plan?.directives, original)

        const reviewed = yield* post(Started, `${second.url}/api/sessions/${id}/review`, {
          action: "edit",
          brief: "How the Moon raises tides, as tide gauges measure it.",
          directives: [edited]
        })
        assert.strictEqual(reviewed.status, 202)
        const done = yield* statusOnce(second.url, id, ["completed"])
        assert.strictEqual(done.status, "completed", second.server.output().stderr.slice(-3000))
        const topics = (yield* eventsOf(second.url, id))
          .filter((e) => e._tag === "ResearcherStarted")
          .map((e) => e.topic)
        assert.include(topics, edited)
        for (const topic of original) if (topic !== edited) assert.notInclude(topics, topic)

        const again = yield* post(Schema.Unknown, `${second.url}/api/sessions/${id}/review`, { action: "approve" })
        assert.strictEqual(again.status, 409, "a session no longer waiting takes no review")
      }),
    240_000
  )
})
