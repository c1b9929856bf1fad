/**
 * What a session's state does not allow, as every surface says it: the HTTP API (409), the MCP tools (a result with
 * isError) and the command line (exit 2) name the state the session is in and what to do, and never call the request
 * invalid input when it was not.
 */
import { Session, SessionStore } from "@deep-research/core"
import { assert, describe, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Mcp from "../src/Mcp.js"
import * as Store from "../src/Store.js"
import { cli, describeRan } from "./support/inProcess.js"
import { Text } from "./McpHarness.js"
import { post, request, seedAwaiting, served, type Served } from "./ServeHarness.js"

const stopped = "dr-stopped-1"
const waiting = "dr-waiting-1"

/** A session cancelled before it had a report, as a stopped server leaves one. */
const seedCancelled = (s: Served) =>
  Effect.gen(function* () {
    const store = yield* SessionStore.SessionStore
    yield* store.save(
      new Session.Session({
        version: Session.currentVersion,
        id: stopped,
        query: "How do tides work?",
        createdAt: 1_700_000_000_000,
        updatedAt: 1_700_000_000_000,
        config: s.resolved.research,
        status: "cancelled",
        phasesCompleted: [],
        rounds: [],
        sources: [],
        metrics: [],
        usage: []
      })
    )
  }).pipe(Effect.provide(Store.storeLayer(s.resolved.storeDir)), Effect.orDie)

const resumeIt = "it is cancelled; resume it to go on from its last checkpoint."
const said = {
  answer: `The session ${stopped} cannot take an answer: ${resumeIt}`,
  evaluate: `The session ${stopped} has no report to evaluate: ${resumeIt}`,
  report: `The session ${stopped} has no report yet: ${resumeIt}`,
  cancel: `The session ${stopped} cannot be cancelled: ${resumeIt}`,
  resume:
    `The session ${waiting} cannot be resumed: it is waiting for an answer to its clarification question; ` +
    "answer the question to go on."
}

const world = Effect.gen(function* () {
  const s = yield* served({ noClarify: true })
  yield* seedCancelled(s)
  yield* seedAwaiting(s, waiting, "Which coast do you mean?")
  return s
})

describe("a state error says the session's state and what to do", () => {
  it.scopedLive("over HTTP, as a 409", () =>
    Effect.gen(function* () {
      const s = yield* world
      const api = `${s.url}/api/sessions`
      const answers = [
        [yield* post(`${api}/${stopped}/answer`, { answer: "The Bay of Fundy" }), said.answer],
        [yield* post(`${api}/${stopped}/evaluate`, {}), said.evaluate],
        [yield* request(`${api}/${stopped}/report`), said.report],
        [yield* post(`${api}/${stopped}/cancel`, {}), said.cancel],
        [yield* post(`${api}/${waiting}/resume`, {}), said.resume]
      ] as const
      for (const [answer, message] of answers) {
        assert.strictEqual(answer.status, 409, answer.text)
        assert.strictEqual(JSON.parse(answer.text).message, message)
      }
    })
  )

  it.scopedLive("over MCP, as a tool's result with isError", () =>
    Effect.gen(function* () {
      const s = yield* world
      const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
      yield* Effect.forkScoped(Mcp.serveRuns(s.runs, serverSide))
      const client = new Client({ name: "deep-research-test", version: "1.0.0" })
      yield* Effect.acquireRelease(
        Effect.promise(() => client.connect(clientSide)),
        () => Effect.promise(() => client.close())
      )
      const calls = [
        ["answer_clarification", { sessionId: stopped, answer: "The Bay of Fundy" }, said.answer],
        ["evaluate_report", { sessionId: stopped }, said.evaluate],
        ["get_report", { sessionId: stopped }, said.report],
        ["cancel_research", { sessionId: stopped }, said.cancel],
        ["resume_research", { sessionId: waiting }, said.resume]
      ] as const
      for (const [name, args, message] of calls) {
        const result = yield* Effect.promise(() => client.callTool({ name, arguments: args }))
        assert.strictEqual(result.isError, true, name)
        assert.strictEqual(Schema.decodeUnknownSync(Text)(result.content)[0]?.text, message)
      }
    })
  )

  it.scopedLive("on the command line, exit 2", () =>
    Effect.gen(function* () {
      const s = yield* world
      const store = ["--store", s.store, "--simulate"]
      const evaluated = yield* Effect.promise(() => cli(["evaluate", stopped, ...store]))
      assert.strictEqual(evaluated.code, 2, describeRan(evaluated))
      assert.include(evaluated.stderr.split("\n"), said.evaluate)
      assert.notInclude(evaluated.stderr, "Invalid input")
      const answered = yield* Effect.promise(() => cli(["resume", stopped, "--answer", "The Bay", ...store]))
      assert.strictEqual(answered.code, 2, describeRan(answered))
      assert.include(answered.stderr.split("\n"), said.answer)
      assert.notInclude(answered.stderr, "Invalid input")
    })
  )
})
