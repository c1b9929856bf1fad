/**
 * MCP over Streamable HTTP at `/mcp` of `deep-research serve`, in this process on a loopback port, driven by the
 * official SDK's `StreamableHTTPClientTransport`: a session from start to report as a task and as a plain call, the
 * same tools as on stdio, a task outliving its MCP session and the server, a task cancelled, and who is let in.
 */
import { assert, describe, it } from "@effect/vitest"
import type { Progress } from "@modelcontextprotocol/sdk/types.js"
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as HttpServer from "@effect/platform/HttpServer"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as http from "node:http"
import * as os from "node:os"
import * as nodePath from "node:path"
import * as CliConfig from "../src/CliConfig.js"
import * as ServingRuns from "../src/ServingRuns.js"
import * as Serve from "../src/Serve.js"
import { connected, Text } from "./McpHarness.js"
import { connectedOver, researchAsTask } from "./McpHttpHarness.js"
import { post, request, served, servedSlowly } from "./ServeHarness.js"

const Report = Schema.Struct({
  sessionId: Schema.String,
  report: Schema.String,
  sources: Schema.NonEmptyArray(Schema.Struct({ url: Schema.String }))
})
const Status = Schema.parseJson(Schema.Struct({ status: Schema.String, running: Schema.Boolean }))

const accepts = { accept: "application/json, text/event-stream" }

/** Serves a simulated configuration from this store folder until the scope closes. */
const servedOn = (store: string) =>
  Effect.gen(function* () {
    const resolved = CliConfig.resolve({ simulate: true, store }, {}, undefined)
    if (Either.isLeft(resolved)) return yield* Effect.dieMessage(resolved.left.message)
    const runs = yield* Effect.orDie(ServingRuns.make(resolved.right))
    const context = yield* Layer.build(Serve.layer(runs, { ...Serve.defaults, port: 0 }))
    return Serve.urlOf(Context.get(context, HttpServer.HttpServer).address)
  })

/** The status of a POST whose Host header names another server than the one it reaches (fetch sends its own). */
const postWithHost = (url: string, host: string, body: unknown) =>
  Effect.async<number>((resume) => {
    const text = JSON.stringify(body)
    const req = http.request(
      url,
      {
        method: "POST",
        headers: { host, "content-type": "application/json", "content-length": text.length, ...accepts }
      },
      (res) => {
        res.resume()
        res.on("end", () => resume(Effect.succeed(res.statusCode ?? 0)))
      }
    )
    req.on("error", () => resume(Effect.succeed(0)))
    req.end(text)
  })

const initialize = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "curl", version: "1" } }
}

