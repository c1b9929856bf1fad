import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as http from "node:http"
import OpenAI from "openai"
import { tokenMatches } from "../src/http/Callers.js"
import { program } from "../src/main.js"
import * as Serve from "../src/Serve.js"
import { post, request, type Served, served, settled } from "./ServeHarness.js"
import { storedFiles } from "./support/storedSession.js"

const token = "dr-test-token-5b1c0e7a9f3d4e21c86a07b2"
const bearer = { authorization: `Bearer ${token}` }

/** A raw request, for what fetch will not send: another Host header, a chunked body. */
const raw = (url: string, options: { method?: string; headers?: Record<string, string>; chunks?: Array<string> }) =>
  Effect.async<{ status: number; text: string }>((resume) => {
    const req = http.request(url, { method: options.method ?? "GET", headers: options.headers ?? {} }, (res) => {
      let text = ""
      res.on("data", (chunk) => (text += String(chunk)))
      res.on("end", () => resume(Effect.succeed({ status: res.statusCode ?? 0, text })))
    })
    req.on("error", () => resume(Effect.succeed({ status: 0, text: "connection closed" })))
    for (const chunk of options.chunks ?? []) req.write(chunk)
    req.end()
  })

/**
 * A request whose body is sent only in part (the rest never comes): its answer, which a server can give only without
 * waiting for the rest of the body.
 */
const answeredBeforeItsBody = (url: string, headers: Record<string, string>, part: string) =>
  Effect.async<{ status: number; text: string }>((resume) => {
    const req = http.request(url, { method: "POST", headers }, (res) => {
      let text = ""
      res.on("data", (chunk) => (text += String(chunk)))
      res.on("end", () => {
        req.destroy()
        resume(Effect.succeed({ status: res.statusCode ?? 0, text }))
      })
    })
    req.on("error", () => {})
    req.write(part)
    return Effect.sync(() => req.destroy())
  })

