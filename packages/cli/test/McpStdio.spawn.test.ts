/**
 * The MCP server on stdio as JSON-RPC 2.0 has it: a line that is not JSON is answered with a parse error (-32700,
 * id null), one that is JSON but no message with an invalid request (-32600, with its id when it has one), and the
 * messages around them are answered as ever. The SDK's own transport dropped such lines without a word.
 */
import { assert, describe, it } from "@effect/vitest"
import { PassThrough } from "node:stream"
import { Unanswered } from "../src/internal/mcp/answeredBeforeClose.js"
import * as JsonRpcLines from "../src/internal/mcp/jsonRpcLines.js"
import { describeRun, runWithInput, sandbox } from "./support/builtCli.js"

const ping = (id: number) => JSON.stringify({ jsonrpc: "2.0", id, method: "ping" })

/** What `validLines` passes on and refuses for input given in these chunks. */
const filtered = (chunks: ReadonlyArray<string>) =>
  new Promise<{ passed: string; refused: Array<JsonRpcLines.Refusal> }>((resolve, reject) => {
    const refused: Array<JsonRpcLines.Refusal> = []
    const input = new PassThrough()
    const lines = input.pipe(JsonRpcLines.validLines((refusal) => refused.push(refusal)))
    let passed = ""
    lines.on("data", (chunk: Buffer) => (passed += chunk.toString("utf8")))
    lines.on("end", () => resolve({ passed, refused }))
    lines.on("error", reject)
    for (const chunk of chunks) input.write(chunk)
    input.end()
  })

describe("the MCP server's input lines", () => {
  it("passes messages on whole and in order, however the input is cut, and refuses the rest in order", async () => {
    const { passed, refused } = await filtered([
      `${ping(1)}\n{"jsonrpc":`,
      `"2.0","id":2,"method":"ping"}\r\n`,
      "\n   \nnot json\n",
      `{"jsonrpc":"2.0","id":"a","method":7}\n[${ping(3)}]\n{"id":4}\n`,
      ping(5)
    ])
    assert.strictEqual(passed, `${ping(1)}\n{"jsonrpc":"2.0","id":2,"method":"ping"}\r\n${ping(5)}\n`)
    assert.deepStrictEqual(
      refused.map((refusal) => [refusal.id, refusal.error.code]),
      [
        [null, -32700],
        ["a", -32600],
        [null, -32600],
        [4, -32600]
      ]
    )
    assert.match(refused[0]?.error.message ?? "", /^Parse error: /)
    assert.notInclude(refused[0]?.error.message ?? "", "\n")
  })

  it("answers a last line without its end as a line", async () => {
    assert.deepStrictEqual(await filtered(["{"]).then((result) => result.refused.map((r) => r.error.code)), [-32700])
  })
})

describe("what the MCP server on stdio has yet to answer", () => {
  it("counts requests (not notifications) from their arrival until an answer with their id is written", async () => {
    const unanswered = new Unanswered()
    let settled = false
    unanswered.received({ jsonrpc: "2.0", method: "notifications/initialized" })
    await unanswered.settled(60_000)
    unanswered.received({ jsonrpc: "2.0", id: 1, method: "ping" })
    unanswered.received({ jsonrpc: "2.0", id: "b", method: "tools/list" })
    const waiting = unanswered.settled(60_000).then(() => (settled = true))
    unanswered.answered({ jsonrpc: "2.0", id: 1, result: {} })
    await new Promise((resolve) => setImmediate(resolve))
    assert.isFalse(settled, "one request is still unanswered")
    unanswered.answered({ jsonrpc: "2.0", id: "b", error: { code: -32601, message: "no" } })
    await waiting
    assert.isTrue(settled)
  })

  it("gives up waiting after the time it is given", async () => {
    const unanswered = new Unanswered()
    unanswered.received({ jsonrpc: "2.0", id: 1, method: "ping" })
    await unanswered.settled(20)
  })
})

describe("deep-research mcp on stdio", () => {
  it("answers a line that is not JSON and one that is no message with JSON-RPC errors, and the others as ever", async () => {
    const initialize = {
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } }
    }
    const ran = await runWithInput(
      sandbox(),
      ["mcp", "--simulate"],
      [
        JSON.stringify(initialize),
        JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
        "{not json",
        JSON.stringify({ jsonrpc: "2.0", id: 2, method: 7 }),
        JSON.stringify({ jsonrpc: "2.0", id: 3, method: "tools/list" })
      ].join("\n") + "\n"
    )
    assert.strictEqual(ran.code, 0, describeRun(ran))
    const answers = ran.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { id: unknown; error?: { code: number }; result?: { tools?: Array<unknown> } })
    // Answers are matched to requests by id, in whatever order they come (the refusals come at once).
    assert.sameDeepMembers(
      answers.map((answer) => [answer.id, answer.error?.code ?? "result"]),
      [
        [1, "result"],
        [null, -32700],
        [2, -32600],
        [3, "result"]
      ]
    )
    assert.isAbove(answers.find((answer) => answer.id === 3)?.result?.tools?.length ?? 0, 0)
  }, 60_000)
})
