/**
 * `deep-research serve --database URL` and `deep-research mcp --database URL` over the cluster. Neither runs research
 * itself: each sends its sessions to the cluster, where a `deep-research worker` process (the built CLI) runs them,
 * and answers from the PostgreSQL store (real PostgreSQL embedded in the test process through PGlite, or the server
 * `DEEP_RESEARCH_TEST_DATABASE_URL` names). The worker's models and search are an emulator in this process.
 */
import { SessionStore } from "@deep-research/core"
import { Emulator } from "@deep-research/emulator"
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import { assert, describe, it } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js"
import { Effect, Redacted, Schema } from "effect"
import * as fs from "node:fs"
import * as PgDatabase from "../../providers/test/support/pgDatabase.js"
import * as ServeClient from "../src/http/Client.js"
import * as Store from "../src/Store.js"
import { connected } from "./McpHarness.js"
import { connectedOver, researchAsTask } from "./McpHttpHarness.js"
import { served, servedKeyless, settled, sseEvents } from "./ServeHarness.js"
import { describeRun, freePort, sandbox, start } from "./support/builtCli.js"
import * as InProcess from "./support/inProcess.js"

const Event = Schema.parseJson(Schema.Struct({ _tag: Schema.String, sessionId: Schema.String }))
const Started = Schema.parseJson(Schema.Struct({ sessionId: Schema.String, status: Schema.String }))
const Status = Schema.parseJson(Schema.Struct({ status: Schema.String, running: Schema.Boolean }))

/** An MCP client talking to `deep-research mcp --database URL` served in this process: its tool calls. */
const mcpOver = (database: string) => Effect.map(connected({ database }), (mcp) => mcp.call)

/** Runs a query on the test database. */
const query = <A>(url: string, f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) =>
  Effect.flatMap(SqlClient.SqlClient, f).pipe(
    Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })),
    Effect.orDie
  )

/** The ids of the cluster's messages to a session. */
const messageIdsOf = (url: string, sessionId: string) =>
  query(url, (sql) =>
    Effect.map(
      sql<{ readonly id: string }>`SELECT id::text AS id FROM cluster_messages WHERE entity_id = ${sessionId}`,
      (rows) => rows.map((row) => row.id)
    )
  )

