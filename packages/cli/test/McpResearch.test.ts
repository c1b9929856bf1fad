/**
 * The MCP server's `research` tool, through the official SDK's client over an in-memory transport: as an MCP task
 * (2025-11-25) whose id is the session's, and as a plain call that waits for the report with progress notifications.
 * The same tool over Streamable HTTP is `McpHttp.test.ts`.
 */
import { assert, describe, it } from "@effect/vitest"
import { CallToolResultSchema, CreateTaskResultSchema, ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js"
import type { Progress } from "@modelcontextprotocol/sdk/types.js"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { connected, connectedWithElicitation, Text } from "./McpHarness.js"
import { cli, describeRan } from "./support/inProcess.js"

const Report = Schema.Struct({
  sessionId: Schema.String,
  query: Schema.String,
  report: Schema.String,
  sources: Schema.NonEmptyArray(Schema.Struct({ url: Schema.String, citation: Schema.NullOr(Schema.Number) }))
})

describe("research over MCP", () => {
  it.scopedLive(
    "called as a task it answers at once with a task of its own id that names its session; tasks/get follows the session, tasks/result gives its report with the sources",
    () =>
      Effect.gen(function* () {
        const { call, client } = yield* connected({})
        const { task } = yield* Effect.promise(() =>
          client.request(
            {
              method: "tools/call",
              params: { name: "research", arguments: { question: "How do tides work?", maxRounds: 1 }, task: {} }
            },
            CreateTaskResultSchema
          )
        )
        assert.strictEqual(task.status, "working")
        assert.isNull(task.ttl, "kept as long as the session is")
        // The task names its session, which the other tools take; its own id is not the session's, nor guessed from it.
        const sessionId = /^session (\S+):/.exec(task.statusMessage ?? "")?.[1] ?? ""
        assert.match(task.taskId, new RegExp(`^${sessionId}\\.[A-Za-z0-9_-]{43}$`))
        assert.include(yield* call("get_status", { sessionId }), sessionId)
        let seen = task
        while (seen.status === "working") {
          yield* Effect.sleep("50 millis")
          seen = yield* Effect.promise(() => client.experimental.tasks.getTask(task.taskId))
        }
        assert.strictEqual(seen.status, "completed", seen.statusMessage)
        const result = yield* Effect.promise(() =>
          client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema)
        )
        const report = Schema.decodeUnknownSync(Report)(result.structuredContent)
        assert.strictEqual(report.sessionId, sessionId)
        assert.strictEqual(Schema.decodeUnknownSync(Text)(result.content)[0]?.text, report.report)
        assert.match(report.report, /\[1\]/)
        assert.isTrue(report.sources.some((source) => source.citation === 1))
        const listed = yield* Effect.promise(() => client.experimental.tasks.listTasks())
        assert.deepInclude(
          listed.tasks.map((t) => [t.taskId, t.status]),
          [task.taskId, "completed"]
        )
      })
  )

  it.scopedLive("called plainly it answers with the report, having sent progress that grows while it ran", () =>
    Effect.gen(function* () {
      const { client } = yield* connected({})
      const progress: Array<Progress> = []
      const result = yield* Effect.promise(() =>
        client.callTool(
          { name: "research", arguments: { question: "How do tides work?", maxRounds: 1 } },
          CallToolResultSchema,
          { onprogress: (p) => progress.push(p) }
        )
      )
      assert.notStrictEqual(result.isError, true, JSON.stringify(result.content))
      assert.match(Schema.decodeUnknownSync(Report)(result.structuredContent).report, /\[1\]/)
      assert.isAbove(progress.length, 1)
      for (let i = 1; i < progress.length; i++) assert.isAbove(progress[i]!.progress, progress[i - 1]!.progress)
      assert.include(progress.map((p) => p.message).join("\n"), "round 1")
    })
  )

  it.scopedLive("a task asked of a tool that does not run as one is refused as MCP says: method not found", () =>
    Effect.gen(function* () {
      const { client } = yield* connected({})
      const refused = yield* Effect.flip(
        Effect.tryPromise(() =>
          client.request(
            { method: "tools/call", params: { name: "list_sessions", arguments: {}, task: {} } },
            CreateTaskResultSchema
          )
        )
      )
      assert.instanceOf(refused.error, McpError)
      assert.strictEqual((refused.error as McpError).code, ErrorCode.MethodNotFound)
      assert.include((refused.error as McpError).message, "research")
      const unknown = yield* Effect.flip(Effect.tryPromise(() => client.experimental.tasks.getTask("dr-unknown")))
      assert.strictEqual((unknown.error as McpError).code, ErrorCode.InvalidParams)
    })
  )
})

const Shown = Schema.parseJson(
  Schema.Struct({
    status: Schema.String,
    review: Schema.optional(Schema.Struct({ decision: Schema.String })),
    rounds: Schema.Array(
      Schema.Struct({ directives: Schema.Array(Schema.Struct({ directive: Schema.Struct({ topic: Schema.String }) })) })
    )
  })
)

describe("research with review over MCP", () => {
  it.scopedLive("a client that can elicit is asked about the plan, and its edit is what gets researched", () =>
    Effect.gen(function* () {
      const edited = "Investigate how the Moon's gravity raises ocean tides, measured by tide gauges."
      const asked: Array<string> = []
      const { client, store } = yield* connectedWithElicitation((request) => {
        asked.push(request.message)
        return { action: "accept", content: { action: "edit", directives: edited } }
      })
      const result = yield* Effect.promise(() =>
        client.callTool({
          name: "research",
          arguments: { question: "How do ocean tides work?", review: true, allowClarification: false }
        })
      )
      assert.notStrictEqual(result.isError, true, JSON.stringify(result.content))
      assert.strictEqual(asked.length, 1)
      assert.include(asked[0] ?? "", "The research plan, before any search")
      const sessionId = String((result.structuredContent as { sessionId?: unknown } | undefined)?.sessionId ?? "")
      const shown = yield* Effect.promise(() => cli(["show", sessionId, "--json", "--store", store]))
      assert.strictEqual(shown.code, 0, describeRan(shown))
      const session = Schema.decodeUnknownSync(Shown)(shown.stdout)
      assert.strictEqual(session.status, "completed")
      assert.strictEqual(session.review?.decision, "edited")
      assert.deepStrictEqual(
        session.rounds[0]?.directives.map((d) => d.directive.topic),
        [edited]
      )
    })
  )
})
