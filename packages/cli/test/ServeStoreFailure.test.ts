/**
 * A session the store cannot keep is not accepted, and the client is told why: `deep-research serve` answers a 503
 * naming the store's failure in one sentence, on `/api/sessions`, on `/v1/chat/completions` (in OpenAI's shape) and to
 * MCP's `start_research`, rather than a bare 500. The store here is refused every new session by the database itself
 * (a trigger that fails as a full disk does); `StoreDurability.spawn.test.ts` fills a real disk.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import Database from "libsql"
import * as Store from "../src/Store.js"
import { connectedOver } from "./McpHttpHarness.js"
import { post, request, served } from "./ServeHarness.js"

/** What the database says when it refuses a session. */
const refusal = "database or disk is full"

/** A server whose database refuses every new session. */
const servedOverBrokenStore = Effect.gen(function* () {
  const s = yield* served({ noClarify: true })
  const db = new Database(Store.databaseFile(s.resolved.storeDir))
  db.exec(
    `CREATE TRIGGER refuse_sessions BEFORE INSERT ON deep_research_sessions BEGIN SELECT RAISE(FAIL, '${refusal}'); END`
  )
  db.close()
  return s
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
      assert.include(message, refusal)
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
