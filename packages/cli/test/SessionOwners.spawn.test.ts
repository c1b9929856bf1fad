/**
 * A session belongs to the caller that started it, where `deep-research serve` tells its callers apart (a token for
 * each): on the built `serve --simulate`, another caller cannot list, read, review, ask, export, cancel or delete it,
 * over `/api`, `/v1` and MCP, and is told it does not exist, as for an id that never was; the caller that started it
 * can, after a restart as well. A session no token caller started (one shared token, or the CLI) stays everyone's,
 * and the local CLI sees every session.
 */
import { assert, describe, it } from "@effect/vitest"
import type { Client } from "@modelcontextprotocol/sdk/client/index.js"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import { connectedOver, researchAsTask } from "./McpHttpHarness.js"
import { ensureBuilt } from "./support/built.js"
import { describeRun, run, type Sandbox, sandbox, start } from "./support/builtCli.js"

const alice = "a1c3e5a7c9e1a3c5e7a9c1e3a5c7e9a1a1c3e5a7"
const bob = "b2d4f6b8d0f2b4d6f8b0d2f4b6d8f0b2b2d4f6b8"

/** `serve --simulate` on this sandbox's store with this token (or tokens), until the scope closes. */
const serving = (box: Sandbox, token: string) =>
  Effect.gen(function* () {
    const server = start(box, ["serve", "--simulate", "--no-clarify", "--port", "0"], {
      DEEP_RESEARCH_API_TOKEN: token
    })
    yield* Effect.addFinalizer(() =>
      Effect.promise(() => {
        server.child.kill("SIGTERM")
        return server.done
      })
    )
    for (let waited = 0; waited < 600; waited++) {
      const url = /(http:\/\/127\.0\.0\.1:\d+)\//.exec(server.output().stderr)?.[1]
      if (url !== undefined) return url
      if (server.child.exitCode !== null) break
      yield* Effect.sleep("100 millis")
    }
    const finished = yield* Effect.promise(() => {
      server.child.kill("SIGKILL")
      return server.done
    })
    return yield* Effect.dieMessage(`serve did not start:\n${describeRun(finished)}`)
  })

interface Answer {
  readonly status: number
  readonly text: string
}

