import { assert, describe, it } from "@effect/vitest"
import { Ajv } from "ajv"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js"
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Either from "effect/Either"
import * as Logger from "effect/Logger"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import * as CliConfig from "../src/CliConfig.js"
import * as Mcp from "../src/Mcp.js"
import { connected, Text } from "./McpHarness.js"
import type * as Runs from "../src/Runs.js"

const Started = Schema.parseJson(Schema.Struct({ sessionId: Schema.String, status: Schema.String }))
const Listed = Schema.parseJson(
  Schema.Struct({
    sessions: Schema.Array(Schema.Struct({ id: Schema.String, status: Schema.String, query: Schema.String }))
  })
)

/** A value inside `levels` arrays. */
const nested = (levels: number): unknown => {
  let value: unknown = "Tides?"
  for (let level = 0; level < levels; level++) value = [value]
  return value
}

describe("the MCP server", () => {
  it.scopedLive("each tool says what it may do: read-only, destructive, idempotent, reaching the web", () =>
    Effect.gen(function* () {
      const mcp = yield* connected({})
      // The SDK's client checks the answer against MCP's own schema of a tool list, annotations included.
      const { tools } = yield* Effect.promise(() => mcp.client.listTools())
      const named = (hint: (annotations: NonNullable<(typeof tools)[number]["annotations"]>) => boolean | undefined) =>
        tools.filter((tool) => tool.annotations !== undefined && hint(tool.annotations) === true).map((t) => t.name)
      for (const tool of tools) {
        assert.isString(tool.title, tool.name)
        assert.strictEqual(tool.annotations?.title, tool.title, tool.name)
        // MCP's defaults (destructive, open world) are never left to stand.
        assert.isBoolean(tool.annotations?.readOnlyHint, tool.name)
        assert.isBoolean(tool.annotations?.openWorldHint, tool.name)
        if (tool.annotations?.readOnlyHint === false) {
          assert.isBoolean(tool.annotations.destructiveHint, tool.name)
          assert.isBoolean(tool.annotations.idempotentHint, tool.name)
        }
      }
      assert.deepStrictEqual(
        named((a) => a.readOnlyHint),
        ["get_status", "get_report", "list_sessions", "get_answers"]
      )
      assert.deepStrictEqual(
        named((a) => a.readOnlyHint === false && a.destructiveHint),
        ["delete_session", "evaluate_report"]
      )
      assert.deepStrictEqual(
        named((a) => a.openWorldHint),
        ["research", "start_research", "answer_clarification", "review_plan", "resume_research", "continue_research"]
      )
      assert.deepStrictEqual(
        named((a) => a.readOnlyHint === false && a.idempotentHint),
        ["cancel_research", "delete_session"]
      )
    })
  )

  it.scopedLive(
    "a tool that answers with data gives it as structuredContent, in the shape its outputSchema publishes",
    () =>
      Effect.gen(function* () {
        const mcp = yield* connected({})
        const { tools } = yield* Effect.promise(() => mcp.client.listTools())
        // Ajv, not the server's own Schemas, reads each answer against what the tool list published.
        const ajv = new Ajv({ strict: false, allErrors: true })
        const validators = new Map(
          tools.flatMap((tool) =>
            tool.outputSchema === undefined ? [] : [[tool.name, ajv.compile(tool.outputSchema)]]
          )
        )
        assert.deepStrictEqual(
          [...validators.keys()],
          [
            "research",
            "start_research",
            "get_status",
            "list_sessions",
            "answer_clarification",
            "review_plan",
            "cancel_research",
            "resume_research",
            "delete_session",
            "continue_research"
          ]
        )
        const checked: Array<string> = []
        const callChecked = (name: string, args: Record<string, unknown>) =>
          Effect.promise(() => mcp.client.callTool({ name, arguments: args })).pipe(
            Effect.map((result) => {
              assert.notStrictEqual(result.isError, true, `${name}: ${JSON.stringify(result.content)}`)
              const validate = validators.get(name)!
              assert.isTrue(validate(result.structuredContent), `${name}: ${ajv.errorsText(validate.errors)}`)
              // The same data as text, for clients that read only the text.
              const text = Schema.decodeUnknownSync(Text)(result.content)[0]?.text ?? ""
              assert.deepStrictEqual(JSON.parse(text), result.structuredContent, name)
              checked.push(name)
              return result.structuredContent as { readonly [key: string]: unknown }
            })
          )
        const started = yield* callChecked("start_research", { question: "How do tides work?", maxRounds: 1 })
        const sessionId = String(started["sessionId"])
        yield* callChecked("get_status", { sessionId })
        yield* callChecked("cancel_research", { sessionId })
        yield* callChecked("resume_research", { sessionId })
        // The resumed run finishes; then its status has a report, and the list has the session.
        let status = yield* callChecked("get_status", { sessionId })
        while (status["status"] === "running" || status["status"] === "queued") {
          yield* Effect.sleep("50 millis")
          status = yield* callChecked("get_status", { sessionId })
        }
        assert.strictEqual(status["status"], "completed")
        const listed = yield* callChecked("list_sessions", {})
        assert.include(JSON.stringify(listed["sessions"]), sessionId)
        // After the report: a follow-up answered from its sources and kept in its thread, then a continuation.
        const asked = yield* Effect.promise(() =>
          mcp.client.callTool({
            name: "ask_session",
            arguments: { sessionId, question: "What do the sources say on tides?" }
          })
        )
        assert.notStrictEqual(asked.isError, true, JSON.stringify(asked.content))
        assert.match(Schema.decodeUnknownSync(Text)(asked.content)[0]?.text ?? "", /\[\d+\]/)
        const thread = yield* Effect.promise(() =>
          mcp.client.callTool({ name: "get_answers", arguments: { sessionId } })
        )
        assert.include(
          Schema.decodeUnknownSync(Text)(thread.content)[0]?.text ?? "",
          "Q1: What do the sources say on tides?"
        )
        yield* callChecked("continue_research", { sessionId, direction: "spring tides", rounds: 1 })
        status = yield* callChecked("get_status", { sessionId })
        while (status["status"] === "running" || status["status"] === "queued") {
          yield* Effect.sleep("50 millis")
          status = yield* callChecked("get_status", { sessionId })
        }
        assert.strictEqual(status["status"], "completed")
        yield* callChecked("delete_session", { sessionId })
        assert.includeMembers(checked, [
          "start_research",
          "get_status",
          "cancel_research",
          "resume_research",
          "list_sessions",
          "delete_session",
          "continue_research"
        ])
        // A refusal is a result with isError and no structured content, which the schema does not cover.
        const refused = yield* Effect.promise(() =>
          mcp.client.callTool({ name: "answer_clarification", arguments: { sessionId, answer: "Tidal range" } })
        )
        assert.strictEqual(refused.isError, true)
        assert.isUndefined(refused.structuredContent)
        // research's text is its report, which its structured content carries too, with the sources.
        const researched = yield* Effect.promise(() =>
          mcp.client.callTool({ name: "research", arguments: { question: "How do tides work?", maxRounds: 1 } })
        )
        const validate = validators.get("research")!
        assert.isTrue(validate(researched.structuredContent), ajv.errorsText(validate.errors))
        const report = Schema.decodeUnknownSync(Text)(researched.content)[0]?.text
        assert.strictEqual(report, Reflect.get(researched.structuredContent ?? {}, "report"))
      })
  )

  it.scopedLive("an unknown tool is a protocol error (invalid params); arguments a tool refuses are its result", () =>
    Effect.gen(function* () {
      const mcp = yield* connected({})
      const unknown = yield* Effect.flip(
        Effect.tryPromise(() => mcp.client.callTool({ name: "start_reserch", arguments: { question: "Tides?" } }))
      )
      assert.instanceOf(unknown.error, McpError)
      assert.strictEqual((unknown.error as McpError).code, ErrorCode.InvalidParams)
      // The client says "MCP error -32602:" once: the server's message does not carry it already.
      assert.match((unknown.error as McpError).message, /^MCP error -32602: Unknown tool: start_reserch /)
      assert.include((unknown.error as McpError).message, "start_research")
      const refused = yield* Effect.promise(() =>
        mcp.client.callTool({ name: "start_research", arguments: { question: "" } })
      )
      assert.strictEqual(refused.isError, true)
      assert.strictEqual(
        Schema.decodeUnknownSync(Text)(refused.content)[0]?.text,
        "Invalid arguments: 'question': must not be empty."
      )
      const cases: Array<[string, Record<string, unknown>, string]> = [
        [
          "start_research",
          { question: "Tides?", maxRounds: -1 },
          "'maxRounds': Expected a positive number, actual -1."
        ],
        ["get_status", {}, "'sessionId' is required."],
        ["answer_clarification", { sessionId: "dr-x", answer: 3 }, "'answer': Expected string, actual 3."],
        ["list_sessions", { status: "running" }, "'status': this tool takes no arguments."],
        [
          "start_research",
          { question: " ", concurrency: 1.5 },
          "'question': must not be empty; 'concurrency': Expected an integer, actual 1.5."
        ],
        // Thousands of levels are refused before the decoder walks them (it went past the stack).
        ["start_research", { question: nested(5_000) }, "nested deeper than 64 levels of arrays and objects."],
        // A long value is quoted in part.
        [
          "start_research",
          { question: "Tides?", maxRounds: "x".repeat(200_000) },
          `'maxRounds': Expected number, actual "${"x".repeat(79)}….`
        ]
      ]
      for (const [name, args, said] of cases) {
        const result = yield* Effect.promise(() => mcp.client.callTool({ name, arguments: args }))
        assert.strictEqual(result.isError, true)
        assert.strictEqual(Schema.decodeUnknownSync(Text)(result.content)[0]?.text, `Invalid arguments: ${said}`)
      }
    })
  )

  it.scopedLive("with --max-sessions 1 a second run is queued until the first ends, then completes", () =>
    Effect.gen(function* () {
      const mcp = yield* connected({ maxSessions: 1 })
      const start = (question: string) =>
        Effect.map(mcp.call("start_research", { question }), Schema.decodeUnknownSync(Started))
      const first = yield* start("How do tides work?")
      const second = yield* start("Why is the sky blue?")
      assert.strictEqual(first.status, "running")
      assert.strictEqual(second.status, "queued")
      const listed = Schema.decodeUnknownSync(Listed)(yield* mcp.call("list_sessions", {})).sessions
      assert.deepStrictEqual(
        listed.find((summary) => summary.id === second.sessionId),
        { id: second.sessionId, status: "queued", query: "Why is the sky blue?" },
        "a queued run is listed before it has a stored session"
      )
      const seen: Array<string> = []
      for (let polls = 0; polls < 600; polls++) {
        const [a, b] = yield* Effect.all([mcp.status(first.sessionId), mcp.status(second.sessionId)])
        seen.push(`${a.status}/${b.status}`)
        if (a.status === "completed" && b.status === "completed") break
        // The limit holds: the second never runs while the first does.
        assert.isFalse(a.status === "running" && b.status === "running", seen.join(" "))
        yield* Effect.sleep("50 millis")
      }
      assert.strictEqual(seen[seen.length - 1], "completed/completed", seen.join(" "))
      assert.include(seen, "running/queued")
    })
  )

  it.scopedLive(
    "a question with a trailing newline is trimmed as the CLI trims it, not refused with a schema dump",
    () =>
      Effect.gen(function* () {
        const mcp = yield* connected({})
        const started = Schema.decodeUnknownSync(Started)(
          yield* mcp.call("start_research", { question: "  How do tides work?\n" })
        )
        assert.strictEqual(started.status, "running")
        const listed = Schema.decodeUnknownSync(Listed)(yield* mcp.call("list_sessions", {})).sessions
        assert.strictEqual(listed.find((summary) => summary.id === started.sessionId)?.query, "How do tides work?")
      })
  )

  it.effect("--max-sessions must be a positive integer, from the flag, the environment or the config file", () =>
    Effect.sync(() => {
      const flag = CliConfig.resolve({ simulate: true, maxSessions: 0 }, {}, undefined)
      assert.isTrue(Either.isLeft(flag) && flag.left.message.includes("--max-sessions"))
      const env = CliConfig.resolve({ simulate: true }, { DEEP_RESEARCH_MAX_SESSIONS: "two" }, undefined)
      assert.isTrue(Either.isLeft(env) && env.left.message.includes("DEEP_RESEARCH_MAX_SESSIONS"))
      const file = Schema.decodeUnknownSync(CliConfig.FileConfig)({ maxSessions: 3 })
      const fromFile = CliConfig.resolve({ simulate: true }, { DEEP_RESEARCH_MAX_SESSIONS: "4" }, file)
      assert.strictEqual(Either.getOrThrow(fromFile).maxSessions, 4, "the environment wins over the file")
      const fromFlag = CliConfig.resolve({ simulate: true, maxSessions: 2 }, { DEEP_RESEARCH_MAX_SESSIONS: "4" }, file)
      assert.strictEqual(Either.getOrThrow(fromFlag).maxSessions, 2, "the flag wins")
      assert.strictEqual(Either.getOrThrow(CliConfig.resolve({ simulate: true }, {}, undefined)).maxSessions, undefined)
    })
  )
})

