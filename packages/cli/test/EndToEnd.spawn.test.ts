/**
 * The built `deep-research` command, spawned as a user would run it, against the vendors' emulator: the emulator runs
 * in this process (its simulated research world answers every request) and the CLI reaches it through
 * `OPENAI_BASE_URL` and `TAVILY_BASE_URL`, so its request log is visible here. Every test has its own store, home and
 * working folder.
 */
import { ResearchEvents, Session } from "@deep-research/core"
import { Evaluation } from "@deep-research/evaluation"
import { Emulator } from "@deep-research/emulator"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { fileURLToPath } from "node:url"
import { storedFiles, storedIds } from "./support/storedSession.js"

// =============================================================================
// The built CLI
// =============================================================================

const root = fileURLToPath(new URL("../../..", import.meta.url))
const bin = nodePath.join(root, "packages/cli/bin/deep-research.js")

// =============================================================================
// Spawning
// =============================================================================

interface Sandbox {
  readonly dir: string
  readonly store: string
  readonly env: Record<string, string>
}

const sandboxes: Array<string> = []

/** A temporary home, store and working folder, and an environment with nothing of the real one but `PATH`. */
const sandbox = (env: Record<string, string> = {}): Sandbox => {
  const dir = fs.mkdtempSync(nodePath.join(os.tmpdir(), "deep-research-cli-"))
  sandboxes.push(dir)
  const home = nodePath.join(dir, "home")
  const store = nodePath.join(dir, "store")
  fs.mkdirSync(home)
  return {
    dir,
    store,
    env: { PATH: process.env["PATH"] ?? "", HOME: home, DEEP_RESEARCH_HOME: store, NO_COLOR: "1", ...env }
  }
}

interface Finished {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
}

/** Spawns the CLI; `onLine` sees each stdout line as it comes and may act on the process (to kill it). */
const cli = (
  box: Sandbox,
  args: ReadonlyArray<string>,
  onLine?: (line: string, child: ChildProcess) => void
): Promise<Finished> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], { cwd: box.dir, env: box.env, stdio: "pipe" })
    let stdout = ""
    let stderr = ""
    let pending = ""
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk
      pending += chunk
      const lines = pending.split("\n")
      pending = lines.pop() ?? ""
      if (onLine !== undefined) for (const line of lines) onLine(line, child)
    })
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
    child.on("error", reject)
    child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr }))
  })

const decodeEvent = (line: string) => Effect.runSync(ResearchEvents.decodeJson(line))

const eventsOf = (stdout: string) =>
  stdout
    .split("\n")
    .filter((line) => line !== "")
    .map(decodeEvent)

const loadSession = (box: Sandbox, id: string): Session.Session =>
  Schema.decodeUnknownSync(Schema.parseJson(Session.Session))(storedFiles(box.store, id)["session.json"] ?? "")

const describeRun = (result: Finished) =>
  `exit ${result.code} (signal ${result.signal})\n--- stdout\n${result.stdout.slice(-3000)}\n--- stderr\n${result.stderr.slice(-3000)}`

// =============================================================================
// The emulator
// =============================================================================

let scope: Scope.CloseableScope
let emulator: Emulator.Handle

/** Where the CLI finds the emulator, as an OpenAI-compatible server and a Tavily endpoint: no key at all. */
const emulatorEnv = () => ({
  OPENAI_BASE_URL: emulator.baseUrl("openai"),
  TAVILY_BASE_URL: emulator.baseUrl("tavily")
})

const researchArgs = ["--model", "openai:emulated-model", "--search", "tavily", "--no-clarify"]

beforeAll(async () => {
  scope = Effect.runSync(Scope.make())
  emulator = await Effect.runPromise(Scope.extend(Emulator.start(), scope))
  await Effect.runPromise(Emulator.simulate(emulator))
}, 300_000)

afterAll(async () => {
  if (scope !== undefined) await Effect.runPromise(Scope.close(scope, Exit.void))
  for (const dir of sandboxes) fs.rmSync(dir, { recursive: true, force: true })
})

const setLatency = (millis: number) => Effect.runPromise(emulator.setLatency("all", millis))

// =============================================================================
// Tests
// =============================================================================

