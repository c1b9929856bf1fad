/**
 * `deep-research serve --database URL`, `mcp --database URL` and the CLI while their database is unreachable: the
 * database (PGlite in this process, or the server `DEEP_RESEARCH_TEST_DATABASE_URL` names) is reached through a TCP
 * proxy on loopback that the test closes and opens again. Every answer that needs the database says, in the same
 * sentence, which database (its address, never its password) and why; health is a 503; nothing is a bare 500.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as PgDatabase from "../../providers/test/support/pgDatabase.js"
import * as TcpProxy from "../../providers/test/support/tcpProxy.js"
import { program } from "../src/main.js"
import { connected } from "./McpHarness.js"
import { post, request, servedKeyless } from "./ServeHarness.js"

/** What a program wrote on stderr, and its exit code. */
const saidOnStderr = <E>(run: Effect.Effect<number, E>) =>
  Effect.gen(function* () {
    const lines: Array<string> = []
    const write = process.stderr.write.bind(process.stderr)
    process.stderr.write = (chunk: string | Uint8Array) => {
      lines.push(String(chunk))
      return true
    }
    const code = yield* Effect.ensuring(
      run,
      Effect.sync(() => void (process.stderr.write = write))
    )
    return { code, said: lines.join("") }
  })

/** Asks `url` until it answers 200. */
const recovered = (url: string) =>
  Effect.gen(function* () {
    for (let asked = 0; asked < 600; asked++) {
      if ((yield* request(url)).status === 200) return
      yield* Effect.sleep("50 millis")
    }
    return yield* Effect.dieMessage(`${url} never answered 200 again`)
  })

/** The database behind a proxy, with a password in its URL (which no message may show). */
const database = Effect.gen(function* () {
  const db = yield* PgDatabase.make
  const target = new URL(db.url)
  if (target.password === "") target.password = "hunter2-not-shown"
  return yield* TcpProxy.make(target)
})

describe("the database goes away while serve --database runs", () => {
  it.scopedLive(
    "health and every route that needs it answer 503 naming the database and why; back, they recover",
    () =>
      Effect.gen(function* () {
        const db = yield* database
        const s = yield* servedKeyless(db.url)
        const mcp = yield* connected({ database: db.url })
        assert.strictEqual((yield* request(`${s.url}/api/health`)).status, 200)
        yield* db.close
        const health = yield* request(`${s.url}/api/health`)
        assert.strictEqual(health.status, 503, health.text)
        const said: string = JSON.parse(health.text).message
        const address = new URL(db.url)
        address.password = ""
        assert.match(said, new RegExp(`^cannot use the session database at ${address.toString()}: .+`))
        assert.notInclude(said, "hunter2")
        const answers = [
          yield* request(`${s.url}/api/sessions`),
          yield* request(`${s.url}/api/sessions/dr-20250101-000000-abcdef`),
          yield* post(`${s.url}/api/sessions`, { question: "How do tides work?" })
        ]
        for (const answer of answers) {
          assert.strictEqual(answer.status, 503, answer.text)
          assert.strictEqual(JSON.parse(answer.text).message, said)
        }
        const chat = yield* post(`${s.url}/v1/chat/completions`, {
          model: "deep-research",
          messages: [{ role: "user", content: "How do tides work?" }]
        })
        assert.strictEqual(chat.status, 503, chat.text)
        assert.strictEqual(JSON.parse(chat.text).error.message, said)
        // MCP's tools and the CLI say the same.
        assert.strictEqual(yield* mcp.call("list_sessions", {}), said)
        assert.strictEqual(yield* mcp.call("get_status", { sessionId: "dr-20250101-000000-abcdef" }), said)
        const cli = yield* saidOnStderr(program(["list", "--database", db.url]))
        assert.include(cli.said, said)
        assert.notStrictEqual(cli.code, 0)
        // Back, it is used again, health first: an outage found is told for a moment without asking again.
        yield* db.open
        yield* recovered(`${s.url}/api/health`)
        assert.strictEqual((yield* request(`${s.url}/api/sessions`)).status, 200)
      }),
    120_000
  )
})