describe("a run lives as long as its MCP server", () => {
  it.scopedLive(
    "start_research says so; a server stopped mid-run says the session is stored cancelled, and resume_research ends it",
    () =>
      Effect.gen(function* () {
        const store = yield* Effect.acquireRelease(
          Effect.sync(() => fs.mkdtempSync(nodePath.join(os.tmpdir(), "deep-research-mcp-"))),
          (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
        )
        const resolved = CliConfig.resolve({ simulate: true, store, noClarify: true }, {}, undefined)
        if (Either.isLeft(resolved)) return yield* Effect.dieMessage(resolved.left.message)
        const logged: Array<string> = []
        const server = () =>
          Effect.gen(function* () {
            const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
            const serving = yield* Effect.forkScoped(
              Mcp.serve(resolved.right, serverSide).pipe(
                Effect.provide(
                  Logger.replace(
                    Logger.defaultLogger,
                    Logger.make(({ message }) => logged.push(String(message)))
                  )
                )
              )
            )
            const client = new Client({ name: "deep-research-test", version: "1.0.0" })
            yield* Effect.promise(() => client.connect(clientSide))
            return { client, serving }
          })
        // As the MCP Inspector's CLI mode does: a server for one call, stopped right after its answer.
        const first = yield* server()
        const started = yield* Effect.promise(() =>
          first.client.callTool({ name: "start_research", arguments: { question: "How do tides work?", maxRounds: 3 } })
        )
        const { note, sessionId } = Schema.decodeUnknownSync(
          Schema.Struct({ sessionId: Schema.String, status: Schema.String, note: Schema.String })
        )(started.structuredContent)
        assert.include(note, "runs inside this MCP server's process")
        assert.include(note, "resume_research")
        yield* Effect.promise(() => first.client.close())
        yield* Fiber.join(first.serving)
        assert.deepInclude(
          logged.filter((line) => line.includes(sessionId)),
          `The MCP server stops while session ${sessionId} runs: it is stored cancelled. Resume it with ` +
            `resume_research (from a client that keeps the server running) or deep-research resume ${sessionId}.`
        )
        // A client that keeps its server open resumes it and sees it finish.
        const second = yield* server()
        const call = (name: string, args: Record<string, unknown>) =>
          Effect.map(
            Effect.promise(() => second.client.callTool({ name, arguments: args })),
            (result) => Schema.decodeUnknownSync(Schema.Struct({ status: Schema.String }))(result.structuredContent)
          )
        assert.strictEqual((yield* call("get_status", { sessionId })).status, "cancelled")
        yield* call("resume_research", { sessionId })
        let status = yield* call("get_status", { sessionId })
        for (let polls = 0; polls < 600 && status.status === "running"; polls++) {
          yield* Effect.sleep("50 millis")
          status = yield* call("get_status", { sessionId })
        }
        assert.strictEqual(status.status, "completed")
        yield* Effect.promise(() => second.client.close())
      })
  )
})

describe("the MCP server's own work", () => {
  it.scopedLive("runs in the server's runtime: what a tool logs goes to its logger, never among the messages", () =>
    Effect.gen(function* () {
      const logged: Array<string> = []
      const unused = Effect.dieMessage("not used by this test")
      const runs: Runs.Runs = {
        start: () => unused,
        status: () => unused,
        list: Effect.as(Effect.logWarning("the sessions waiting for a runner could not be read"), []),
        load: () => unused,
        answer: () => unused,
        review: () => unused,
        resume: () => unused,
        cancel: () => unused,
        remove: () => unused,
        evaluate: () => unused,
        isRunning: () => false,
        running: Effect.succeed(0),
        awaitRun: () => Effect.void,
        events: () => Stream.empty,
        artefact: () => unused,
        artefactOfEach: () => unused,
        saveArtefact: () => unused,
        scrub: (text) => text,
        searchLibrary: () => unused
      }
      const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
      yield* Effect.forkScoped(
        Mcp.serveRuns(runs, serverSide).pipe(
          Effect.provide(
            Logger.replace(
              Logger.defaultLogger,
              Logger.make(({ message }) => logged.push(String(message)))
            )
          )
        )
      )
      const client = new Client({ name: "deep-research-test", version: "1.0.0" })
      yield* Effect.acquireRelease(
        Effect.promise(() => client.connect(clientSide)),
        () => Effect.promise(() => client.close())
      )
      const listed = yield* Effect.promise(() => client.callTool({ name: "list_sessions", arguments: {} }))
      assert.notStrictEqual(listed.isError, true)
      assert.deepStrictEqual(logged, ["the sessions waiting for a runner could not be read"])
    })
  )
})
