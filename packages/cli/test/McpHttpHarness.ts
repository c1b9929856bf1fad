/** An MCP client (the official SDK's) of a `deep-research serve` at `/mcp`, over Streamable HTTP, for a test's scope. */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { CreateTaskResultSchema } from "@modelcontextprotocol/sdk/types.js"
import * as Effect from "effect/Effect"

/** An MCP session with the server at `base` (its root URL), closed with the scope. */
export const connectedOver = (base: string, headers: Record<string, string> = {}) =>
  Effect.gen(function* () {
    const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers } })
    const mcp = new Client({ name: "deep-research-test", version: "1.0.0" })
    yield* Effect.acquireRelease(
      Effect.promise(() => mcp.connect(transport)),
      () => Effect.promise(() => mcp.close())
    )
    return { mcp, transport }
  })

/** `research` called as an MCP task: the task it answers with at once. */
export const researchAsTask = (mcp: Client, question = "How do tides work?") =>
  Effect.map(
    Effect.promise(() =>
      mcp.request(
        { method: "tools/call", params: { name: "research", arguments: { question, maxRounds: 1 }, task: {} } },
        CreateTaskResultSchema
      )
    ),
    (created) => created.task
  )