describe("deep-research serve: who may call it", () => {
  it.effect("listens on loopback only unless a token is set, and says so", () =>
    Effect.sync(() => {
      for (const host of ["127.0.0.1", "localhost", "::1", "[::1]", "127.0.0.2"]) {
        assert.isUndefined(Serve.refusal({ host, token: undefined }), host)
      }
      for (const host of ["0.0.0.0", "::", "192.168.1.20", "example.org"]) {
        assert.include(Serve.refusal({ host, token: undefined }) ?? "", "DEEP_RESEARCH_API_TOKEN", host)
        assert.isUndefined(Serve.refusal({ host, token: Redacted.make(token) }), host)
      }
    })
  )

  it.effect("a token shorter than 32 characters is refused, saying how to make one", () =>
    Effect.sync(() => {
      for (const host of ["127.0.0.1", "0.0.0.0"]) {
        const refused = Serve.refusal({ host, token: Redacted.make("abc") }) ?? ""
        assert.include(refused, "DEEP_RESEARCH_API_TOKEN is 3 characters long", host)
        assert.include(refused, "openssl rand -hex 32", host)
        assert.isDefined(Serve.refusal({ host, token: Redacted.make(token.slice(0, 31)) }), host)
        assert.isUndefined(Serve.refusal({ host, token: Redacted.make(token.slice(0, 32)) }), host)
      }
    })
  )

  it.live("`serve --host 0.0.0.0` without a token refuses to start (exit 2)", () =>
    Effect.gen(function* () {
      const before = process.env["DEEP_RESEARCH_API_TOKEN"]
      delete process.env["DEEP_RESEARCH_API_TOKEN"]
      const said: Array<string> = []
      const write = process.stderr.write.bind(process.stderr)
      process.stderr.write = (chunk: string | Uint8Array) => {
        said.push(String(chunk))
        return true
      }
      const code = yield* program(["serve", "--host", "0.0.0.0", "--port", "0", "--simulate"]).pipe(
        Effect.ensuring(
          Effect.sync(() => {
            process.stderr.write = write
            if (before !== undefined) process.env["DEEP_RESEARCH_API_TOKEN"] = before
          })
        )
      )
      assert.strictEqual(code, 2)
      assert.include(said.join(""), "deep-research serve listens on 0.0.0.0, which other machines can reach")
      assert.include(said.join(""), "set DEEP_RESEARCH_API_TOKEN")
    })
  )

  it.effect("a CORS origin is read as a browser sends it; what is not one is refused, not left never to match", () =>
    Effect.sync(() => {
      assert.strictEqual(Serve.originOf("https://app.example"), "https://app.example")
      assert.strictEqual(Serve.originOf("HTTPS://App.Example:443/"), "https://app.example")
      assert.strictEqual(Serve.originOf("http://localhost:3000"), "http://localhost:3000")
      for (const bad of ["notaurl", "*", "https://app.example/path", "https://user@app.example", "ftp://x.example"]) {
        assert.isUndefined(Serve.originOf(bad), bad)
      }
    })
  )

  it.effect("tokens are compared whole: a prefix, a longer one or an empty one does not match", () =>
    Effect.sync(() => {
      assert.isTrue(tokenMatches(token, token))
      assert.isFalse(tokenMatches(token.slice(0, -1), token))
      assert.isFalse(tokenMatches(`${token}x`, token))
      assert.isFalse(tokenMatches("", token))
      assert.isFalse(tokenMatches("", ""))
    })
  )

  it.scopedLive("with a token, the API and /v1 need it; health, the page and the docs do not", () =>
    Effect.gen(function* () {
      const s = yield* served({ noClarify: true }, { token: Redacted.make(token) })
      const none = yield* request(`${s.url}/api/sessions`)
      assert.strictEqual(none.status, 401)
      assert.strictEqual(none.headers.get("x-content-type-options"), "nosniff")
      const page = yield* request(`${s.url}/`)
      assert.include(page.headers.get("content-security-policy") ?? "", "script-src 'self'")
      const wrong = yield* request(`${s.url}/api/sessions`, { headers: { authorization: "Bearer nope" } })
      assert.strictEqual(wrong.status, 401)
      // A wrong token is told so (not that one is missing), as RFC 6750's invalid_token.
      assert.include(JSON.parse(wrong.text).message, "is not this server's")
      assert.include(JSON.parse(none.text).message, "needs its API token")
      assert.strictEqual((yield* request(`${s.url}/api/sessions`, { headers: bearer })).status, 200)
      assert.strictEqual((yield* post(`${s.url}/api/sessions`, { question: "x?" })).status, 401)
      assert.strictEqual((yield* request(`${s.url}/v1/models`)).status, 401)
      for (const path of ["/api/health", "/", "/assets/app.js", "/openapi.json", "/docs"]) {
        assert.strictEqual((yield* request(`${s.url}${path}`)).status, 200, path)
      }
      const models = yield* Effect.promise(() =>
        new OpenAI({ baseURL: `${s.url}/v1`, apiKey: token, maxRetries: 0 }).models.list()
      )
      assert.strictEqual(models.data[0]?.id, "deep-research")
      const spec = JSON.parse((yield* request(`${s.url}/openapi.json`)).text)
      assert.deepStrictEqual(spec.components.securitySchemes.bearer, { type: "http", scheme: "bearer" })
    })
  )

  it.scopedLive("with a token, a body sent without it is refused before it is read", () =>
    Effect.gen(function* () {
      const s = yield* served({ noClarify: true }, { token: Redacted.make(token) })
      const headers = { "content-type": "application/json", "content-length": "100000" }
      for (const path of ["/api/sessions", "/v1/chat/completions", "/api/sessions/dr-x/answer", "/api/nothing"]) {
        for (const authorization of [undefined, "Bearer nope"]) {
          const given = authorization === undefined ? headers : { ...headers, authorization }
          const refused = yield* answeredBeforeItsBody(`${s.url}${path}`, given, '{"question": "')
          assert.strictEqual(refused.status, 401, path)
          const body = JSON.parse(refused.text)
          const message = path.startsWith("/v1") ? body.error.message : body.message
          assert.strictEqual(
            message,
            authorization === undefined
              ? "This server needs its API token: Authorization: Bearer <token>"
              : "The API token sent is not this server's: send the one it was given (DEEP_RESEARCH_API_TOKEN) as " +
                  "Authorization: Bearer <token>"
          )
        }
      }
      assert.deepStrictEqual(yield* s.runs.list, [])
      // With the token, the same body is read and taken.
      assert.strictEqual((yield* post(`${s.url}/api/sessions`, { question: "Tides?" }, bearer)).status, 202)
    })
  )

  it.scopedLive("without a token, a request naming another host (DNS rebinding) is refused", () =>
    Effect.gen(function* () {
      const s = yield* served({ noClarify: true })
      const port = new URL(s.url).port
      const evil = yield* raw(`${s.url}/api/sessions`, { headers: { host: `rebound.example:${port}` } })
      assert.strictEqual(evil.status, 403)
      const local = yield* raw(`${s.url}/api/sessions`, { headers: { host: `localhost:${port}` } })
      assert.strictEqual(local.status, 200)
    })
  )

  it.scopedLive("CORS is off unless origins are given, and then only for them", () =>
    Effect.gen(function* () {
      const preflight = (url: string, origin: string) =>
        request(`${url}/api/sessions`, {
          method: "OPTIONS",
          headers: { origin, "access-control-request-method": "POST", "access-control-request-headers": "content-type" }
        })
      const closed = yield* served({ noClarify: true })
      const none = yield* preflight(closed.url, "https://app.example")
      assert.isNull(none.headers.get("access-control-allow-origin"))
      const get = yield* request(`${closed.url}/api/sessions`, { headers: { origin: "https://app.example" } })
      assert.isNull(get.headers.get("access-control-allow-origin"))

      const open = yield* served({ noClarify: true }, { corsOrigins: ["https://app.example"] })
      const allowed = yield* preflight(open.url, "https://app.example")
      assert.strictEqual(allowed.headers.get("access-control-allow-origin"), "https://app.example")
      const other = yield* preflight(open.url, "https://other.example")
      assert.notStrictEqual(other.headers.get("access-control-allow-origin"), "https://other.example")
    })
  )
})

