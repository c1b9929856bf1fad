/**
 * What the servers publish is what they take: arguments generated from each MCP tool's published `inputSchema`, and
 * request bodies generated from the OpenAPI document `serve` publishes (json-schema-faker, fixed seeds), are never
 * refused as malformed. A schema that promises more than the server's own decoding accepts (a bound, a format, a
 * field it does not know) fails here, whatever the server's types say.
 */
import SwaggerParser from "@apidevtools/swagger-parser"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { generateSync } from "json-schema-faker"
import * as fs from "node:fs"
import { connected } from "./McpHarness.js"
import { post, request, served } from "./ServeHarness.js"

const seeds = Array.from({ length: 20 }, (_, i) => i + 1)

const generated = (schema: unknown, seed: number): unknown =>
  generateSync(schema as Parameters<typeof generateSync>[0], { seed, maxItems: 3, maxLength: 40 })

describe("what the servers publish is what they take", () => {
  it.scopedLive("every MCP tool takes arguments generated from its published inputSchema", () =>
    Effect.gen(function* () {
      const { client } = yield* connected({})
      const { tools } = yield* Effect.promise(() => client.listTools())
      assert.isAtLeast(tools.length, 9)
      const readme = fs.readFileSync(new URL("../../../docs/mcp.md", import.meta.url), "utf8")
      for (const tool of tools) assert.include(readme, `\`${tool.name}\``, "docs/mcp.md names every MCP tool")
      const refused: Array<string> = []
      for (const tool of tools) {
        // `research` called plainly answers with a whole (simulated) report: three seeds of it, not twenty runs.
        for (const seed of tool.name === "research" ? seeds.slice(0, 3) : seeds) {
          const args = generated(tool.inputSchema, seed) as Record<string, unknown>
          const result = yield* Effect.promise(() => client.callTool({ name: tool.name, arguments: args }))
          const parts = Array.isArray(result.content) ? result.content : []
          const text = parts.map((part) => (typeof part.text === "string" ? part.text : "")).join("")
          // A tool may say no to what it was asked (no such session); only a refusal of the arguments is a fault.
          if (result.isError === true && text.startsWith("Invalid arguments")) {
            refused.push(`${tool.name} ${JSON.stringify(args)}: ${text}`)
          }
        }
      }
      assert.deepStrictEqual(refused, [])
    })
  )

  it.scopedLive(
    "serve takes every request body generated from its OpenAPI document",
    () =>
      Effect.gen(function* () {
        const s = yield* served({ noClarify: true })
        const published = yield* request(`${s.url}/openapi.json`)
        const document = yield* Effect.tryPromise(() => SwaggerParser.dereference(JSON.parse(published.text)))
        const refused: Array<string> = []
        const bodies: Array<string> = []
        for (const [path, item] of Object.entries(document.paths ?? {})) {
          for (const [method, operation] of Object.entries(item ?? {})) {
            const schema = Reflect.get(Object(operation), "requestBody")?.content?.["application/json"]?.schema
            if (method !== "post" || schema === undefined) continue
            bodies.push(path)
            for (const seed of seeds) {
              const body = generated(schema, seed)
              const answer = yield* post(`${s.url}${path.replace("{id}", "dr-nobody")}`, body)
              // Only a refusal of the body's shape is a fault: the decoding's own 400 (`HttpApiDecodeError`, said on
              // `/v1` in OpenAI's words); a body it read but cannot act on (no user message to answer) is another 400.
              if (
                answer.status === 400 &&
                /HttpApiDecodeError|Missing required parameter|Invalid value for/.test(answer.text)
              ) {
                refused.push(`${path} ${JSON.stringify(body)}: ${answer.text}`)
              }
            }
          }
        }
        assert.includeMembers(bodies, ["/api/sessions", "/api/sessions/{id}/answer", "/v1/chat/completions"])
        assert.deepStrictEqual(refused, [])
      }),
    // Twenty bodies a route, those of `/v1` each a whole simulated research: about 10 s on a quiet machine, past 30 s
    // on a busy one.
    180_000
  )
})
