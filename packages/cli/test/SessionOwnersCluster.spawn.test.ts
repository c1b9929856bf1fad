/**
 * On a cluster (`serve --database`), a session belongs to the caller that started it as on one server: with a token
 * for each caller, the session one caller started on one server is, on that server and on another of the cluster,
 * not listed to another caller and not found by its id, while its own caller reaches it from either; and a caller's
 * run that starts from the library takes the sources of its own sessions and no one's, never another caller's. A
 * worker (the built CLI) runs it; the database is PGlite in this process, or the server `DEEP_RESEARCH_TEST_DATABASE_URL`
 * names.
 */
import { Emulator } from "@deep-research/emulator"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Redacted, Schema } from "effect"
import * as fs from "node:fs"
import * as PgDatabase from "../../providers/test/support/pgDatabase.js"
import { served } from "./ServeHarness.js"
import { freePort, sandbox, start } from "./support/builtCli.js"
import { alice, bob, originsOf, question, seedLibrary, stored } from "./support/ownedLibrary.js"

const Started = Schema.parseJson(Schema.Struct({ sessionId: Schema.String }))
const Listed = Schema.parseJson(Schema.Array(Schema.Struct({ id: Schema.String })))
const Status = Schema.parseJson(Schema.Struct({ status: Schema.String }))

const call = (url: string, token: string, method = "GET", body?: unknown) =>
  Effect.promise(async () => {
    const response = await fetch(url, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { "content-type": "application/json" })
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    return { status: response.status, text: await response.text() }
  })

/** A database, an emulator, and one worker on them, ready. */
const cluster = Effect.gen(function* () {
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
  const port = yield* Effect.promise(freePort)
  const worker = yield* Effect.acquireRelease(
    Effect.sync(() =>
      start(box, [
        "worker",
        "--database",
        database.url,
        "--port",
        String(port),
        "--model",
        "openai:emulated-model",
        "--search",
        "tavily"
      ])
    ),
    (worker) =>
      Effect.promise(async () => {
        worker.child.kill("SIGKILL")
        await worker.done
        fs.rmSync(box.dir, { recursive: true, force: true })
      })
  )
  for (let waited = 0; !worker.output().stderr.includes("worker ready"); waited += 100) {
    if (waited > 60_000) return yield* Effect.dieMessage(`the worker never got ready:\n${worker.output().stderr}`)
    yield* Effect.sleep("100 millis")
  }
  return database
})

describe("a session belongs to the caller that started it on a cluster too", () => {
  it.scopedLive(
    "another caller finds it on no server of the cluster; its own caller reaches it from every one",
    () =>
      Effect.gen(function* () {
        const database = yield* cluster
        const tokens = { token: Redacted.make(`${alice},${bob}`) }
        const one = (yield* served({ noClarify: true, database: database.url }, tokens)).url
        const other = (yield* served({ noClarify: true, database: database.url }, tokens)).url
        const created = yield* call(`${one}/api/sessions`, alice, "POST", { question: "How do tides work?" })
        assert.strictEqual(created.status, 202, created.text)
        const id = Schema.decodeSync(Started)(created.text).sessionId
        // Queued or running, on the server that sent it and on another, another caller does not find it.
        const early = yield* call(`${one}/api/sessions/${id}`, bob)
        assert.strictEqual(early.status, 404, early.text)
        const elsewhere = yield* call(`${other}/api/sessions/${id}/cancel`, bob, "POST")
        assert.strictEqual(elsewhere.status, 404, elsewhere.text)
        assert.notInclude((yield* call(`${other}/api/sessions`, bob)).text, id)
        let status = ""
        for (let round = 0; round < 600 && status !== "completed"; round++) {
          const answer = yield* call(`${other}/api/sessions/${id}`, alice)
          if (answer.status === 200) status = Schema.decodeSync(Status)(answer.text).status
          yield* Effect.sleep("200 millis")
        }
        assert.strictEqual(status, "completed")
        for (const server of [one, other]) {
          for (const [method, path] of [
            ["GET", `/api/sessions/${id}`],
            ["GET", `/api/sessions/${id}/report`],
            ["POST", `/api/sessions/${id}/cancel`],
            ["DELETE", `/api/sessions/${id}`]
          ] as const) {
            const answer = yield* call(`${server}${path}`, bob, method)
            assert.strictEqual(answer.status, 404, `${method} ${path}: ${answer.text}`)
            assert.include(answer.text, `No session with id ${id}`)
          }
          assert.notInclude(
            Schema.decodeSync(Listed)((yield* call(`${server}/api/sessions`, bob)).text).map((s) => s.id),
            id
          )
          assert.include(
            Schema.decodeSync(Listed)((yield* call(`${server}/api/sessions`, alice)).text).map((s) => s.id),
            id
          )
          const report = yield* call(`${server}/api/sessions/${id}/report`, alice)
          assert.strictEqual(report.status, 200, report.text)
        }
      }),
    120_000
  )

  it.scopedLive(
    "a caller's library run on a worker takes its own sessions' sources and no one's, never another caller's",
    () =>
      Effect.gen(function* () {
        const database = yield* cluster
        const s = yield* served(
          { noClarify: true, database: database.url },
          { token: Redacted.make(`${alice},${bob}`) }
        )
        yield* seedLibrary(s.resolved)
        const created = yield* call(`${s.url}/api/sessions`, alice, "POST", { question, library: true })
        assert.strictEqual(created.status, 202, created.text)
        const id = Schema.decodeSync(Started)(created.text).sessionId
        let status = ""
        for (let round = 0; round < 600 && status !== "completed"; round++) {
          status = Schema.decodeSync(Status)((yield* call(`${s.url}/api/sessions/${id}`, alice)).text).status
          yield* Effect.sleep("200 millis")
        }
        assert.strictEqual(status, "completed")
        const session = yield* stored(s.resolved, id)
        assert.deepStrictEqual([...originsOf(session)].sort(), ["alice-farms", "shared-farms"])
        assert.isFalse(session.sources.some((source) => source.url.includes("bob.example")))
      }),
    120_000
  )
})
