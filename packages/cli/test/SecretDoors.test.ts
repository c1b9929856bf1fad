/**
 * No secret leaves by any door: the API token (44 characters) and a key for every vendor, put in a question (whole,
 * cut short, URL-encoded, quoted) and in bad fields, through the CLI (`--json`, the plain lines, `--out`, refusals),
 * `/api`, `/v1` and `/mcp` of `deep-research serve`; then every stream, answer, log line and stored file is searched
 * for each secret's shortest identifying prefix. The stdio MCP server is `SecretDoors.spawn.test.ts`.
 */
import { assert, describe, it } from "@effect/vitest"
import { CallToolResultSchema, CreateTaskResultSchema } from "@modelcontextprotocol/sdk/types.js"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { connectedOver } from "./McpHttpHarness.js"
import { post, request, served, settled } from "./ServeHarness.js"
import { describeRan, run, tempDir } from "./support/inProcess.js"
import * as Fake from "./support/secrets.js"

const simulated = (dir: string) => [
  "--simulate",
  "--no-clarify",
  "--max-rounds",
  "1",
  "--store",
  nodePath.join(dir, "store")
]

/** The CLI in this process, with every secret in its environment. */
const cli = (dir: string, args: ReadonlyArray<string>) =>
  run(args, { cwd: dir, env: { ...Fake.environment, HOME: dir } })

describe("no secret leaves by the CLI", () => {
  it("a simulated run with --json and --out: its event stream, stderr, report and stored files hold none", async () => {
    const dir = tempDir()
    const out = nodePath.join(dir, "report.md")
    const ran = await cli(dir, ["run", Fake.question, ...simulated(dir), "--json", "--out", out])
    assert.strictEqual(ran.code, 0, describeRan(ran))
    // The question was researched, with the secrets' places said.
    assert.include(ran.stdout, "SessionStarted")
    assert.include(ran.stdout, "[redacted]")
    assert.deepStrictEqual(
      [...Fake.leaks("stdout", ran.stdout), ...Fake.leaks("stderr", ran.stderr), ...Fake.leaksInFiles(dir)],
      []
    )
  })

  it("a simulated run's plain progress lines and summary hold none", async () => {
    const dir = tempDir()
    const ran = await cli(dir, ["run", Fake.question, ...simulated(dir), "--out", nodePath.join(dir, "out") + "/"])
    assert.strictEqual(ran.code, 0, describeRan(ran))
    assert.include(ran.stderr, "session ")
    assert.deepStrictEqual(
      [...Fake.leaks("stdout", ran.stdout), ...Fake.leaks("stderr", ran.stderr), ...Fake.leaksInFiles(dir)],
      []
    )
  })

  it("a corpus whose documents hold every secret: its index on disk, the run's streams, report and store hold none", async () => {
    const dir = tempDir()
    // The user's folder, outside the searched one: its own file holds the secrets, as a `.env` copied there would.
    const corpus = tempDir()
    fs.writeFileSync(
      nodePath.join(corpus, "tides.md"),
      `# Tides\n\nThe Moon's pull raises the tides; spring tides come at new and full moon.\n\n${Fake.question}\n`
    )
    const ran = await cli(dir, [
      "run",
      "How do tides work, and what are spring tides?",
      ...simulated(dir),
      "--corpus",
      corpus,
      "--search",
      "local",
      "--json",
      "--out",
      nodePath.join(dir, "report.md")
    ])
    assert.strictEqual(ran.code, 0, describeRan(ran))
    assert.isNotEmpty(fs.readdirSync(nodePath.join(dir, "store", "corpus-index")))
    assert.deepStrictEqual(
      [...Fake.leaks("stdout", ran.stdout), ...Fake.leaks("stderr", ran.stderr), ...Fake.leaksInFiles(dir)],
      []
    )
  })

  it("what it says of arguments holding a secret (refused or not) holds none", async () => {
    const dir = tempDir()
    const refusals = [
      ["run", "How do tides work?", ...simulated(dir), "--max-rounds", Fake.token],
      ["run", "How do tides work?", ...simulated(dir), "--model", `openai:${Fake.keys.OPENAI_API_KEY}`],
      ["run", "How do tides work?", ...simulated(dir), "--search", Fake.keys.TAVILY_API_KEY],
      ["show", Fake.token, "--store", nodePath.join(dir, "store")],
      ["resume", Fake.keys.ANTHROPIC_API_KEY, "--answer", Fake.token, ...simulated(dir)]
    ]
    for (const args of refusals) {
      const ran = await cli(dir, args)
      assert.deepStrictEqual([...Fake.leaks("stdout", ran.stdout), ...Fake.leaks("stderr", ran.stderr)], [])
    }
    assert.deepStrictEqual(Fake.leaksInFiles(dir), [])
  })
})

/** What a test's server wrote on stderr (its log lines) while `effect` ran; the writes still go through. */
const stderrOf = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.suspend(() => {
    let written = ""
    const original = process.stderr.write
    const capture = function (this: unknown, chunk: unknown, ...rest: Array<unknown>): boolean {
      written += typeof chunk === "string" ? chunk : chunk instanceof Uint8Array ? Buffer.from(chunk).toString() : ""
      return Reflect.apply(original, process.stderr, [chunk, ...rest])
    }
    return Effect.acquireUseRelease(
      Effect.sync(() => Reflect.set(process.stderr, "write", capture)),
      () => Effect.map(effect, (value) => ({ value, stderr: () => written })),
      () => Effect.sync(() => Reflect.set(process.stderr, "write", original))
    )
  })

const auth = { authorization: `Bearer ${Fake.token}` }
const mcpHeaders = { ...auth, accept: "application/json, text/event-stream" }
const SessionId = Schema.parseJson(Schema.Struct({ sessionId: Schema.String }))

