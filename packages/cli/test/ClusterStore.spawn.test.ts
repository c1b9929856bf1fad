/**
 * The commands that read and act on sessions (list, show, evaluate, delete) with `--database`: they go through the
 * PostgreSQL store, never the files. The database is a real PostgreSQL server when DEEP_RESEARCH_TEST_DATABASE_URL is
 * set, else PGlite served over the wire protocol in this process. The commands run in this process
 * (`support/inProcess.ts`), but for `mcp`, whose input is the built CLI's stdin.
 */
import { Session, SessionStore } from "@deep-research/core"
import { SqlSessionStore } from "@deep-research/providers"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Scope from "effect/Scope"
import * as nodePath from "node:path"
import * as PgDatabase from "../../providers/test/support/pgDatabase.js"
import { describeRun, runWithInput, type Sandbox, sandbox } from "./support/builtCli.js"
import * as InProcess from "./support/inProcess.js"

const fileScope = Effect.runSync(Scope.make())
let database: PgDatabase.TestDatabase | undefined

beforeAll(async () => {
  database = await Effect.runPromise(Scope.extend(PgDatabase.make, fileScope))
}, 60_000)

afterAll(() => Effect.runPromise(Scope.close(fileScope, Exit.void)))

/** Runs the command in this process, in the sandbox's folder and environment. */
const run = (box: Sandbox, args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  InProcess.run(args, { cwd: box.dir, env: { ...box.env, ...env } }).then((ran) => ({ ...ran, signal: null }))

const url = () => {
  if (database === undefined) throw new Error("the test database did not start")
  return database.url
}

/** Runs `f` with the PostgreSQL store of the test database, as a library user would open it. */
const withPg = <A, E>(f: (store: SessionStore.Service) => Effect.Effect<A, E>) =>
  Effect.runPromise(
    Effect.scoped(
      Effect.flatMap(Layer.build(SqlSessionStore.layerPostgres(Redacted.make(url()))), (context) =>
        f(Context.get(context, SessionStore.SessionStore))
      )
    )
  )

describe("deep-research with --database", () => {
  it("list, show, evaluate and delete act on the sessions in the database", async () => {
    // A real session, made by a simulated run in a folder, then put in the database.
    const box = sandbox()
    const made = await run(box, ["--simulate", "--no-clarify", "--json", "How do heat pumps work?"])
    assert.strictEqual(made.code, 0, describeRun(made))
    const files = SqlSessionStore.layerSqlite(nodePath.join(box.dir, "store", "deep-research.db"))
    const [session] = await Effect.runPromise(
      Effect.flatMap(SessionStore.SessionStore, (store) =>
        Effect.flatMap(store.list, (list) => Effect.forEach(list, (summary) => store.load(summary.id)))
      ).pipe(Effect.provide(files))
    )
    if (session === undefined) return assert.fail("the simulated run saved no session")
    await withPg((store) => store.save(session))

    // Without --database the files are used: an empty folder here.
    const elsewhere = sandbox()
    const listedFiles = await run(elsewhere, ["list", "--json"])
    assert.notInclude(listedFiles.stdout, session.id)

    const listed = await run(elsewhere, ["list", "--json", "--database", url()])
    assert.strictEqual(listed.code, 0, describeRun(listed))
    assert.include(listed.stdout, session.id)
    const shown = await run(elsewhere, ["show", session.id, "--database", url()])
    assert.strictEqual(shown.code, 0, describeRun(shown))
    assert.include(shown.stdout, session.report?.markdown.slice(0, 60) ?? "no report")

    const evaluated = await run(elsewhere, ["evaluate", session.id, "--simulate"], {
      DEEP_RESEARCH_DATABASE_URL: url()
    })
    assert.strictEqual(evaluated.code, 0, describeRun(evaluated))
    assert.include(evaluated.stdout, "deep_research_artefacts")
    const kept = await withPg((store) => store.artefact(session.id, "evaluation.json"))
    assert.isTrue(Option.isSome(kept))
    assert.include(
      Option.getOrElse(kept, () => ""),
      session.id
    )

    const deleted = await run(elsewhere, ["delete", session.id, "--database", url()])
    assert.strictEqual(deleted.code, 0, describeRun(deleted))
    const gone = await withPg((store) => Effect.flip(store.load(session.id)))
    assert.strictEqual(gone._tag, "ResearchSessionNotFound")
    assert.strictEqual(Session.currentVersion, session.version)
  })

  it("a session sent without a key while no worker runs is listed, shown and followed as queued, and can be deleted", async () => {
    const box = sandbox(database?.kind === "pglite" ? { DEEP_RESEARCH_SHARD_LOCKS: "table" } : {})
    // No key: the workers have the models and the search, a client needs none.
    const sent = await run(box, ["--database", url(), "--detach", "What waits for a runner?"])
    assert.strictEqual(sent.code, 0, describeRun(sent))
    const id = sent.stdout.trim()
    assert.match(id, /^dr-[\w-]+$/)

    const listed = await run(box, ["list", "--json", "--database", url()])
    assert.strictEqual(listed.code, 0, describeRun(listed))
    const queued = listed.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line))
      .find((summary) => summary.id === id)
    assert.deepInclude(queued, { status: "queued", query: "What waits for a runner?", costUsd: 0 })
    assert.approximately(queued.createdAt, Date.now(), 120_000)

    const shown = await run(box, ["show", id, "--database", url()])
    assert.strictEqual(shown.code, 0, describeRun(shown))
    assert.include(shown.stdout, `Session ${id} · queued`)
    assert.include(shown.stdout, "Question: What waits for a runner?")
    assert.include(shown.stdout, "Waiting for a runner")

    // Resumed, it is followed until a worker starts it; an answer is refused, since it has asked nothing yet.
    const answered = await run(box, ["resume", id, "--answer", "Norway", "--database", url()])
    assert.strictEqual(answered.code, 2, describeRun(answered))
    assert.include(answered.stderr, `The session ${id} is queued`)
    const following = InProcess.start(["resume", id, "--database", url()], { cwd: box.dir, env: box.env })
    let ended: InProcess.Ran | undefined
    void following.done.then((ran) => (ended = ran))
    const deadline = Date.now() + 60_000
    while (!following.output().stdout.includes(`Session ${id} is queued until a worker starts it; following it.`)) {
      assert.isBelow(Date.now(), deadline, describeRun({ code: null, signal: null, ...following.output() }))
      assert.isUndefined(ended, describeRun({ code: null, signal: null, ...following.output() }))
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    await following.interrupt()

    const deleted = await run(box, ["delete", id, "--database", url()])
    assert.strictEqual(deleted.code, 0, describeRun(deleted))
    const gone = await run(box, ["show", id, "--database", url()])
    assert.strictEqual(gone.code, 2, describeRun(gone))
    assert.include(gone.stderr, `No session with id ${id}`)
    const relisted = await run(box, ["list", "--json", "--database", url()])
    assert.notInclude(relisted.stdout, id)
  }, 120_000)

  it("mcp --database without a key: a client that sends its requests and closes its input gets every answer", async () => {
    const box = sandbox(database?.kind === "pglite" ? { DEEP_RESEARCH_SHARD_LOCKS: "table" } : {})
    const call = (id: number, name: string, args: Record<string, unknown>) => ({
      jsonrpc: "2.0",
      id,
      method: "tools/call",
      params: { name, arguments: args }
    })
    const requests = [
      {
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } }
      },
      { jsonrpc: "2.0", method: "notifications/initialized" },
      call(2, "list_sessions", {}),
      call(3, "get_status", { sessionId: "dr-nobody" })
    ]
    const ran = await runWithInput(
      box,
      ["mcp", "--database", url()],
      requests.map((request) => `${JSON.stringify(request)}\n`).join("")
    )
    assert.strictEqual(ran.code, 0, describeRun(ran))
    const answers = ran.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { id: number; result?: { isError?: boolean } })
    assert.deepStrictEqual(
      answers.map((answer) => [answer.id, answer.result?.isError ?? false]).sort(),
      [
        [1, false],
        [2, false],
        [3, true]
      ],
      ran.stdout
    )
  }, 60_000)

  it("an unreachable database is one clear line and exit 2, without the password", async () => {
    const box = sandbox()
    const listed = await run(box, ["list", "--database", "postgres://someone:hunter22@127.0.0.1:1/nowhere"])
    assert.strictEqual(listed.code, 2, describeRun(listed))
    assert.include(listed.stderr, "cannot use the session database at postgres://someone@127.0.0.1:1/nowhere")
    assert.notInclude(listed.stderr + listed.stdout, "hunter22")
  })
})
