/**
 * No secret leaves by the MCP server on stdio: the built `deep-research mcp --simulate`, with the token and every key
 * in its environment, is sent a question holding them all (researched to its report), bad arguments, an unknown tool
 * and a task id that are secrets, and an empty batch; its stdout (every message), its stderr (every log line) and every
 * file of its store are searched for each secret's identifying prefix. And the built `list`, `show` and `delete`, which
 * start from a quick entry of their own, not the whole command line's.
 */
import { assert, describe, it } from "@effect/vitest"
import * as nodePath from "node:path"
import { describeRun, run, runWithInput, sandbox } from "./support/builtCli.js"
import * as Fake from "./support/secrets.js"

const message = (id: number, method: string, params: unknown) => JSON.stringify({ jsonrpc: "2.0", id, method, params })

const call = (id: number, name: string, args: unknown) => message(id, "tools/call", { name, arguments: args })

describe("deep-research mcp on stdio", () => {
  it("answers, logs and stores nothing secret of a question and bad arguments that hold every secret", async () => {
    const box = sandbox()
    const store = nodePath.join(box.dir, "store")
    const ran = await runWithInput(
      box,
      ["mcp", "--simulate", "--no-clarify", "--store", store],
      [
        message(1, "initialize", {
          protocolVersion: "2025-11-25",
          capabilities: {},
          clientInfo: { name: "t", version: "1" }
        }),
        JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
        call(2, "research", { question: Fake.question, maxRounds: 1 }),
        call(3, "get_status", { sessionId: Fake.token }),
        call(4, "start_research", { question: "How do tides work?", concurrency: Fake.keys.OPENAI_API_KEY }),
        call(5, Fake.keys.ANTHROPIC_API_KEY, {}),
        message(6, "tasks/get", { taskId: Fake.token }),
        call(7, "list_sessions", {}),
        "[]"
      ].join("\n") + "\n",
      Fake.environment
    )
    assert.strictEqual(ran.code, 0, describeRun(ran))
    const answers = ran.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { id: unknown; error?: { code: number }; result?: { isError?: boolean } })
    // The report came back, and each refusal said why.
    const report = answers.find((answer) => answer.id === 2)?.result
    assert.isTrue(report !== undefined && report.isError !== true, describeRun(ran))
    assert.isTrue(answers.find((answer) => answer.id === 3)?.result?.isError)
    assert.isTrue(answers.find((answer) => answer.id === 4)?.result?.isError)
    assert.isDefined(answers.find((answer) => answer.id === 5)?.error)
    assert.isDefined(answers.find((answer) => answer.id === 6)?.error)
    assert.deepInclude(
      answers.map((answer) => [answer.id, answer.error?.code]),
      [null, -32600]
    )
    assert.include(ran.stdout, "[redacted]")
    assert.deepStrictEqual(
      [...Fake.leaks("stdout", ran.stdout), ...Fake.leaks("stderr", ran.stderr), ...Fake.leaksInFiles(box.dir)],
      []
    )
  }, 120_000)
})

describe("the built list, show and delete", () => {
  it("(the quick entry) say nothing secret of an id that is a secret", async () => {
    const box = sandbox()
    const store = nodePath.join(box.dir, "store")
    for (const args of [
      ["show", Fake.token, "--store", store],
      ["show", Fake.keys.OPENAI_API_KEY, "--store", store, "--json"],
      ["delete", Fake.token, "--store", store],
      ["list", "--store", store]
    ]) {
      const ran = await run(box, args, Fake.environment)
      assert.deepStrictEqual([...Fake.leaks("stdout", ran.stdout), ...Fake.leaks("stderr", ran.stderr)], [])
      if (args[0] !== "list") assert.include(ran.stderr, "[redacted]", describeRun(ran))
    }
    assert.deepStrictEqual(Fake.leaksInFiles(box.dir), [])
  }, 60_000)
})