describe("no secret leaves by deep-research serve", () => {
  it.scopedLive(
    "/api, /v1 and /mcp: a question holding every secret and bad fields that do; no answer, log line or file holds one",
    () =>
      Effect.gen(function* () {
        const answers: Array<string> = []
        const said = <A extends { readonly text: string }>(answer: A) => {
          answers.push(answer.text)
          return answer
        }
        const { stderr, value: store } = yield* stderrOf(
          Effect.gen(function* () {
            const s = yield* served({ noClarify: true, maxRounds: 1 }, { token: Redacted.make(Fake.token) }, Fake.keys)
            const api = `${s.url}/api/sessions`
            // The question through /api, followed to its end and read back every way.
            const created = said(yield* post(api, { question: Fake.question }, auth))
            assert.strictEqual(created.status, 202, created.text)
            const { sessionId } = Schema.decodeUnknownSync(SessionId)(created.text)
            yield* settled(s.url, sessionId, auth)
            for (const path of ["", "/events", "/report", "/sources"]) {
              said(yield* request(`${api}/${sessionId}${path}`, { headers: auth }))
            }
            said(yield* request(api, { headers: auth }))
            // Bad fields and ids holding secrets: each refusal says why, with [redacted] in a secret's place.
            const refusals = [
              yield* post(api, { question: "How do tides work?", concurrency: Fake.token }, auth),
              yield* post(api, { question: "How do tides work?", maxRounds: Fake.keys.OPENAI_API_KEY }, auth),
              yield* post(api, { question: "How do tides work?", [Fake.keys.ANTHROPIC_API_KEY]: 1 }, auth),
              yield* post(api, { question: "How do tides work?", budgetUsd: Fake.keys.TAVILY_API_KEY }, auth),
              yield* request(`${api}/${Fake.token}`, { headers: auth }),
              yield* request(`${api}/${sessionId}/events?after=${Fake.keys.EXA_API_KEY}`, { headers: auth }),
              yield* post(`${api}/${Fake.keys.PERPLEXITY_API_KEY}/answer`, { answer: Fake.token }, auth),
              yield* request(`${s.url}/nothing/${Fake.token}`, { headers: auth }),
              yield* post(
                `${s.url}/v1/chat/completions`,
                { model: Fake.keys.OPENAI_API_KEY, messages: [{ role: "user", content: "How do tides work?" }] },
                auth
              ),
              yield* post(`${s.url}/v1/chat/completions`, { model: "deep-research", messages: Fake.token }, auth)
            ]
            for (const refusal of refusals) {
              said(refusal)
              assert.include([400, 404, 405], refusal.status, refusal.text)
            }
            // Each refusal quotes the secret it was sent, as [redacted].
            assert.deepStrictEqual(
              refusals.filter((refusal) => !refusal.text.includes("[redacted]")).map((refusal) => refusal.text),
              []
            )
            // The question through /v1, answered with its report.
            const completion = said(
              yield* post(
                `${s.url}/v1/chat/completions`,
                { model: "deep-research", messages: [{ role: "user", content: Fake.question }] },
                auth
              )
            )
            assert.strictEqual(completion.status, 200, completion.text)
            // The question through /mcp, as a plain call, as a task, and bad arguments and ids.
            const { mcp } = yield* connectedOver(s.url, auth)
            const call = (name: string, args: Record<string, unknown>) =>
              Effect.map(
                Effect.promise(() => mcp.callTool({ name, arguments: args }, CallToolResultSchema)),
                (result) => JSON.stringify(result)
              )
            answers.push(yield* call("research", { question: Fake.question, maxRounds: 1 }))
            answers.push(yield* call("start_research", { question: "How do tides work?", concurrency: Fake.token }))
            answers.push(yield* call("get_status", { sessionId: Fake.token }))
            answers.push(yield* call("get_report", { sessionId: Fake.keys.ANTHROPIC_API_KEY }))
            answers.push(yield* call("list_sessions", {}))
            const unknown = yield* Effect.either(
              Effect.tryPromise(() => mcp.callTool({ name: Fake.keys.OPENAI_API_KEY, arguments: {} }))
            )
            answers.push(String(unknown._tag === "Left" ? unknown.left : ""))
            const task = yield* Effect.promise(() =>
              mcp.request(
                {
                  method: "tools/call",
                  params: { name: "research", arguments: { question: Fake.question, maxRounds: 1 }, task: {} }
                },
                CreateTaskResultSchema
              )
            )
            answers.push(JSON.stringify(task))
            const notFound = yield* Effect.either(Effect.tryPromise(() => mcp.experimental.tasks.getTask(Fake.token)))
            answers.push(String(notFound._tag === "Left" ? notFound.left : ""))
            // The raw wire of /mcp too: a request whose id and method are secrets.
            const raw = yield* post(
              `${s.url}/mcp`,
              { jsonrpc: "2.0", id: Fake.token, method: Fake.keys.EXA_API_KEY },
              mcpHeaders
            )
            said(raw)
            yield* settled(s.url, /^session (\S+):/.exec(task.task.statusMessage ?? "")?.[1] ?? "", auth)
            return s.store
          })
        )
        assert.isTrue(
          answers.some((answer) => answer.includes("[redacted]")),
          "the secrets were there, and were taken out"
        )
        assert.deepStrictEqual(
          [
            ...answers.flatMap((answer, i) => Fake.leaks(`answer ${i}`, answer)),
            ...Fake.leaks("stderr", stderr()),
            ...Fake.leaksInFiles(store)
          ],
          []
        )
      }),
    120_000
  )
})
