/**
 * A session the store cannot keep is not accepted, and the client is told why: `deep-research serve` answers a 503
 * naming the store's failure in one sentence, on `/api/sessions`, on `/v1/chat/completions` (in OpenAI's shape) and to
 * MCP's `start_research`, rather than a bare 500. The store here fails as a disk does when the sessions folder cannot
 * take a new folder (its path is a file).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as Store from "../src/Store.js"
import { connectedOver } from "./McpHttpHarness.js"
import { post, request, served } from "./ServeHarness.js"

/** A server whose store cannot make a session's folder. */
const servedOverBrokenStore = Effect.gen(function* () {
  const s = yield* served({ noClarify: true })
  const sessions = Store.sessionsDirectory(s.resolved)
  fs.rmSync(sessions, { recursive: true, force: true })
  fs.writeFileSync(sessions, "not a folder")
  return { ...s, sessions }
})

describe("deep-research serve, a store that cannot keep a new session", () => {
  it.scopedLive("POST /api/sessions answers 503 with a sentence naming the store's failure", () =>
    Effect.gen(function* () {
      const s = yield* servedOverBrokenStore
      const response = yield* post(`${s.url}/api/sessions`, { question: "How do tides work?" })
      assert.strictEqual(response.status, 503, response.text)
      const body: unknown = JSON.parse(response.text)
      assert.deepInclude(body, { _tag: "ServiceUnavailable" })
      const message = String(Reflect.get(Object(body), "message"))
      assert.match(message, /^The session was not accepted: the session store could not keep it \(.+\)\.$/)
      assert.include(message, s.sessions)
      assert.include(message.toLowerCase(), "not a directory")
      assert.strictEqual((yield* request(`${s.url}/api/health`)).status, 200)
    })
  )

  it.scopedLive("/v1/chat/completions answers 503 in OpenAI's shape, with the same sentence", () =>
    Effect.gen(function* () {
      const s = yield* servedOverBrokenStore
      const response = yield* post(`${s.url}/v1/chat/completions`, {
        model: "deep-research",
        messages: [{ role: "user", content: "How do tides work?" }]
      })
      assert.strictEqual(response.status, 503, response.text)
      const error: unknown = Reflect.get(Object(JSON.parse(response.text)), "error")
      assert.deepInclude(error, { type: "server_error" })
      assert.match(String(Reflect.get(Object(error), "message")), /^The session was not accepted: the session store/)
    })
  )

  it.scopedLive("MCP's start_research answers an error with the same sentence, and no session id", () =>
    Effect.gen(function* () {
      const s = yield* servedOverBrokenStore
      const { mcp } = yield* connectedOver(s.url)
      const result = yield* Effect.promise(() =>
        mcp.callTool({ name: "start_research", arguments: { question: "How do tides work?" } })
      )
      assert.isTrue(result.isError)
      const text = JSON.stringify(result.content)
      assert.include(text, "The session was not accepted: the session store could not keep it")
      assert.notInclude(text, "sessionId")
    })
  )
})