/** A request to the API with a caller's token: its status and body. */
const call = (url: string, token: string, method = "GET", body?: unknown) =>
  Effect.promise(async (): Promise<Answer> => {
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

const Started = Schema.parseJson(Schema.Struct({ sessionId: Schema.String }))
const Listed = Schema.parseJson(Schema.Array(Schema.Struct({ id: Schema.String })))
const Status = Schema.parseJson(Schema.Struct({ status: Schema.String }))
const Passages = Schema.parseJson(Schema.Array(Schema.Struct({ sessionId: Schema.String })))
const Completion = Schema.parseJson(Schema.Struct({ id: Schema.String }))

const started = (base: string, token: string, body: Record<string, unknown>) =>
  Effect.map(call(`${base}/api/sessions`, token, "POST", { allowClarification: false, ...body }), (answer) => {
    assert.strictEqual(answer.status, 202, answer.text)
    return Schema.decodeSync(Started)(answer.text).sessionId
  })

const listed = (base: string, token: string) =>
  Effect.map(call(`${base}/api/sessions`, token), (answer) => Schema.decodeSync(Listed)(answer.text).map((s) => s.id))

/** Polls the session's status (as `token`'s caller) until it is one of `wanted`; bounded. */
const settled = (base: string, token: string, id: string, wanted: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    for (let round = 0; round < 900; round++) {
      const status = Schema.decodeSync(Status)((yield* call(`${base}/api/sessions/${id}`, token)).text).status
      if (wanted.includes(status)) return status
      yield* Effect.sleep("200 millis")
    }
    return yield* Effect.dieMessage(`session ${id} never became ${wanted.join(" or ")}`)
  })

/** An MCP tool's result: whether it is an error, and its text. */
const tool = (mcp: Client, name: string, args: Record<string, unknown> = {}) =>
  Effect.map(
    Effect.promise(() => mcp.callTool({ name, arguments: args })),
    (result) => ({
      isError: result.isError === true,
      text: (Array.isArray(result.content) ? result.content : [])
        .map((c: { readonly text?: unknown }) => (typeof c.text === "string" ? c.text : ""))
        .join("\n")
    })
  )

/** Every `/api` request by a session's id, as another caller would send it. */
const requestsOf = (id: string): ReadonlyArray<readonly [string, string, unknown?]> => [
  ["GET", `/api/sessions/${id}`],
  ["GET", `/api/sessions/${id}/events`],
  ["GET", `/api/sessions/${id}/report`],
  ["GET", `/api/sessions/${id}/export?format=json`],
  ["GET", `/api/sessions/${id}/sources`],
  ["GET", `/api/sessions/${id}/answers`],
  ["POST", `/api/sessions/${id}/review`, { action: "approve" }],
  ["POST", `/api/sessions/${id}/answer`, { answer: "Coastal tides." }],
  ["POST", `/api/sessions/${id}/ask`, { question: "What raises the tides?" }],
  ["POST", `/api/sessions/${id}/continue`, { direction: "Tides in estuaries." }],
  ["POST", `/api/sessions/${id}/resume`],
  ["POST", `/api/sessions/${id}/evaluate`],
  ["POST", `/api/sessions/${id}/cancel`],
  ["DELETE", `/api/sessions/${id}`]
]

/** Asserts that `token`'s caller is told, by every door, that the session does not exist. */
const unreachable = (base: string, token: string, mcp: Client, id: string) =>
  Effect.gen(function* () {
    const notFound = `No session with id ${id}`
    for (const [method, path, body] of requestsOf(id)) {
      const answer = yield* call(`${base}${path}`, token, method, body)
      assert.strictEqual(answer.status, 404, `${method} ${path}: ${answer.text}`)
      assert.include(answer.text, notFound, `${method} ${path}`)
    }
    for (const [name, args] of [
      ["get_status", {}],
      ["get_report", {}],
      ["get_answers", {}],
      ["ask_session", { question: "What raises the tides?" }],
      ["continue_research", { direction: "Tides in estuaries." }],
      ["review_plan", { action: "approve" }],
      ["answer_clarification", { answer: "Coastal tides." }],
      ["resume_research", {}],
      ["evaluate_report", {}],
      ["cancel_research", {}],
      ["delete_session", {}]
    ] as const) {
      const result = yield* tool(mcp, name, { sessionId: id, ...args })
      assert.isTrue(result.isError, `${name}: ${result.text}`)
      assert.include(result.text, notFound, name)
    }
    assert.notInclude(yield* listed(base, token), id)
    assert.notInclude((yield* tool(mcp, "list_sessions")).text, id)
  })

describe("a session belongs to the caller that started it, where serve tells its callers apart", () => {
  it.scopedLive(
    "another token's caller reaches none of it by any door, after a restart too; its own caller reaches all of it",
    () =>
      Effect.gen(function* () {
        ensureBuilt()
        const box = sandbox()
        yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(box.dir, { recursive: true, force: true })))
        const tokens = `${alice},${bob}`
        const { reviewed, done, overMcp, bobs } = yield* Effect.scoped(
          Effect.gen(function* () {
            const base = yield* serving(box, tokens)
            const a = (yield* connectedOver(base, { authorization: `Bearer ${alice}` })).mcp
            const b = (yield* connectedOver(base, { authorization: `Bearer ${bob}` })).mcp
            const reviewed = yield* started(base, alice, { question: "How do ocean tides work?", review: true })
            const done = yield* started(base, alice, { question: "Why do tides differ between coasts?" })
            const overMcp = Schema.decodeSync(Started)(
              (yield* tool(a, "start_research", { question: "What are neap tides?", allowClarification: false })).text
            ).sessionId
            const task = yield* researchAsTask(a, "What raises tidal bores?")
            const asTask = /^session (\S+):/.exec(task.statusMessage ?? "")?.[1] ?? ""
            const bobs = yield* started(base, bob, { question: "What are spring tides?" })
            yield* settled(base, alice, reviewed, ["awaiting_review"])
            yield* settled(base, alice, done, ["completed"])
            yield* settled(base, bob, bobs, ["completed"])

            for (const id of [reviewed, done, overMcp, asTask]) yield* unreachable(base, bob, b, id)
            yield* unreachable(base, alice, a, bobs)
            // The library's passages of another caller's sessions are left out.
            const found = yield* call(`${base}/api/library/search?q=tides&limit=50`, bob)
            const sessions = Schema.decodeSync(Passages)(found.text).map((p) => p.sessionId)
            assert.includeMembers(sessions, [bobs])
            assert.notIncludeMembers(sessions, [reviewed, done, overMcp])
            // A /v1 follow-up about another caller's session is no follow-up of it: it is researched anew.
            const chat = yield* call(`${base}/v1/chat/completions`, bob, "POST", {
              model: "deep-research",
              messages: [
                { role: "user", content: "Why do tides differ between coasts?" },
                { role: "assistant", content: `A report.\n\n<!-- deep-research:session=${done} -->` },
                { role: "user", content: "Why do tides differ between coasts?" }
              ]
            })
            assert.strictEqual(chat.status, 200, chat.text)
            assert.notInclude(Schema.decodeSync(Completion)(chat.text).id, done)

            // Alice reaches all of hers, by every door.
            assert.includeMembers(yield* listed(base, alice), [reviewed, done, overMcp, asTask])
            assert.notInclude(yield* listed(base, alice), bobs)
            assert.include((yield* tool(a, "list_sessions")).text, overMcp)
            assert.isFalse((yield* tool(a, "get_status", { sessionId: overMcp })).isError)
            const report = yield* call(`${base}/api/sessions/${done}/export?format=json`, alice)
            assert.strictEqual(report.status, 200, report.text)
            const asked = yield* call(`${base}/api/sessions/${done}/ask`, alice, "POST", {
              question: "Why do tides differ between coasts?"
            })
            assert.strictEqual(asked.status, 200, asked.text)
            return { reviewed, done, overMcp, bobs }
          })
        )

        // Restarted on the same store: the sessions still belong to whoever started them.
        yield* Effect.scoped(
          Effect.gen(function* () {
            const base = yield* serving(box, tokens)
            const a = (yield* connectedOver(base, { authorization: `Bearer ${alice}` })).mcp
            const b = (yield* connectedOver(base, { authorization: `Bearer ${bob}` })).mcp
            for (const id of [reviewed, done, overMcp]) yield* unreachable(base, bob, b, id)
            const reviewing = yield* call(`${base}/api/sessions/${reviewed}/review`, alice, "POST", {
              action: "approve"
            })
            assert.strictEqual(reviewing.status, 202, reviewing.text)
            const cancelled = yield* tool(a, "cancel_research", { sessionId: reviewed })
            assert.isFalse(cancelled.isError, cancelled.text)
            const deleted = yield* call(`${base}/api/sessions/${done}`, alice, "DELETE")
            assert.strictEqual(deleted.status, 204, deleted.text)
            assert.notInclude(yield* listed(base, alice), done)
            assert.include(yield* listed(base, bob), bobs)
          })
        )

        // The machine's owner, on the store itself, sees every session.
        const local = yield* Effect.promise(() => run(box, ["list"]))
        for (const id of [reviewed, overMcp, bobs]) assert.include(local.stdout, id, describeRun(local))
      })
  )

  it.scopedLive("a session no token caller started, or one started on a server with one token, is everyone's", () =>
    Effect.gen(function* () {
      ensureBuilt()
      const box = sandbox()
      yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(box.dir, { recursive: true, force: true })))
      const shared = yield* Effect.scoped(
        Effect.gen(function* () {
          const base = yield* serving(box, alice)
          const mcp = (yield* connectedOver(base, { authorization: `Bearer ${alice}` })).mcp
          const id = yield* started(base, alice, { question: "How do ocean tides work?" })
          yield* settled(base, alice, id, ["completed"])
          assert.include((yield* tool(mcp, "list_sessions")).text, id)
          return id
        })
      )
      // The same store served with a token for each caller: the session has no caller, every caller reaches it.
      const base = yield* serving(box, `${alice},${bob}`)
      for (const token of [alice, bob]) {
        assert.include(yield* listed(base, token), shared)
        const mcp = (yield* connectedOver(base, { authorization: `Bearer ${token}` })).mcp
        assert.isFalse((yield* tool(mcp, "get_status", { sessionId: shared })).isError)
        const report = yield* call(`${base}/api/sessions/${shared}/report`, token)
        assert.strictEqual(report.status, 200, report.text)
      }
      const deleted = yield* call(`${base}/api/sessions/${shared}`, bob, "DELETE")
      assert.strictEqual(deleted.status, 204, deleted.text)
    })
  )
})