describe("deep-research serve: bodies", () => {
  it.scopedLive("a body that does not match its schema is a 400 saying, in a sentence, which field and why", () =>
    Effect.gen(function* () {
      const s = yield* served({ noClarify: true })
      const cases: Array<[unknown, string, string]> = [
        [{}, "question", "'question' is required."],
        [{ question: "" }, "question", "'question': must not be empty."],
        [{ question: " \n\t" }, "question", "'question': must not be empty."],
        [{ question: 7 }, "question", "'question': Expected string, actual 7."],
        [{ question: "Tides?", maxRounds: "three" }, "maxRounds", `'maxRounds': Expected number, actual "three".`],
        [{ question: "Tides?", maxRounds: 0 }, "maxRounds", "'maxRounds': Expected a positive number, actual 0."],
        [{ question: "Tides?", budgetUsd: -1 }, "budgetUsd", "'budgetUsd': Expected a positive number, actual -1."],
        [{ question: "Tides?", maxRound: 2 }, "maxRound", "'maxRound' is unexpected, expected: "]
      ]
      for (const [body, field, message] of cases) {
        const response = yield* post(`${s.url}/api/sessions`, body)
        assert.strictEqual(response.status, 400, JSON.stringify(body))
        const parsed = JSON.parse(response.text)
        assert.strictEqual(parsed._tag, "HttpApiDecodeError")
        assert.deepInclude(
          parsed.issues.map((issue: { path: Array<string> }) => issue.path[0]),
          field
        )
        // The sentence, not Schema's tree of the whole payload.
        assert.isTrue(parsed.message.startsWith(message), `${parsed.message} starts with ${message}`)
        assert.notInclude(parsed.message, "└─")
      }
      const notJson = yield* request(`${s.url}/api/sessions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "{question:"
      })
      assert.strictEqual(notJson.status, 400)
      assert.deepInclude(JSON.parse(notJson.text), { _tag: "InvalidJson" })
      assert.match(JSON.parse(notJson.text).message, /^The request body is not valid JSON: /)
      const notSaidJson = yield* request(`${s.url}/api/sessions`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: JSON.stringify({ question: "Tides?" })
      })
      assert.strictEqual(notSaidJson.status, 415)
      assert.include(JSON.parse(notSaidJson.text).message, "Content-Type: application/json")
      // For /v1, the same refusals in the shape OpenAI clients read.
      const chatNotJson = yield* request(`${s.url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "{model:"
      })
      assert.strictEqual(chatNotJson.status, 400)
      assert.deepInclude(JSON.parse(chatNotJson.text).error, { type: "invalid_request_error", param: null })
      assert.match(JSON.parse(chatNotJson.text).error.message, /^The request body is not valid JSON: /)
      assert.deepStrictEqual(yield* s.runs.list, [], "no session was started")
      // Every field at fault is said, not the first only.
      const several = yield* post(`${s.url}/api/sessions`, { question: " ", maxRounds: 0 })
      assert.strictEqual(
        JSON.parse(several.text).message,
        "'question': must not be empty; 'maxRounds': Expected a positive number, actual 0."
      )
      // A value of none of a field's choices names them all, not the first.
      const format = yield* request(`${s.url}/api/sessions/dr-any/report?format=pdf`)
      assert.strictEqual(format.status, 400)
      assert.strictEqual(
        JSON.parse(format.text).message,
        `'format': Expected "markdown" | "html" | "fragment", actual "pdf".`
      )
      // A question or an answer is trimmed, as the CLI and the MCP server trim it: a client's newline is no error.
      const padded = yield* post(`${s.url}/api/sessions`, { question: "  How do tides work?\n" })
      assert.strictEqual(padded.status, 202, padded.text)
      const { sessionId } = JSON.parse(padded.text)
      yield* settled(s.url, sessionId)
      assert.strictEqual((yield* s.runs.load(sessionId)).query, "How do tides work?")
    })
  )

  it.scopedLive("a path nobody serves is a JSON 404; a method a path does not take a 405 naming those it takes", () =>
    Effect.gen(function* () {
      const s = yield* served({ noClarify: true })
      const missing = yield* request(`${s.url}/api/nothing?x=1`)
      assert.strictEqual(missing.status, 404)
      assert.deepStrictEqual(JSON.parse(missing.text), {
        _tag: "NotFound",
        message: "Nothing is served at GET /api/nothing."
      })
      const cases: Array<[string, string, string]> = [
        ["PUT", "/api/sessions", "GET, HEAD, POST"],
        ["PATCH", "/api/sessions/dr-1", "DELETE, GET, HEAD"],
        ["GET", "/api/sessions/dr-1/cancel", "POST"],
        ["POST", "/", "GET, HEAD"],
        ["DELETE", "/openapi.json", "GET, HEAD"]
      ]
      for (const [method, path, allow] of cases) {
        const response = yield* request(`${s.url}${path}`, { method })
        assert.strictEqual(response.status, 405, `${method} ${path}`)
        assert.strictEqual(response.headers.get("allow"), allow)
        assert.strictEqual(JSON.parse(response.text)._tag, "MethodNotAllowed")
        assert.include(JSON.parse(response.text).message, method)
      }
      const chat = yield* request(`${s.url}/v1/chat/completions`)
      assert.strictEqual(chat.status, 405)
      assert.strictEqual(chat.headers.get("allow"), "POST")
      assert.deepInclude(JSON.parse(chat.text).error, { type: "invalid_request_error" })
      const nowhere = yield* request(`${s.url}/v1/embeddings`, { method: "POST" })
      assert.strictEqual(nowhere.status, 404)
      assert.strictEqual(JSON.parse(nowhere.text).error.message, "Nothing is served at POST /v1/embeddings.")
    })
  )

  it.scopedLive("a body nested however deep is a 400 saying so, on /api and /v1", () =>
    Effect.gen(function* () {
      const s = yield* served({ noClarify: true })
      const deep = (levels: number) => `${"[".repeat(levels)}${"]".repeat(levels)}`
      for (const levels of [65, 3_000, 100_000]) {
        const bodies: Array<[string, string]> = [
          ["/api/sessions", `{"question": ${deep(levels)}}`],
          ["/v1/chat/completions", `{"model": "deep-research", "messages": ${deep(levels)}}`]
        ]
        for (const [path, body] of bodies) {
          const response = yield* request(`${s.url}${path}`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body
          })
          assert.strictEqual(response.status, 400, `${path}, ${levels} levels: ${response.text.slice(0, 200)}`)
          const parsed = JSON.parse(response.text)
          const message: string = path.startsWith("/v1") ? parsed.error.message : parsed.message
          assert.strictEqual(message, "The request body is nested deeper than 64 levels of arrays and objects.")
        }
      }
      // Nesting in strings is text, not depth.
      const bracketed = yield* post(`${s.url}/api/sessions`, { question: `How deep is ${deep(100)}?` })
      assert.strictEqual(bracketed.status, 202, bracketed.text)
    })
  )

  it.scopedLive("an error quotes a short excerpt of what was sent, never the whole body", () =>
    Effect.gen(function* () {
      const s = yield* served({ noClarify: true }, { maxBodyBytes: 1024 * 1024 })
      const big = "x".repeat(200_000)
      const keys = Object.fromEntries(Array.from({ length: 5_000 }, (_, i) => [`field${i}`, i]))
      const bodies: Array<[string, unknown]> = [
        ["/api/sessions", { question: [big] }],
        ["/api/sessions", { question: "Tides?", maxRounds: big }],
        ["/api/sessions", { question: "Tides?", ...keys }],
        ["/v1/chat/completions", { model: "deep-research", messages: [{ role: big, content: [big] }] }],
        ["/v1/chat/completions", { model: big, messages: [{ role: "user", content: "Tides?" }] }]
      ]
      for (const [path, body] of bodies) {
        const response = yield* post(`${s.url}${path}`, body)
        assert.include([400, 404], response.status, response.text.slice(0, 200))
        assert.isBelow(response.text.length, 8_000, `${path}: ${response.text.slice(0, 300)}`)
      }
      const said = JSON.parse((yield* post(`${s.url}/api/sessions`, { question: "Tides?", maxRounds: big })).text)
      assert.match(said.message, /^'maxRounds': Expected number, actual "x{20,}…\.$/, said.message)
    })
  )

  it.scopedLive("a body over the limit is a 413; one streamed without a length a 411", () =>
    Effect.gen(function* () {
      const s = yield* served({ noClarify: true }, { maxBodyBytes: 1024 })
      const big = JSON.stringify({ question: "x".repeat(2000) })
      assert.strictEqual((yield* post(`${s.url}/api/sessions`, JSON.parse(big))).status, 413)
      const chunked = yield* raw(`${s.url}/api/sessions`, {
        method: "POST",
        headers: { "content-type": "application/json", "transfer-encoding": "chunked" },
        chunks: [big.slice(0, 900), big.slice(900)]
      })
      assert.strictEqual(chunked.status, 411)
      assert.strictEqual((yield* post(`${s.url}/api/sessions`, { question: "How do tides work?" })).status, 202)
    })
  )
})

