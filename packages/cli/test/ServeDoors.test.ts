/**
 * Every door of `deep-research serve` answers in a sentence, never a 500: a Host or Origin that does not parse as its
 * RFC writes it is a 400 or 403 (on `/api` and `/mcp` alike), a request whose headers or body come too slowly is cut
 * with 408, a client that holds too many connections is refused with 429, an empty JSON-RPC batch gets JSON-RPC's
 * -32600, and a listing carries a question's first 300 characters while the session's status has all of it.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as http from "node:http"
import * as net from "node:net"
import * as Runs from "../src/Runs.js"
import * as Serve from "../src/Serve.js"
import { connectedOver } from "./McpHttpHarness.js"
import { post, request, served } from "./ServeHarness.js"

const accepts = { accept: "application/json, text/event-stream" }

const initialize = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } }
}

/** A request with headers fetch would not send as given (Host, Origin): its status and body. */
const raw = (url: string, method: string, headers: Record<string, string>, body?: unknown) =>
  Effect.async<{ readonly status: number; readonly text: string }>((resume) => {
    const text = body === undefined ? "" : JSON.stringify(body)
    const req = http.request(
      url,
      {
        method,
        agent: false,
        headers: { ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers }
      },
      (res) => {
        let received = ""
        res.setEncoding("utf8").on("data", (chunk: string) => (received += chunk))
        res.on("end", () => resume(Effect.succeed({ status: res.statusCode ?? 0, text: received })))
      }
    )
    req.on("error", (error) => resume(Effect.succeed({ status: 0, text: error.message })))
    req.end(text)
  })

/** What a server answers on a connection that sends `first` and then nothing more, once it closes it. */
const stalled = (url: string, first: string) =>
  Effect.async<string>((resume) => {
    const { hostname, port } = new URL(url)
    const socket = net.connect({ host: hostname, port: Number(port) })
    let received = ""
    socket.setEncoding("utf8").on("data", (chunk: string) => (received += chunk))
    socket.on("connect", () => socket.write(first))
    socket.on("close", () => resume(Effect.succeed(received)))
    socket.on("error", () => undefined)
    return Effect.sync(() => socket.destroy())
  })

const Listed = Schema.parseJson(Schema.Array(Schema.Struct({ id: Schema.String, query: Schema.String })))
const Status = Schema.parseJson(Schema.Struct({ query: Schema.String }))
const SessionId = Schema.parseJson(Schema.Struct({ sessionId: Schema.String }))

describe("serve's doors: the Host and Origin a request gives", () => {
  it.scopedLive("a Host that is not a host and port is a 400 on /api and /mcp, never a 500 nor let through", () =>
    Effect.gen(function* () {
      const s = yield* served()
      const port = new URL(s.url).port
      const hosts = [
        `127.0.0.1:${port}@evil.com`,
        "127.0.0.1:PORT@evil.com",
        `user:pass@127.0.0.1:${port}`,
        `127.0.0.1:${port}/path`,
        "127.0.0.1:99999",
        "[::1",
        "a b"
      ]
      for (const host of hosts) {
        for (const [method, path, body] of [
          ["GET", "/api/sessions", undefined],
          ["POST", "/mcp", initialize]
        ] as const) {
          const answer = yield* raw(`${s.url}${path}`, method, { host, ...accepts }, body)
          assert.strictEqual(answer.status, 400, `${host} ${path}: ${answer.text}`)
          assert.include(answer.text, "The Host header is not a host name and port")
        }
      }
      // A Host that parses and names this machine still gets in.
      assert.strictEqual((yield* raw(`${s.url}/api/sessions`, "GET", { host: `localhost:${port}` })).status, 200)
    })
  )

  it.scopedLive(
    "no Host, or two, is a 400 in a sentence; an Origin that is no origin is a 403 on /api and /v1 too",
    () =>
      Effect.gen(function* () {
        const s = yield* served()
        const { host } = new URL(s.url)
        const close = "Connection: close\r\n\r\n"
        const none = yield* stalled(s.url, `GET /api/sessions HTTP/1.1\r\n${close}`)
        assert.match(none, /^HTTP\/1\.1 400 /)
        assert.include(none, "The Host header is not a host name and port")
        const two = yield* stalled(
          s.url,
          `GET /api/sessions HTTP/1.1\r\nHost: ${host}\r\nHost: evil.example\r\n${close}`
        )
        assert.match(two, /^HTTP\/1\.1 400 /)
        assert.include(two, "The request has more than one Host header")
        for (const path of ["/api/sessions", "/v1/models"]) {
          for (const origin of [`http://evil@${host}`, `http://${host}/page`, "not a url"]) {
            const answer = yield* raw(`${s.url}${path}`, "GET", { origin })
            assert.strictEqual(answer.status, 403, `${path} ${origin}: ${answer.text}`)
            assert.include(answer.text, "The Origin header is not an origin")
          }
          // An origin, another site's or none of its own, is CORS's to judge, as before.
          for (const origin of ["https://elsewhere.example", "null"])
            assert.strictEqual((yield* raw(`${s.url}${path}`, "GET", { origin })).status, 200, `${path} ${origin}`)
        }
      })
  )

  it.scopedLive("an Origin with user info, a path, null or no URL at all is refused on /mcp with 403", () =>
    Effect.gen(function* () {
      const s = yield* served()
      const host = new URL(s.url).host
      for (const origin of [`http://evil@${host}`, `http://${host}/page`, "null", "not a url", `http://${host}#`]) {
        const answer = yield* raw(`${s.url}/mcp`, "POST", { origin, ...accepts }, initialize)
        assert.strictEqual(answer.status, 403, `${origin}: ${answer.text}`)
      }
      // The server's own page is let in.
      assert.strictEqual((yield* raw(`${s.url}/mcp`, "POST", { origin: s.url, ...accepts }, initialize)).status, 200)
    })
  )
})

