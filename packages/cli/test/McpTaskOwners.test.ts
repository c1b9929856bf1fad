/**
 * An MCP task belongs to whoever started it: its id is unguessable (its session's id, then 256 random bits), given only
 * to the client that started it; `tasks/list` shows a client only the tasks it started; where the server knows its
 * callers apart, another caller does not reach the task even with its id; and the client that started it reaches it
 * again by its id after reconnecting to a restarted server.
 */
import { assert, describe, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js"
import { CallToolResultSchema, CreateTaskResultSchema } from "@modelcontextprotocol/sdk/types.js"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as HttpServer from "@effect/platform/HttpServer"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import * as CliConfig from "../src/CliConfig.js"
import * as Mcp from "../src/Mcp.js"
import * as ServingRuns from "../src/ServingRuns.js"
import * as Serve from "../src/Serve.js"
import { connectedOver, researchAsTask } from "./McpHttpHarness.js"

const freshStore = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(nodePath.join(os.tmpdir(), "deep-research-tasks-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

/** Serves a simulated configuration from this store folder, with this token or none, until the scope closes. */
const servedOn = (store: string, token?: string) =>
  Effect.gen(function* () {
    const env = token === undefined ? {} : { DEEP_RESEARCH_API_TOKEN: token }
    const resolved = CliConfig.resolve({ simulate: true, store, noClarify: true }, env, undefined)
    if (Either.isLeft(resolved)) return yield* Effect.dieMessage(resolved.left.message)
    const runs = yield* Effect.orDie(ServingRuns.make(resolved.right))
    const options = { ...Serve.defaults, port: 0, token: token === undefined ? undefined : Redacted.make(token) }
    const context = yield* Layer.build(Serve.layer(runs, options))
    return Serve.urlOf(Context.get(context, HttpServer.HttpServer).address)
  })

const sessionOf = (statusMessage: string | undefined) => /^session (\S+):/.exec(statusMessage ?? "")?.[1] ?? ""

/** Whether a task request fails (the SDK's client rejects what the server answers with an error). */
const refused = <A>(promise: () => Promise<A>) => Effect.map(Effect.either(Effect.tryPromise(promise)), Either.isLeft)

describe("an MCP task belongs to whoever started it", () => {
  it.scopedLive("its id is its session's and 256 random bits, never the session id, which reaches nothing", () =>
    Effect.gen(function* () {
      const base = yield* servedOn(yield* freshStore)
      const a = yield* connectedOver(base)
      const first = yield* researchAsTask(a.mcp)
      const second = yield* researchAsTask(a.mcp)
      const sessionId = sessionOf(first.statusMessage)
      assert.match(first.taskId, new RegExp(`^${sessionId}\\.[A-Za-z0-9_-]{43}$`))
      assert.notStrictEqual(first.taskId.split(".")[1], second.taskId.split(".")[1])
      // The session id alone, as the task id was before: no task.
      assert.isTrue(yield* refused(() => a.mcp.experimental.tasks.getTask(sessionId)))
      assert.isTrue(yield* refused(() => a.mcp.experimental.tasks.cancelTask(sessionId)))
      // The id with its random part changed: no task either.
      const forged = `${sessionId}.${"A".repeat(43)}`
      assert.isTrue(yield* refused(() => a.mcp.experimental.tasks.getTask(forged)))
    })
  )

  it.scopedLive("tasks/list shows a client the tasks it started, and no other client's", () =>
    Effect.gen(function* () {
      const base = yield* servedOn(yield* freshStore)
      const a = yield* connectedOver(base)
      const b = yield* connectedOver(base)
      const task = yield* researchAsTask(a.mcp)
      const mine = yield* Effect.promise(() => a.mcp.experimental.tasks.listTasks())
      const theirs = yield* Effect.promise(() => b.mcp.experimental.tasks.listTasks())
      assert.deepStrictEqual(
        mine.tasks.map((t) => t.taskId),
        [task.taskId]
      )
      assert.deepStrictEqual(theirs.tasks, [])
    })
  )

  it.scopedLive("where callers are known apart, another caller reaches no task of the first, even with its id", () =>
    Effect.gen(function* () {
      const store = yield* freshStore
      const resolved = CliConfig.resolve({ simulate: true, store, noClarify: true }, {}, undefined)
      if (Either.isLeft(resolved)) return yield* Effect.dieMessage(resolved.left.message)
      const runs = yield* Effect.orDie(ServingRuns.make(resolved.right))
      const tools = yield* Mcp.toolSet(runs)
      // Two connections, each opened by a caller of its own token, as serve binds them.
      const client = (connection: string, caller: string) =>
        Effect.gen(function* () {
          const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
          serverSide.sessionId = connection
          tools.owners.connect(connection, caller)
          yield* Effect.promise(() => Mcp.connect(tools, serverSide))
          const mcp = new Client({ name: connection, version: "1.0.0" })
          yield* Effect.acquireRelease(
            Effect.promise(() => mcp.connect(clientSide)),
            () => Effect.promise(() => mcp.close())
          )
          return mcp
        })
      const alice = yield* client("connection-a", "token:alice")
      const bob = yield* client("connection-b", "token:bob")
      const { task } = yield* Effect.promise(() =>
        alice.request(
          {
            method: "tools/call",
            params: { name: "research", arguments: { question: "How do tides work?", maxRounds: 1 }, task: {} }
          },
          CreateTaskResultSchema
        )
      )
      assert.isTrue(yield* refused(() => bob.experimental.tasks.getTask(task.taskId)))
      assert.isTrue(yield* refused(() => bob.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema)))
      assert.isTrue(yield* refused(() => bob.experimental.tasks.cancelTask(task.taskId)))
      // Alice's task goes on, hers alone.
      const seen = yield* Effect.promise(() => alice.experimental.tasks.getTask(task.taskId))
      assert.notStrictEqual(seen.status, "cancelled")
    })
  )

  it.scopedLive(
    "on a server with a token for each caller, another caller's token reaches neither the task nor its MCP session",
    () =>
      Effect.gen(function* () {
        const alice = "a1c3e5a7c9e1a3c5e7a9c1e3a5c7e9a1"
        const bob = "b2d4f6b8d0f2b4d6f8b0d2f4b6d8f0b2"
        const base = yield* servedOn(yield* freshStore, `${alice}, ${bob}`)
        const a = yield* connectedOver(base, { authorization: `Bearer ${alice}` })
        const b = yield* connectedOver(base, { authorization: `Bearer ${bob}` })
        const task = yield* researchAsTask(a.mcp)
        assert.isTrue(yield* refused(() => b.mcp.experimental.tasks.getTask(task.taskId)))
        assert.isTrue(yield* refused(() => b.mcp.experimental.tasks.cancelTask(task.taskId)))
        assert.isTrue(yield* refused(() => b.mcp.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema)))
        assert.deepStrictEqual((yield* Effect.promise(() => b.mcp.experimental.tasks.listTasks())).tasks, [])
        // Bob naming Alice's MCP session is told it does not exist.
        const hijack = yield* Effect.promise(() =>
          fetch(`${base}/mcp`, {
            method: "POST",
            headers: {
              authorization: `Bearer ${bob}`,
              "content-type": "application/json",
              accept: "application/json, text/event-stream",
              "mcp-session-id": a.transport.sessionId ?? "",
              "mcp-protocol-version": "2025-11-25"
            },
            body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tasks/list" })
          })
        )
        assert.strictEqual(hijack.status, 404)
        const seen = yield* Effect.promise(() => a.mcp.experimental.tasks.getTask(task.taskId))
        assert.notStrictEqual(seen.status, "cancelled")
      })
  )

  it.scopedLive(
    "after a restart the client that started a task reaches it by its id with its token; another token does not",
    () =>
      Effect.gen(function* () {
        const store = yield* freshStore
        const token = "b6f1c0e9d2a4b7c3e8f5a1d6c9b2e7f4"
        const auth = { authorization: `Bearer ${token}` }
        const taskId = yield* Effect.scoped(
          Effect.gen(function* () {
            const { mcp } = yield* connectedOver(yield* servedOn(store, token), auth)
            return (yield* researchAsTask(mcp)).taskId
          })
        )
        yield* Effect.scoped(
          Effect.gen(function* () {
            const { mcp } = yield* connectedOver(yield* servedOn(store, token), auth)
            const seen = yield* Effect.promise(() => mcp.experimental.tasks.getTask(taskId))
            assert.strictEqual(seen.taskId, taskId)
          })
        )
        const other = "0123456789abcdef0123456789abcdef"
        const { mcp } = yield* connectedOver(yield* servedOn(store, other), { authorization: `Bearer ${other}` })
        assert.isTrue(yield* refused(() => mcp.experimental.tasks.getTask(taskId)))
      })
  )
})