describe("MCP over Streamable HTTP on serve", () => {
  it.scopedLive("a session runs from start to report as a task: created at once, followed, its result the report", () =>
    Effect.gen(function* () {
      const s = yield* served({ noClarify: true })
      const { mcp } = yield* connectedOver(s.url)
      const messages: Array<string> = []
      let result: unknown
      const stream = mcp.experimental.tasks.callToolStream(
        { name: "research", arguments: { question: "How do tides work?", maxRounds: 1 } },
        CallToolResultSchema,
        { task: {} }
      )
      yield* Effect.promise(async () => {
        for await (const message of stream) {
          messages.push(message.type)
          if (message.type === "result") result = message.result
          if (message.type === "error") throw message.error
        }
      })
      assert.strictEqual(messages[0], "taskCreated")
      assert.strictEqual(messages[messages.length - 1], "result")
      const report = Schema.decodeUnknownSync(Report)(Reflect.get(Object(result), "structuredContent"))
      assert.match(report.report, /\[1\]/)
      // The task is the session the HTTP API knows.
      const status = yield* request(`${s.url}/api/sessions/${report.sessionId}`)
      assert.strictEqual(Schema.decodeUnknownSync(Status)(status.text).status, "completed")
    })
  )

  it.scopedLive("a plain call waits for the report and sends progress while the session runs", () =>
    Effect.gen(function* () {
      const s = yield* served({ noClarify: true })
      const { mcp } = yield* connectedOver(s.url)
      const progress: Array<Progress> = []
      const result = yield* Effect.promise(() =>
        mcp.callTool(
          { name: "research", arguments: { question: "How do tides work?", maxRounds: 1 } },
          CallToolResultSchema,
          { onprogress: (p) => progress.push(p), resetTimeoutOnProgress: true }
        )
      )
      const report = Schema.decodeUnknownSync(Report)(result.structuredContent)
      assert.strictEqual(Schema.decodeUnknownSync(Text)(result.content)[0]?.text, report.report)
      assert.isAbove(progress.length, 1)
      assert.include(progress.map((p) => p.message).join("\n"), "round 1")
    })
  )

  it.scopedLive("start_research's note says the run is the server's, not the stdio server's advice", () =>
    Effect.gen(function* () {
      const s = yield* served({ noClarify: true })
      const { mcp } = yield* connectedOver(s.url)
      const result = yield* Effect.promise(() =>
        mcp.callTool({ name: "start_research", arguments: { question: "How do tides work?", maxRounds: 1 } })
      )
      const { note } = Schema.decodeUnknownSync(Schema.Struct({ sessionId: Schema.String, note: Schema.String }))(
        result.structuredContent
      )
      assert.include(note, "deep-research serve")
      assert.include(note, "get_status")
      assert.notInclude(note, "MCP Inspector")
    })
  )

  it.scopedLive("its tools are the stdio server's: names, titles, hints, schemas and task support", () =>
    Effect.gen(function* () {
      const s = yield* served()
      const { mcp } = yield* connectedOver(s.url)
      const overHttp = yield* Effect.promise(() => mcp.listTools())
      const local = yield* connected({})
      assert.deepStrictEqual(overHttp.tools, (yield* Effect.promise(() => local.client.listTools())).tools)
      assert.deepStrictEqual(
        overHttp.tools.filter((tool) => tool.execution?.taskSupport === "optional").map((tool) => tool.name),
        ["research"]
      )
    })
  )

  it.scopedLive(
    "a task outlives its MCP session and the server: after a restart on the same store its result is the report",
    () =>
      Effect.gen(function* () {
        const store = yield* Effect.acquireRelease(
          Effect.sync(() => fs.mkdtempSync(nodePath.join(os.tmpdir(), "deep-research-mcp-http-"))),
          (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
        )
        const taskId = yield* Effect.scoped(
          Effect.gen(function* () {
            const base = yield* servedOn(store)
            const { mcp, transport } = yield* connectedOver(base)
            const task = yield* researchAsTask(mcp)
            // Ended by the client: the MCP session is gone, its requests are answered 404 as MCP has it.
            const ended = transport.sessionId ?? ""
            yield* Effect.promise(() => transport.terminateSession())
            const gone = yield* post(
              `${base}/mcp`,
              { jsonrpc: "2.0", id: 2, method: "ping" },
              {
                ...accepts,
                "mcp-session-id": ended,
                "mcp-protocol-version": "2025-11-25"
              }
            )
            assert.strictEqual(gone.status, 404, gone.text)
            // The task is not: another MCP session follows it to its end.
            const other = yield* connectedOver(base)
            let seen = task
            while (seen.status === "working") {
              yield* Effect.sleep("50 millis")
              seen = yield* Effect.promise(() => other.mcp.experimental.tasks.getTask(task.taskId))
            }
            assert.strictEqual(seen.status, "completed", seen.statusMessage)
            return task.taskId
          })
        )
        const { mcp } = yield* connectedOver(yield* servedOn(store))
        assert.strictEqual((yield* Effect.promise(() => mcp.experimental.tasks.getTask(taskId))).status, "completed")
        const result = yield* Effect.promise(() => mcp.experimental.tasks.getTaskResult(taskId, CallToolResultSchema))
        assert.strictEqual(Schema.decodeUnknownSync(Report)(result.structuredContent).sessionId, taskId.split(".")[0])
      })
  )

  it.scopedLive(
    "tasks/cancel cancels the session: stored cancelled, its result says resume_research continues it",
    () =>
      Effect.gen(function* () {
        const s = yield* servedSlowly("200 millis", { noClarify: true })
        const { mcp } = yield* connectedOver(s.url)
        const task = yield* researchAsTask(mcp)
        const cancelled = yield* Effect.promise(() => mcp.experimental.tasks.cancelTask(task.taskId))
        assert.strictEqual(cancelled.status, "cancelled")
        const status = yield* request(`${s.url}/api/sessions/${task.taskId.split(".")[0]}`)
        assert.deepInclude(Schema.decodeUnknownSync(Status)(status.text), { status: "cancelled", running: false })
        const result = yield* Effect.promise(() =>
          mcp.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema)
        )
        assert.isTrue(result.isError)
        assert.include(Schema.decodeUnknownSync(Text)(result.content)[0]?.text, "resume_research")
      })
  )

  it.scopedLive("with a token every request needs it (401, before any session); with it the client gets in", () =>
    Effect.gen(function* () {
      const token = "a-long-random-secret"
      const s = yield* served({}, { token: Redacted.make(token) })
      const refused = yield* post(`${s.url}/mcp`, initialize, accepts)
      assert.strictEqual(refused.status, 401)
      assert.strictEqual(refused.headers.get("www-authenticate"), "Bearer")
      const wrong = yield* post(`${s.url}/mcp`, initialize, { ...accepts, authorization: "Bearer wrong" })
      assert.strictEqual(wrong.status, 401)
      const { mcp } = yield* connectedOver(s.url, { authorization: `Bearer ${token}` })
      assert.isAbove((yield* Effect.promise(() => mcp.listTools())).tools.length, 0)
    })
  )

  it.scopedLive("GET opens the server's stream of an MCP session, DELETE ends the session", () =>
    Effect.gen(function* () {
      const s = yield* served()
      const opened = yield* post(`${s.url}/mcp`, initialize, accepts)
      const session = {
        "mcp-session-id": opened.headers.get("mcp-session-id") ?? "",
        "mcp-protocol-version": "2025-11-25"
      }
      assert.isNotEmpty(session["mcp-session-id"])
      const stream = yield* Effect.promise(async () => {
        const stop = new AbortController()
        const response = await fetch(`${s.url}/mcp`, {
          headers: { ...session, accept: "text/event-stream" },
          signal: stop.signal
        })
        stop.abort()
        return { status: response.status, type: response.headers.get("content-type") }
      })
      assert.deepStrictEqual(stream, { status: 200, type: "text/event-stream" })
      assert.strictEqual((yield* request(`${s.url}/mcp`, { method: "DELETE", headers: session })).status, 200)
      const ended = yield* request(`${s.url}/mcp`, { headers: { ...session, accept: "text/event-stream" } })
      assert.strictEqual(ended.status, 404)
    })
  )

  it.scopedLive("a page elsewhere is refused: a foreign Host on loopback (DNS rebinding), a foreign Origin", () =>
    Effect.gen(function* () {
      const s = yield* served()
      assert.strictEqual(yield* postWithHost(`${s.url}/mcp`, "evil.example", initialize), 403)
      const elsewhere = yield* post(`${s.url}/mcp`, initialize, { ...accepts, origin: "http://evil.example" })
      assert.strictEqual(elsewhere.status, 403)
      const own = yield* post(`${s.url}/mcp`, initialize, { ...accepts, origin: s.url })
      assert.strictEqual(own.status, 200, own.text)
      const noSession = yield* post(`${s.url}/mcp`, { jsonrpc: "2.0", id: 2, method: "ping" }, accepts)
      assert.strictEqual(noSession.status, 400, noSession.text)
    })
  )
})
