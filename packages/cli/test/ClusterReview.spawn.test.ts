/**
 * A reviewed run on the cluster: `serve --database URL` sends a session started with `review: true` to a
 * `deep-research worker` (the built CLI), which stops it before any search with the status `awaiting_review` and its
 * plan, in the database. The worker is killed then (SIGKILL) and another started: the session still waits. The edit
 * POSTed to `/api/sessions/{id}/review` goes to the session's runner, which researches the edited directives, not the
 * plan they replaced; a cancelled plan is kept, cancelled. The database is PGlite (or the server
 * DEEP_RESEARCH_TEST_DATABASE_URL names); the worker's models and search are the emulator in this process.
 */
import { Emulator } from "@deep-research/emulator"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as PgDatabase from "../../providers/test/support/pgDatabase.js"
import { post, request, served, sseEvents } from "./ServeHarness.js"
import { freePort, type Sandbox, sandbox, start } from "./support/builtCli.js"

const Status = Schema.parseJson(
  Schema.Struct({
    status: Schema.String,
    running: Schema.Boolean,
    plan: Schema.optional(Schema.Struct({ brief: Schema.String, directives: Schema.Array(Schema.String) }))
  })
)
const Started = Schema.parseJson(Schema.Struct({ sessionId: Schema.String }))
const Event = Schema.parseJson(Schema.Struct({ _tag: Schema.String, topic: Schema.optional(Schema.String) }))

/** A worker on the database, ready; killed (SIGKILL) when the scope closes unless it was killed before. */
const worker = (box: Sandbox, database: string) =>
  Effect.gen(function* () {
    const port = yield* Effect.promise(freePort)
    const running = yield* Effect.acquireRelease(
      Effect.sync(() =>
        start(box, [
          "worker",
          "--database",
          database,
          "--port",
          String(port),
          "--model",
          "openai:emulated-model",
          "--search",
          "tavily",
          "--no-clarify"
        ])
      ),
      (running) =>
        Effect.promise(async () => {
          running.child.kill("SIGKILL")
          await running.done
        })
    )
    for (let waited = 0; !running.output().stderr.includes("worker ready"); waited += 100) {
      if (waited > 60_000) return yield* Effect.dieMessage(`the worker never got ready:\n${running.output().stderr}`)
      yield* Effect.sleep("100 millis")
    }
    return running
  })

/** The session's status over the API. */
const statusOf = (url: string, id: string) =>
  Effect.map(request(`${url}/api/sessions/${id}`), (response) => Schema.decodeUnknownSync(Status)(response.text))

/** Polls the session's status until it is `wanted`; bounded. */
const until = (url: string, id: string, wanted: string, log: () => string) =>
  Effect.gen(function* () {
    for (let polls = 0; polls < 900; polls++) {
      const status = yield* statusOf(url, id)
      if (status.status === wanted && !status.running) return status
      yield* Effect.sleep("200 millis")
    }
    return yield* Effect.dieMessage(`session ${id} never ${wanted}:\n${log().slice(-3000)}`)
  })

/** The session's logged events. */
const eventsOf = (url: string, id: string) =>
  Effect.map(request(`${url}/api/sessions/${id}/events`), (response) =>
    sseEvents(response.text)
      .filter((e) => e.event !== "end")
      .map((e) => Schema.decodeUnknownSync(Event)(e.data))
  )

const edited = "Investigate how the Moon's gravity raises ocean tides, with the measurements of tide gauges since 1990."

describe("a reviewed run on the cluster", () => {
  it.scopedLive(
    "waits in the database before any search, outlives its worker, and researches the edited directives",
    () =>
      Effect.gen(function* () {
        const database = yield* PgDatabase.make
        // PGlite serves every connection from one backend: the cluster's shard locks use its lock table there.
        const locks = database.kind === "pglite" ? { DEEP_RESEARCH_SHARD_LOCKS: "table" } : {}
        yield* Effect.acquireRelease(
          Effect.sync(() => Object.assign(process.env, locks)),
          () => Effect.sync(() => delete process.env["DEEP_RESEARCH_SHARD_LOCKS"])
        )
        const emulator = yield* Emulator.start()
        yield* Emulator.simulate(emulator)
        const box = sandbox({
          OPENAI_BASE_URL: emulator.baseUrl("openai"),
          TAVILY_BASE_URL: emulator.baseUrl("tavily"),
          ...locks
        })
        yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(box.dir, { recursive: true, force: true })))
        const first = yield* worker(box, database.url)
        const { url } = yield* served({ noClarify: true, database: database.url })

        const created = yield* post(`${url}/api/sessions`, {
          question: "How do ocean tides work?",
          maxRounds: 1,
          review: true
        })
        assert.strictEqual(created.status, 202, created.text)
        const id = Schema.decodeUnknownSync(Started)(created.text).sessionId
        const waiting = yield* until(url, id, "awaiting_review", () => first.output().stderr)
        const original = waiting.plan?.directives ?? []
        assert.isAtLeast(original.length, 1, "the plan is shown")
        assert.deepStrictEqual(yield* emulator.requests("tavily.search"), [], "no search before the review")
        const before = yield* eventsOf(url, id)
        assert.isFalse(
          before.some((e) => e._tag === "ResearcherStarted"),
          "no researcher before the review"
        )
        assert.isTrue(before.some((e) => e._tag === "SessionAwaitingReview"))

        // The worker dies while the plan waits; another takes over the shards, and the session still waits.
        first.child.kill("SIGKILL")
        yield* Effect.promise(() => first.done)
        const second = yield* worker(box, database.url)
        yield* Effect.sleep("2 seconds")
        const still = yield* statusOf(url, id)
        assert.strictEqual(still.status, "awaiting_review")
        assert.deepStrictEqual(still.plan?.directives, original)

        const reviewed = yield* post(`${url}/api/sessions/${id}/review`, {
          action: "edit",
          brief: "How the Moon raises tides, as tide gauges measure it.",
          directives: [edited]
        })
        assert.strictEqual(reviewed.status, 202, reviewed.text)
        yield* until(url, id, "completed", () => second.output().stderr)
        assert.include(second.output().stderr, `cluster: session ${id} plan edited`)
        const topics = (yield* eventsOf(url, id)).filter((e) => e._tag === "ResearcherStarted").map((e) => e.topic)
        assert.include(topics, edited)
        for (const topic of original) if (topic !== edited) assert.notInclude(topics, topic)
        assert.isNotEmpty(yield* emulator.requests("tavily.search"))

        const again = yield* post(`${url}/api/sessions/${id}/review`, { action: "approve" })
        assert.strictEqual(again.status, 409, "a session no longer waiting takes no review")

        // A cancelled plan is kept, cancelled, and nothing is searched for it.
        const searched = (yield* emulator.requests("tavily.search")).length
        const other = yield* post(`${url}/api/sessions`, { question: "Why is the sea salty?", review: true })
        const otherId = Schema.decodeUnknownSync(Started)(other.text).sessionId
        yield* until(url, otherId, "awaiting_review", () => second.output().stderr)
        const cancelled = yield* post(`${url}/api/sessions/${otherId}/review`, { action: "cancel" })
        assert.strictEqual(cancelled.status, 202, cancelled.text)
        const stopped = yield* until(url, otherId, "cancelled", () => second.output().stderr)
        assert.isFalse(stopped.running)
        assert.strictEqual((yield* emulator.requests("tavily.search")).length, searched)
      }),
    240_000
  )
})
