/**
 * An MCP client (the official SDK's) talking to `Mcp.serve` in the test's process over a linked in-memory transport,
 * with a simulated configuration and a store of its own, for the life of the test's scope.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js"
import { type ElicitRequest, ElicitRequestSchema, type ElicitResult } from "@modelcontextprotocol/sdk/types.js"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import * as CliConfig from "../src/CliConfig.js"
import * as Mcp from "../src/Mcp.js"

/** A tool result's content, as text parts. */
export const Text = Schema.Array(Schema.Struct({ type: Schema.String, text: Schema.String }))
const Status = Schema.parseJson(Schema.Struct({ status: Schema.String, running: Schema.Boolean }))

/** An MCP client talking to `Mcp.serve` in this process, over a simulated configuration. */
export const connected = (
  flags: CliConfig.Flags,
  client = new Client({ name: "deep-research-test", version: "1.0.0" })
) =>
  Effect.gen(function* () {
    const store = yield* Effect.acquireRelease(
      Effect.sync(() => fs.mkdtempSync(nodePath.join(os.tmpdir(), "deep-research-mcp-"))),
      (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
    )
    const resolved = CliConfig.resolve({ ...flags, simulate: true, store, noClarify: true }, {}, undefined)
    if (Either.isLeft(resolved)) return yield* Effect.dieMessage(resolved.left.message)
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
    yield* Effect.forkScoped(Mcp.serve(resolved.right, serverSide))
    yield* Effect.acquireRelease(
      Effect.promise(() => client.connect(clientSide)),
      () => Effect.promise(() => client.close())
    )
    const call = (name: string, args: Record<string, unknown>) =>
      Effect.promise(() => client.callTool({ name, arguments: args })).pipe(
        Effect.map((result) =>
          Schema.decodeUnknownSync(Text)(result.content)
            .map((part) => part.text)
            .join("")
        )
      )
    const status = (sessionId: string) =>
      Effect.map(call("get_status", { sessionId }), Schema.decodeUnknownSync(Status))
    return { call, status, client, store }
  })

/** The same, from a client that can ask its user (MCP elicitation), whose user answers with `answer`. */
export const connectedWithElicitation = (answer: (request: ElicitRequest["params"]) => ElicitResult) => {
  const client = new Client(
    { name: "deep-research-test", version: "1.0.0" },
    { capabilities: { elicitation: { form: {} } } }
  )
  client.setRequestHandler(ElicitRequestSchema, (request) => answer(request.params))
  return connected({}, client)
}