/** The text of each file a session left in the store. */
const storedFilesOf = (s: Served, sessionId: string): Record<string, string> =>
  storedFiles(s.resolved.storeDir, sessionId)

describe("deep-research serve: secrets", () => {
  it.scopedLive("a question holding the token or a key of the environment is kept and answered redacted", () =>
    Effect.gen(function* () {
      // A key of no vendor's shape (a gateway's): only its value, read from the environment, can find it.
      const key = "gateway-key-1f9c2b7d4e6a"
      const s = yield* served({ noClarify: true }, { token: Redacted.make(token) }, { OPENAI_API_KEY: key })
      assert.isTrue(s.resolved.simulate)
      const question = `Why would ${token} or ${key} be a secret?`
      const started = yield* post(`${s.url}/api/sessions`, { question }, bearer)
      assert.strictEqual(started.status, 202, started.text)
      const id: string = JSON.parse(started.text).sessionId
      yield* settled(s.url, id, bearer)
      const files = storedFilesOf(s, id)
      assert.include(files["session.json"], "Why would [redacted] or [redacted] be a secret?")
      assert.include(files["events.jsonl"], "[redacted]")
      const answers = {
        list: (yield* request(`${s.url}/api/sessions`, { headers: bearer })).text,
        status: (yield* request(`${s.url}/api/sessions/${id}`, { headers: bearer })).text,
        events: (yield* request(`${s.url}/api/sessions/${id}/events`, { headers: bearer })).text
      }
      assert.include(answers.status, "Why would [redacted] or [redacted] be a secret?")
      for (const [where, text] of Object.entries({ ...files, ...answers })) {
        assert.notInclude(text, token, `${where}: ${text.slice(0, 3000)}`)
        assert.notInclude(text, key, where)
      }
    })
  )

  it.scopedLive("no key or token appears in any response, event or log line", () =>
    Effect.gen(function* () {
      const lines: Array<string> = []
      const write = process.stderr.write.bind(process.stderr)
      yield* Effect.acquireRelease(
        Effect.sync(() => {
          process.stderr.write = (chunk: string | Uint8Array) => {
            lines.push(String(chunk))
            return true
          }
        }),
        () => Effect.sync(() => void (process.stderr.write = write))
      )
      const s = yield* served({}, { token: Redacted.make(token) })
      const started = JSON.parse(
        (yield* post(`${s.url}/api/sessions`, { question: "How do tides work?" }, bearer)).text
      )
      const id: string = started.sessionId
      yield* settled(s.url, id, bearer)
      const texts: Array<string> = []
      for (const path of [
        "/api/sessions",
        `/api/sessions/${id}`,
        `/api/sessions/${id}/events`,
        `/api/sessions/${id}/report`,
        `/api/sessions/${id}/report?format=html`,
        `/api/sessions/${id}/sources`,
        "/openapi.json",
        "/v1/models"
      ]) {
        texts.push((yield* request(`${s.url}${path}`, { headers: bearer })).text)
      }
      texts.push((yield* request(`${s.url}/api/sessions`)).text)
      const all = [...texts, ...lines].join("\n")
      assert.include(all, "How do tides work?", "the responses were read")
      // The simulated vendors' keys are what this run used; the token is the server's own.
      for (const secret of [token, "sk-simulated", "sk-ant-simulated", "tvly-simulated"]) {
        assert.notInclude(all, secret)
      }
    })
  )
})