/** How many of the cluster's replies answer those messages. */
const repliesTo = (url: string, messageIds: ReadonlyArray<string>) =>
  query(url, (sql) =>
    Effect.map(
      sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM cluster_replies
        WHERE request_id::text IN (${sql.literal(messageIds.map((id) => `'${id}'`).join(",") || "''")})`,
      (rows) => rows[0]?.n ?? 0
    )
  )

/** A database, an emulator, and one worker on them, ready; `serve` joins as a client. */
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
  return { database, emulator, worker }
})

describe("deep-research serve and mcp over the cluster", () => {
  it.scopedLive(
    "a session one server sends while no worker runs is queued on every server, and deleted or cancelled from another",
    () =>
      Effect.gen(function* () {
        const database = yield* PgDatabase.make
        const locks = database.kind === "pglite" ? { DEEP_RESEARCH_SHARD_LOCKS: "table" } : {}
        yield* Effect.acquireRelease(
          Effect.sync(() => Object.assign(process.env, locks)),
          () => Effect.sync(() => delete process.env["DEEP_RESEARCH_SHARD_LOCKS"])
        )
        const one = yield* ServeClient.make({
          baseUrl: (yield* served({ noClarify: true, database: database.url })).url
        })
        // The other server has no key: it sends and reads, the workers research.
        const other = yield* ServeClient.make({ baseUrl: (yield* servedKeyless(database.url)).url })
        const { sessionId: id } = yield* one.sessions.create({ payload: { question: "Who runs this?" } })
        const seen = yield* other.sessions.get({ path: { id } })
        assert.deepInclude(seen, { status: "queued", running: true, query: "Who runs this?" })
        // Queued, it has asked nothing: an answer is refused for that, not as a session that does not exist.
        const answered = yield* Effect.flip(other.sessions.answer({ path: { id }, payload: { answer: "Norway" } }))
        assert.strictEqual(answered._tag, "Conflict")
        assert.include(answered.message, `The session ${id} cannot take an answer: it is queued`)
        assert.deepStrictEqual(
          (yield* other.sessions.list()).map((l) => [l.id, l.status, l.query]),
          [[id, "queued", "Who runs this?"]]
        )
        yield* other.sessions.delete({ path: { id } })
        assert.deepStrictEqual(yield* messageIdsOf(database.url, id), [])
        // Cancelled while queued, on another server than the one that sent it, its message is gone and it is kept
        // cancelled, with its question, as a local one would be: resumable.
        const { sessionId: second } = yield* one.sessions.create({ payload: { question: "Who stops this?" } })
        assert.strictEqual((yield* other.sessions.cancel({ path: { id: second } })).status, "cancelled")
        assert.deepStrictEqual(yield* messageIdsOf(database.url, second), [])
        assert.deepInclude(yield* one.sessions.get({ path: { id: second } }), {
          status: "cancelled",
          running: false,
          query: "Who stops this?"
        })
        for (const client of [one, other]) {
          const gone = yield* Effect.flip(client.sessions.get({ path: { id } }))
          assert.strictEqual(gone._tag, "NotFound")
          assert.deepStrictEqual(
            (yield* client.sessions.list()).map((l) => [l.id, l.status, l.query]),
            [[second, "cancelled", "Who stops this?"]]
          )
        }
      }).pipe(Effect.provide(FetchHttpClient.layer)),
    120_000
  )

  it.scopedLive(
    "research called as an MCP task at /mcp is the cluster's session: another server follows it as a task and cancels it",
    () =>
      Effect.gen(function* () {
        const database = yield* PgDatabase.make
        const locks = database.kind === "pglite" ? { DEEP_RESEARCH_SHARD_LOCKS: "table" } : {}
        yield* Effect.acquireRelease(
          Effect.sync(() => Object.assign(process.env, locks)),
          () => Effect.sync(() => delete process.env["DEEP_RESEARCH_SHARD_LOCKS"])
        )
        const one = yield* connectedOver((yield* served({ noClarify: true, database: database.url })).url)
        const other = yield* connectedOver((yield* servedKeyless(database.url)).url)
        // No worker runs: the session waits in the database for one.
        const task = yield* researchAsTask(one.mcp, "Who runs this?")
        const seen = yield* Effect.promise(() => other.mcp.experimental.tasks.getTask(task.taskId))
        assert.deepInclude(seen, { taskId: task.taskId, status: "working" })
        assert.include(seen.statusMessage ?? "", "queued")
        const cancelled = yield* Effect.promise(() => other.mcp.experimental.tasks.cancelTask(task.taskId))
        assert.strictEqual(cancelled.status, "cancelled")
        const after = yield* Effect.promise(() => one.mcp.experimental.tasks.getTask(task.taskId))
        assert.strictEqual(after.status, "cancelled")
        const result = yield* Effect.promise(() =>
          one.mcp.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema)
        )
        assert.isTrue(result.isError)
      }),
    120_000
  )

  it.scopedLive(
    "a session is sent to a worker, followed, listed and read back from the database",
    () =>
      Effect.gen(function* () {
        const { database, worker } = yield* cluster
        const s = yield* served({ noClarify: true, database: database.url })
        const client = yield* ServeClient.make({ baseUrl: s.url })
        const started = yield* client.sessions.create({ payload: { question: "How do tides work?", maxRounds: 2 } })
        const id = started.sessionId
        assert.strictEqual(started.status, "queued")
        const stream = yield* client.sessions.events({ path: { id }, urlParams: {}, headers: {} })
        const tags = sseEvents(stream)
          .filter((e) => e.event !== "end")
          .map((e) => Schema.decodeUnknownSync(Event)(e.data)._tag)
        assert.strictEqual(tags[tags.length - 1], "SessionCompleted")
        const done = yield* client.sessions.get({ path: { id } })
        assert.strictEqual(done.status, "completed")
        assert.isFalse(done.running)
        assert.deepStrictEqual(
          (yield* client.sessions.list()).map((l) => [l.id, l.status]),
          [[id, "completed"]]
        )
        assert.match(yield* client.sessions.report({ path: { id }, urlParams: {} }), /\[1\]/)
        // A server without a key reads it too, and says (a 503, not a 500) that it has no model to judge it with.
        const front = yield* servedKeyless(database.url)
        const keyless = yield* ServeClient.make({ baseUrl: front.url })
        assert.strictEqual((yield* keyless.sessions.get({ path: { id } })).status, "completed")
        const judged = yield* Effect.flip(keyless.sessions.evaluate({ path: { id } }))
        assert.strictEqual(judged._tag, "ServiceUnavailable")
        assert.include(judged.message, "no model to judge")
        assert.notInclude(judged.message, "Invalid input")
        // A session a simulated run made is judged by the emulator, as `deep-research evaluate` judges it.
        yield* Effect.flatMap(SessionStore.SessionStore, (sessions) =>
          sessions.saveArtefact(id, Store.simulatedArtefact, '{"simulated": true}\n')
        ).pipe(Effect.provide(Store.storeLayer(front.resolved.storeDir, front.resolved.credentials)))
        assert.strictEqual((yield* keyless.sessions.evaluate({ path: { id } })).sessionId, id)
        // The worker ran it, not the server.
        assert.include(worker.output().stderr, `cluster: session ${id} running`)
        // Nothing went to the file store: the sessions live in the database.
        const sessionsDir = `${s.store}/sessions`
        assert.isTrue(!fs.existsSync(sessionsDir) || fs.readdirSync(sessionsDir).length === 0)
        // Deleted, the session leaves nothing in the cluster's tables either: its `Run` held the question.
        const messages = yield* messageIdsOf(database.url, id)
        assert.isNotEmpty(messages)
        assert.isAbove(yield* repliesTo(database.url, messages), 0)
        yield* client.sessions.delete({ path: { id } })
        assert.deepStrictEqual(yield* messageIdsOf(database.url, id), [])
        assert.strictEqual(yield* repliesTo(database.url, messages), 0)
      }).pipe(Effect.provide(FetchHttpClient.layer)),
    120_000
  )

  it.scopedLive(
    "a running session is cancelled on its worker, then resumed to completion",
    () =>
      Effect.gen(function* () {
        const { database, emulator, worker } = yield* cluster
        // Slow vendors: the session is still researching when it is cancelled.
        yield* emulator.setLatency("all", "200 millis")
        const s = yield* served({ noClarify: true, database: database.url })
        const client = yield* ServeClient.make({ baseUrl: s.url })
        const { sessionId: id } = yield* client.sessions.create({
          payload: { question: "How do heat pumps work?", maxRounds: 2 }
        })
        for (let polls = 0; (yield* client.sessions.get({ path: { id } })).phase !== "supervision"; polls++) {
          if (polls > 600) return yield* Effect.dieMessage(`never researching:\n${worker.output().stderr}`)
          yield* Effect.sleep("100 millis")
        }
        assert.strictEqual((yield* client.system.health()).running, 1)
        const cancelled = yield* client.sessions.cancel({ path: { id } })
        assert.strictEqual(cancelled.status, "cancelled")
        assert.include(worker.output().stderr, `cluster: session ${id} cancelled`)
        const stopped = yield* client.sessions.get({ path: { id } })
        assert.strictEqual(stopped.status, "cancelled")
        assert.isFalse(stopped.running)
        // Cancelled is not settled for good: resuming it sends it back to the worker.
        yield* emulator.setLatency("all", 0)
        yield* client.sessions.resume({ path: { id } })
        const status: unknown = yield* settled(s.url, id)
        assert.strictEqual(Reflect.get(status as object, "status"), "completed")
      }).pipe(Effect.provide(FetchHttpClient.layer)),
    120_000
  )

  it.scopedLive(
    "the MCP server with --database sends a session to a worker and reads its report from the database",
    () =>
      Effect.gen(function* () {
        const { database, worker } = yield* cluster
        const call = yield* mcpOver(database.url)
        const started = Schema.decodeUnknownSync(Started)(
          yield* call("start_research", { question: "How do tides work?", maxRounds: 1 })
        )
        assert.strictEqual(started.status, "queued")
        for (let polls = 0; ; polls++) {
          const status = Schema.decodeUnknownSync(Status)(yield* call("get_status", { sessionId: started.sessionId }))
          if (!status.running) {
            assert.strictEqual(status.status, "completed")
            break
          }
          if (polls > 600) return yield* Effect.dieMessage(`never completed:\n${worker.output().stderr}`)
          yield* Effect.sleep("100 millis")
        }
        assert.match(yield* call("get_report", { sessionId: started.sessionId }), /\[1\]/)
        assert.include(worker.output().stderr, `cluster: session ${started.sessionId} running`)
        // `deep-research delete --database`, outside the cluster, removes the session's cluster messages too.
        assert.isNotEmpty(yield* messageIdsOf(database.url, started.sessionId))
        const box = sandbox(database.kind === "pglite" ? { DEEP_RESEARCH_SHARD_LOCKS: "table" } : {})
        const deleted = yield* Effect.promise(() =>
          InProcess.run(["delete", started.sessionId, "--database", database.url], { cwd: box.dir, env: box.env })
        )
        fs.rmSync(box.dir, { recursive: true, force: true })
        assert.strictEqual(deleted.code, 0, describeRun({ ...deleted, signal: null }))
        assert.deepStrictEqual(yield* messageIdsOf(database.url, started.sessionId), [])
      }),
    120_000
  )
})