describe("serve's doors: slow and greedy clients", () => {
  it.scopedLive("a request whose body comes too slowly is answered 408 and its connection closed", () =>
    Effect.gen(function* () {
      const s = yield* served({}, { headersTimeoutMillis: 500, requestTimeoutMillis: 1_000 })
      const { host } = new URL(s.url)
      const answer = yield* stalled(
        s.url,
        `POST /api/sessions HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{`
      )
      assert.match(answer, /^HTTP\/1\.1 408 /)
      // In a sentence, as every other refusal, with the figures.
      assert.include(
        answer,
        '"message":"The request came too slowly: its headers must arrive within 0.5 s and all of it within 1 s."'
      )
    })
  )

  it.scopedLive("a request whose headers come too slowly is answered 408 and its connection closed", () =>
    Effect.gen(function* () {
      const s = yield* served({}, { headersTimeoutMillis: 500, requestTimeoutMillis: 1_000 })
      const answer = yield* stalled(s.url, "GET /api/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
      assert.match(answer, /^HTTP\/1\.1 408 /)
      assert.include(answer, "The request came too slowly")
    })
  )

  it.scopedLive("bytes that are not HTTP, or headers too large, are answered 400 and 431 in a sentence", () =>
    Effect.gen(function* () {
      const s = yield* served()
      const junk = yield* stalled(s.url, "HELLO THERE\r\n\r\n")
      assert.match(junk, /^HTTP\/1\.1 400 /)
      assert.include(junk, '"message":"The request is not HTTP/1.1 this server can read."')
      const large = yield* stalled(
        s.url,
        `GET /api/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`
      )
      assert.match(large, /^HTTP\/1\.1 431 /)
      assert.include(large, "The request's headers are too large.")
    })
  )

  it.scopedLive("a client holding more than its connections is refused with 429 in a sentence", () =>
    Effect.gen(function* () {
      const s = yield* served({}, { maxConnectionsPerClient: 2 })
      const { hostname, port } = new URL(s.url)
      const held = yield* Effect.forEach([1, 2], () =>
        Effect.acquireRelease(
          Effect.async<net.Socket>((resume) => {
            const socket = net.connect({ host: hostname, port: Number(port) }, () => resume(Effect.succeed(socket)))
          }),
          (socket) => Effect.sync(() => socket.destroy())
        )
      )
      assert.lengthOf(held, 2)
      const refused = yield* raw(`${s.url}/api/health`, "GET", {})
      assert.strictEqual(refused.status, 429, refused.text)
      assert.include(refused.text, "more than 2 open connections")
      // Once they are closed, the client gets in again.
      for (const socket of held) socket.destroy()
      let status = 429
      while (status === 429) status = (yield* raw(`${s.url}/api/health`, "GET", {})).status
      assert.strictEqual(status, 200)
    })
  )

  it("the server's defaults are the figures the documentation gives", () => {
    assert.strictEqual(Serve.defaults.headersTimeoutMillis, 10_000)
    assert.strictEqual(Serve.defaults.requestTimeoutMillis, 30_000)
    assert.strictEqual(Serve.defaults.maxConnectionsPerClient, 256)
  })
})

describe("serve's doors: JSON-RPC and listings", () => {
  it.scopedLive("an empty JSON-RPC batch on /mcp is answered with JSON-RPC's Invalid Request (-32600)", () =>
    Effect.gen(function* () {
      const s = yield* served()
      const opened = yield* raw(`${s.url}/mcp`, "POST", accepts, initialize)
      assert.strictEqual(opened.status, 200, opened.text)
      const empty = yield* raw(`${s.url}/mcp`, "POST", accepts, [])
      assert.strictEqual(empty.status, 400, empty.text)
      assert.deepInclude(JSON.parse(empty.text), { jsonrpc: "2.0", id: null })
      assert.strictEqual(JSON.parse(empty.text).error.code, -32600)
    })
  )

  it.scopedLive("a listing (the API's and MCP's) carries a question's first 300 characters; its status all of it", () =>
    Effect.gen(function* () {
      const s = yield* served({ noClarify: true, maxRounds: 1 })
      const question = `How do tides work? ${"And why, in detail, ".repeat(500)}`.trim()
      const created = yield* post(`${s.url}/api/sessions`, { question })
      assert.strictEqual(created.status, 202, created.text)
      const { sessionId } = Schema.decodeUnknownSync(SessionId)(created.text)
      const listed = Schema.decodeUnknownSync(Listed)((yield* request(`${s.url}/api/sessions`)).text)
      const entry = listed.find((session) => session.id === sessionId)
      assert.strictEqual(entry?.query, `${question.slice(0, Runs.listedQuestionLength)}…`)
      const status = Schema.decodeUnknownSync(Status)((yield* request(`${s.url}/api/sessions/${sessionId}`)).text)
      assert.strictEqual(status.query, question)
      const { mcp } = yield* connectedOver(s.url)
      const result = yield* Effect.promise(() => mcp.callTool({ name: "list_sessions", arguments: {} }))
      const sessions = Schema.decodeUnknownSync(Schema.Struct({ sessions: Listed.to }))(result.structuredContent)
      assert.strictEqual(sessions.sessions.find((session) => session.id === sessionId)?.query.length, 301)
    })
  )
})