describe("deep-research (built CLI)", () => {
  describe("a run against the emulator with --json", () => {
    let box: Sandbox
    let result: Finished

    beforeAll(async () => {
      await setLatency(0)
      box = sandbox(emulatorEnv())
      result = await cli(box, [
        "--json",
        ...researchArgs,
        "--out",
        "report.md",
        "How do heat pumps compare with boilers?"
      ])
    }, 120_000)

    it("completes with only OPENAI_BASE_URL and TAVILY_BASE_URL set, sending no API key", async () => {
      assert.strictEqual(result.code, 0, describeRun(result))
      const chats = await Effect.runPromise(emulator.requests("openai.chat"))
      assert.isAbove(chats.length, 0)
      for (const request of chats) assert.isUndefined(request.headers["authorization"])
    })

    it("--no-clarify makes no clarification call at all", async () => {
      const chats = await Effect.runPromise(emulator.requests("openai.chat"))
      const formats = chats.map((request) =>
        JSON.stringify((Predicate.isRecord(request.body) ? request.body["response_format"] : null) ?? null)
      )
      assert.isAbove(formats.filter((format) => format.includes('"research_brief"')).length, 0)
      assert.deepStrictEqual(
        formats.filter((format) => format.includes('"clarification"')),
        []
      )
    })

    it("writes only valid JSON event lines on stdout", () => {
      const lines = result.stdout.split("\n").filter((line) => line !== "")
      assert.isAbove(lines.length, 10)
      const tags = lines.map((line) => decodeEvent(line)._tag)
      assert.include(tags, "SessionStarted")
      assert.include(tags, "SessionCompleted")
      assert.notInclude(result.stdout, "Report:")
    })

    it("writes a report whose every citation points at a page the emulator served in its search results", async () => {
      const markdown = fs.readFileSync(nodePath.join(box.dir, "report.md"), "utf8")
      const id = eventsOf(result.stdout)[0]?.sessionId ?? ""
      const session = loadSession(box, id)
      const listed = new Map<number, string>()
      for (const match of markdown.matchAll(/^(\d+)\. \[[^\]]*\]\((\S+)\)/gm))
        listed.set(Number(match[1]), match[2] ?? "")
      const cited = new Set([...markdown.matchAll(/\[(\d+)\](?!\()/g)].map((match) => Number(match[1])))
      assert.isAbove(cited.size, 0)
      const retrieved = new Set(session.sources.map((source) => source.url))
      for (const number of cited) {
        const url = listed.get(number)
        assert.isDefined(url, `[${number}] is not in the source list`)
        assert.isTrue(url?.startsWith(`${emulator.url}/web/`), `${url} is not an emulator page`)
        assert.isTrue(retrieved.has(url ?? ""), `${url} was never retrieved by the session`)
        const page = await fetch(url ?? "")
        assert.strictEqual(page.status, 200, url)
      }
    })
  })

  describe("a --simulate run", () => {
    let box: Sandbox
    let result: Finished
    let sessionId: string

    beforeAll(async () => {
      box = sandbox()
      result = await cli(box, ["--simulate", "--out", "report.md", "What limits battery recycling?"])
      sessionId = storedIds(box.store)[0] ?? ""
    }, 120_000)

    it("runs offline and marks the report, the stored report and the summary as simulated", () => {
      assert.strictEqual(result.code, 0, describeRun(result))
      assert.match(result.stdout, /^\[simulated\] Report: /)
      assert.match(result.stderr, /\[simulated\]/)
      assert.match(fs.readFileSync(nodePath.join(box.dir, "report.md"), "utf8"), /^> \*\*Simulated run\.\*\*/)
      const stored = storedFiles(box.store, sessionId)["report.md"] ?? ""
      assert.match(stored, /^> \*\*Simulated run\.\*\*/)
    })

    it("evaluate prints the scores and the citation checks and stores them beside the session", async () => {
      const evaluated = await cli(box, ["evaluate", sessionId, "--simulate"])
      assert.strictEqual(evaluated.code, 0, describeRun(evaluated))
      assert.match(evaluated.stdout, /^\[simulated\]/)
      assert.match(evaluated.stdout, /Composite \d/)
      assert.match(evaluated.stdout, /groundedness\s+\d\/5/)
      // The simulated judge speaks of the question asked, not of the rubric's wording.
      assert.include(evaluated.stdout, "What limits battery recycling?")
      assert.notInclude(evaluated.stdout, "not addressed")
      assert.match(evaluated.stdout, /judged by \S+ in 1 call\n/)
      assert.match(evaluated.stdout, /Citations: \d+ inline/)
      const stored = Schema.decodeUnknownSync(Schema.parseJson(Evaluation.Evaluation))(
        storedFiles(box.store, sessionId)["evaluation.json"] ?? ""
      )
      assert.strictEqual(stored.sessionId, sessionId)
      assert.strictEqual(stored.judgement.scores.length, 8)
    })
  })

  it("a run killed with SIGKILL midway resumes without redoing the researchers it had finished", async () => {
    await setLatency(120)
    // A killed run's hold lapses after a second here (15 s by default).
    const box = sandbox({ ...emulatorEnv(), DEEP_RESEARCH_LEASE_SECONDS: "1" })
    const args = ["--json", ...researchArgs, "--concurrency", "1"]
    let sessionId = ""
    const killed = await cli(box, [...args, "Why did the Roman empire fall?"], (line, child) => {
      const event = decodeEvent(line)
      sessionId = event.sessionId ?? sessionId
      if (event._tag === "Checkpointed" && /^research unit \S+ completed$/.test(event.label)) child.kill("SIGKILL")
    })
    await setLatency(0)
    assert.strictEqual(killed.signal, "SIGKILL", describeRun(killed))
    const before = loadSession(box, sessionId)
    assert.strictEqual(before.status, "running")
    const finished = before.rounds.flatMap((round) => round.results)
    assert.isAbove(finished.length, 0)
    assert.isBelow(finished.length, before.rounds.flatMap((round) => round.directives).length)
    // Saved as running, but no run holds it once its lease lapsed: list says interrupted.
    await new Promise((resolve) => setTimeout(resolve, 1500))
    const listed = await cli(box, ["list", "--json"])
    assert.include(listed.stdout, `"id":"${sessionId}","status":"interrupted"`)

    const resumed = await cli(box, ["resume", sessionId, ...args])
    assert.strictEqual(resumed.code, 0, describeRun(resumed))
    const redone = eventsOf(resumed.stdout).filter(
      (event) =>
        (event._tag === "ResearcherStarted" || event._tag === "ToolCalled") &&
        finished.some((result) => result.directiveId === event.directiveId)
    )
    assert.deepStrictEqual(redone, [])
    const after = loadSession(box, sessionId)
    assert.strictEqual(after.status, "completed")
    assert.isDefined(after.report)
    for (const result of finished) {
      const kept = after.rounds.flatMap((round) => round.results).find((r) => r.directiveId === result.directiveId)
      assert.strictEqual(kept?.findings, result.findings)
    }
  })

  it("a research failure exits 1 and says why, where the session is and how to resume it", async () => {
    const failing = await Effect.runPromise(Scope.extend(Emulator.start(), scope))
    await Effect.runPromise(failing.respond("openai.chat", Emulator.fault({ type: "auth" })))
    const box = sandbox({ OPENAI_BASE_URL: failing.baseUrl("openai"), TAVILY_BASE_URL: failing.baseUrl("tavily") })
    const result = await cli(box, [...researchArgs, "Why is the sky blue?"])
    assert.strictEqual(result.code, 1, describeRun(result))
    const [sessionId = ""] = storedIds(box.store)
    assert.match(result.stderr, /Research failed: .*openai/i)
    assert.include(result.stderr, nodePath.join(box.store, "deep-research.db"))
    assert.include(result.stderr, `resume it with: deep-research resume ${sessionId} --model openai:emulated-model`)
    assert.notMatch(result.stderr, /^\s+at /m)
    assert.strictEqual(loadSession(box, sessionId).status, "failed")
  })

  it("with a local model and no search key it researches over the keyless APIs, and says which it searches", async () => {
    const box = sandbox({
      OPENAI_BASE_URL: emulator.baseUrl("openai"),
      WIKIPEDIA_BASE_URL: emulator.baseUrl("wikipedia"),
      OPENALEX_BASE_URL: emulator.baseUrl("openalex")
    })
    const result = await cli(box, ["--model", "openai:emulated-model", "--no-clarify", "How do tides work?"])
    assert.strictEqual(result.code, 0, describeRun(result))
    assert.include(result.stderr, "searching wikipedia: no search key is set")
  }, 120_000)

  it("without any model key or base URL it exits 2 with one message naming the environment variables", async () => {
    const result = await cli(sandbox(), ["What is the capital of Australia?"])
    assert.strictEqual(result.code, 2, describeRun(result))
    assert.include(result.stderr, "OPENAI_API_KEY")
    assert.include(result.stderr, "ANTHROPIC_API_KEY")
    assert.include(result.stderr, "OPENAI_BASE_URL")
    assert.notMatch(result.stderr, /^\s+at /m)
    assert.strictEqual(result.stdout, "")
  })

  it("--help lists every command and --version prints the package's version", async () => {
    const help = await cli(sandbox(), ["--help"])
    assert.strictEqual(help.code, 0, describeRun(help))
    for (const command of ["resume <id>", "list", "show <id>", "delete <id>", "evaluate <id>", "mcp"]) {
      assert.include(help.stdout, `deep-research ${command}`)
    }
    const version = await cli(sandbox(), ["--version"])
    const manifest = Schema.decodeUnknownSync(Schema.parseJson(Schema.Struct({ version: Schema.String })))(
      fs.readFileSync(nodePath.join(root, "packages/cli/package.json"), "utf8")
    )
    assert.strictEqual(version.stdout, `${manifest.version}\n`)
  })

  it("an unknown option exits 2 and names the option it resembles", async () => {
    const result = await cli(sandbox(), ["--simulte", "What is X?"])
    assert.strictEqual(result.code, 2, describeRun(result))
    assert.include(result.stderr, "Did you mean --simulate?")
  })

  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    it(`${signal} stops a run with exit 130 after a checkpoint and prints the exact resume command`, async () => {
      await setLatency(150)
      const box = sandbox(emulatorEnv())
      let sessionId = ""
      let sent = false
      const result = await cli(box, ["--json", ...researchArgs, "What drives coral bleaching?"], (line, child) => {
        const event = decodeEvent(line)
        sessionId = event.sessionId ?? sessionId
        if (!sent && event._tag === "ResearcherStarted") {
          sent = true
          child.kill(signal)
        }
      })
      await setLatency(0)
      assert.strictEqual(result.code, 130, describeRun(result))
      const command = `deep-research resume ${sessionId} --model openai:emulated-model --search tavily --json`
      assert.include(result.stderr, `Resume it with: ${command}\n`)
      assert.notMatch(result.stderr, /^\s+at /m)
      assert.strictEqual(loadSession(box, sessionId).status, "cancelled")
    })
  }

  describe("the MCP server", () => {
    /** What start_research and resume_research answer. */
    const decodeStarted = Schema.decodeUnknownSync(Schema.parseJson(Schema.Struct({ sessionId: Schema.String })))
    const connect = async (box: Sandbox, args: ReadonlyArray<string>) => {
      const transport = new StdioClientTransport({
        command: process.execPath,
        args: [bin, "mcp", ...args],
        env: box.env,
        cwd: box.dir,
        stderr: "pipe"
      })
      const client = new Client({ name: "deep-research-test", version: "1.0.0" })
      await client.connect(transport)
      const call = async (name: string, args: Record<string, unknown>): Promise<string> => {
        const result = await client.callTool({ name, arguments: args })
        const content = Schema.decodeUnknownSync(
          Schema.Array(Schema.Struct({ type: Schema.String, text: Schema.String }))
        )(result.content)
        return content.map((part) => part.text).join("")
      }
      const Status = Schema.parseJson(
        Schema.Struct({ status: Schema.String, clarificationQuestion: Schema.optional(Schema.String) })
      )
      /** Polls get_status until the session is no longer running. */
      const settle = async (sessionId: string) => {
        for (let polls = 0; polls < 1_200; polls++) {
          const status = Schema.decodeUnknownSync(Status)(await call("get_status", { sessionId }))
          if (status.status !== "running") return status
          await new Promise((resolve) => setTimeout(resolve, 100))
        }
        return assert.fail(`${sessionId} still running after 120 s`)
      }
      const start = async (question: string) => decodeStarted(await call("start_research", { question })).sessionId
      return { client, call, settle, start }
    }

    it("an MCP client starts research, polls its status and reads its report from the CLI's store", async () => {
      const box = sandbox()
      const mcp = await connect(box, ["--simulate"])
      let sessionId = ""
      try {
        const tools = await mcp.client.listTools()
        assert.includeMembers(
          tools.tools.map((tool) => tool.name),
          ["start_research", "get_status", "get_report", "list_sessions", "answer_clarification", "cancel_research"]
        )
        sessionId = await mcp.start("How do tides work?")
        assert.strictEqual((await mcp.settle(sessionId)).status, "completed")
        const report = await mcp.call("get_report", { sessionId })
        assert.match(report, /^> \*\*Simulated run\.\*\*/)
        assert.match(report, /\[1\]/)
        assert.include(await mcp.call("list_sessions", {}), sessionId)
      } finally {
        await mcp.client.close()
      }
      const shown = await cli(box, ["show", "--json", sessionId])
      assert.strictEqual(shown.code, 0, describeRun(shown))
      const session = Schema.decodeUnknownSync(Schema.parseJson(Session.Session))(shown.stdout.trim())
      assert.strictEqual(session.status, "completed")
    })

    it("delete_session removes a finished session from the store; an unknown id or a missing one is an error", async () => {
      const box = sandbox()
      const mcp = await connect(box, ["--simulate"])
      let sessionId = ""
      try {
        assert.include(
          (await mcp.client.listTools()).tools.map((tool) => tool.name),
          "delete_session"
        )
        sessionId = await mcp.start("Why is the sky blue?")
        assert.strictEqual((await mcp.settle(sessionId)).status, "completed")
        const deleted = Schema.decodeUnknownSync(
          Schema.parseJson(Schema.Struct({ sessionId: Schema.String, deleted: Schema.Boolean }))
        )(await mcp.call("delete_session", { sessionId }))
        assert.deepStrictEqual(deleted, { sessionId, deleted: true })
        assert.notInclude(await mcp.call("list_sessions", {}), sessionId)
        const status = await mcp.client.callTool({ name: "get_status", arguments: { sessionId } })
        assert.isTrue(status.isError)
        const again = await mcp.client.callTool({ name: "delete_session", arguments: { sessionId } })
        assert.isTrue(again.isError)
        assert.include(JSON.stringify(again.content), sessionId)
        const missing = await mcp.client.callTool({ name: "delete_session", arguments: {} })
        assert.isTrue(missing.isError)
        assert.include(JSON.stringify(missing.content), "Invalid arguments")
      } finally {
        await mcp.client.close()
      }
      const shown = await cli(box, ["show", "--json", sessionId])
      assert.notStrictEqual(shown.code, 0, describeRun(shown))
    })

    it("cancel_research stops a running session and resume_research finishes it", async () => {
      await setLatency(150)
      const box = sandbox(emulatorEnv())
      const mcp = await connect(box, ["--model", "openai:emulated-model", "--search", "tavily", "--no-clarify"])
      try {
        const sessionId = await mcp.start("How do tides work?")
        const Phase = Schema.parseJson(Schema.Struct({ status: Schema.String, phase: Schema.String }))
        // Cancelled once its session is stored: a run cancelled before it starts leaves nothing to resume.
        for (let polls = 0; polls < 600; polls++) {
          if (Schema.decodeUnknownSync(Phase)(await mcp.call("get_status", { sessionId })).phase !== "starting") break
          await new Promise((resolve) => setTimeout(resolve, 20))
        }
        const before = Schema.decodeUnknownSync(Phase)(await mcp.call("get_status", { sessionId }))
        assert.strictEqual(before.status, "running")
        const stopped = Schema.decodeUnknownSync(Schema.parseJson(Schema.Struct({ status: Schema.String })))(
          await mcp.call("cancel_research", { sessionId })
        )
        assert.strictEqual(stopped.status, "cancelled")
        assert.strictEqual(
          Schema.decodeUnknownSync(Phase)(await mcp.call("get_status", { sessionId })).status,
          "cancelled"
        )
        const resumed = decodeStarted(await mcp.call("resume_research", { sessionId }))
        assert.strictEqual(resumed.sessionId, sessionId)
        assert.strictEqual((await mcp.settle(sessionId)).status, "completed")
        assert.match(await mcp.call("get_report", { sessionId }), /\[1\]/)
        const again = await mcp.client.callTool({ name: "resume_research", arguments: { sessionId } })
        assert.isTrue(again.isError)
      } finally {
        await mcp.client.close()
        await setLatency(0)
      }
    })

    it("a clarification question waits for answer_clarification, and the answer reaches the research", async () => {
      const box = sandbox(emulatorEnv())
      await Effect.runPromise(
        emulator.enqueue(
          "openai.chat",
          Emulator.openaiJson({ needClarification: true, question: "Which country do you mean?", verification: "" })
        )
      )
      const mcp = await connect(box, ["--model", "openai:emulated-model", "--search", "tavily"])
      try {
        const sessionId = await mcp.start("What is the income tax rate?")
        const waiting = await mcp.settle(sessionId)
        assert.strictEqual(waiting.status, "awaiting_clarification")
        assert.strictEqual(waiting.clarificationQuestion, "Which country do you mean?")
        await mcp.call("answer_clarification", { sessionId, answer: "Norway, for residents" })
        assert.strictEqual((await mcp.settle(sessionId)).status, "completed")
        const requests = await Effect.runPromise(emulator.requests("openai.chat"))
        assert.isTrue(requests.some((request) => JSON.stringify(request.body).includes("Norway, for residents")))
      } finally {
        await mcp.client.close()
      }
    })
  })
})
