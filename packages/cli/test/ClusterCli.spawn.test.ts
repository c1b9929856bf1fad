/**
 * The CLI over a cluster, as a user drives it: a `deep-research worker` runs on the database, and `deep-research
 * "<question>" --database URL` sends the question to it and follows the run to a report written here; `--detach`
 * prints the id and returns; `resume` of a finished session writes its report again; `continue` goes deeper on the
 * worker, and `ask` answers in the process that asked. The worker is a process of
 * its own (the built CLI), started once for the file; the user's commands run in this process
 * (`support/inProcess.ts`). The models and search are the vendors' emulator in this process; the database is a real
 * PostgreSQL server when DEEP_RESEARCH_TEST_DATABASE_URL is set, else PGlite served over the wire protocol in this
 * process.
 */
import { SessionStore } from "@deep-research/core"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import type * as PgDatabase from "../../providers/test/support/pgDatabase.js"
import type { Emulator } from "@deep-research/emulator"
import * as ClusterWorld from "./support/clusterWorld.js"
import { describeRun, freePort, type Running, type Sandbox, sandbox, start } from "./support/builtCli.js"
import * as InProcess from "./support/inProcess.js"

const scope = Effect.runSync(Scope.make())
let database: PgDatabase.TestDatabase
let emulator: Emulator.Handle
let store: SessionStore.Service
let box: Sandbox
let worker: Running | undefined

const inScope = <A, E>(effect: Effect.Effect<A, E, Scope.Scope>) => Effect.runPromise(Scope.extend(effect, scope))

/** The research options every command here is given: the emulator's model and search, no clarification. */
const research = ["--model", "openai:emulated-model", "--search", "tavily", "--no-clarify", "--max-rounds", "2"]

beforeAll(async () => {
  const world = await inScope(ClusterWorld.make)
  database = world.database
  emulator = world.emulator
  store = world.store
  box = sandbox(world.env)
}, 120_000)

/** Runs a user's command in this process, in the sandbox's folder and environment. */
const run = (box: Sandbox, args: ReadonlyArray<string>) =>
  InProcess.run(args, { cwd: box.dir, env: box.env }).then((ran) => ({ ...ran, signal: null }))

/** Starts the worker, once, and waits until it serves its shards. */
const startWorker = async () => {
  if (worker !== undefined) return
  const port = await freePort()
  worker = start(box, ["worker", "--database", database.url, "--port", String(port), ...research])
  const deadline = Date.now() + 60_000
  while (!worker.output().stderr.includes("worker ready")) {
    if (Date.now() > deadline || worker.child.exitCode !== null) {
      throw new Error(`the worker did not start:\n${worker.output().stderr.slice(-3000)}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

/** The session's status in the store; `sent` until a runner has started it. */
const statusOf = (sessionId: string) =>
  Effect.runPromise(
    store.load(sessionId).pipe(
      Effect.map((session) => session.status),
      Effect.catchTag("ResearchSessionNotFound", () => Effect.succeed("sent"))
    )
  )

const completion = async (sessionId: string) => {
  const deadline = Date.now() + 90_000
  while ((await statusOf(sessionId)) !== "completed") {
    assert.isBelow(Date.now(), deadline, `session ${sessionId} completes on the worker`)
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
  return Effect.runPromise(store.load(sessionId))
}

afterAll(async () => {
  worker?.child.kill("SIGTERM")
  await worker?.done
  await Effect.runPromise(Scope.close(scope, Exit.void))
}, 60_000)

describe("deep-research with --database and a worker", () => {
  it("a session sent before any worker runs is created when it was sent, once a worker starts it", async () => {
    const before = Date.now()
    const detached = await run(box, ["--database", database.url, ...research, "--detach", "What waited for a worker?"])
    assert.strictEqual(detached.code, 0, describeRun(detached))
    const sessionId = detached.stdout.trim()
    await new Promise((resolve) => setTimeout(resolve, 1_500))
    const workerStarted = Date.now()
    await startWorker()
    const session = await completion(sessionId)
    assert.isAtLeast(session.createdAt, before)
    assert.isBelow(session.createdAt, workerStarted, "its creation is its sending, not its start")
    assert.isAtLeast(session.updatedAt, workerStarted)
  }, 120_000)

  it("a question is sent to the cluster and followed to a report written here, with the run's summary", async () => {
    await startWorker()
    const result = await run(box, ["--database", database.url, ...research, "How do tides work?"])
    assert.strictEqual(result.code, 0, describeRun(result))
    const [reportLine, sessionLine, sourcesLine] = result.stdout.trim().split("\n").slice(-3)
    const sessionId = /^Session: (\S+) \(in the database\)$/.exec(sessionLine ?? "")?.[1]
    assert.isDefined(sessionId, result.stdout)
    const out = /^Report: (.+)$/.exec(reportLine ?? "")?.[1] ?? ""
    assert.strictEqual(out, nodePath.join(box.dir, `deep-research-${sessionId}.md`))
    const stored = await Effect.runPromise(store.load(sessionId ?? ""))
    assert.strictEqual(stored.status, "completed")
    assert.strictEqual(fs.readFileSync(out, "utf8"), stored.report?.markdown)
    assert.match(sourcesLine ?? "", new RegExp(`^Sources: ${stored.sources.length}, citations: \\d+, tokens: \\d+`))
    assert.include(result.stderr, "phase synthesis", "the progress was followed")
  }, 120_000)

  it("--detach prints the id and returns; the worker runs it; resume of the finished session writes its report", async () => {
    await startWorker()
    const detached = await run(box, ["--database", database.url, ...research, "--detach", "Why is the sky blue?"])
    assert.strictEqual(detached.code, 0, describeRun(detached))
    const sessionId = detached.stdout.trim()
    assert.match(sessionId, /^dr-[\w-]+$/)
    await completion(sessionId)
    const resumed = await run(box, ["resume", sessionId, "--database", database.url, "--out", "again.md"])
    assert.strictEqual(resumed.code, 0, describeRun(resumed))
    assert.include(resumed.stdout, `Report: ${nodePath.join(box.dir, "again.md")}`)
    const stored = await Effect.runPromise(store.load(sessionId))
    assert.strictEqual(fs.readFileSync(nodePath.join(box.dir, "again.md"), "utf8"), stored.report?.markdown)
  }, 120_000)
  it("continue goes deeper on the worker and is followed to a new report version; ask answers here", async () => {
    await startWorker()
    const detached = await run(box, ["--database", database.url, ...research, "--detach", "How do tides work?"])
    assert.strictEqual(detached.code, 0, describeRun(detached))
    const sessionId = detached.stdout.trim()
    await completion(sessionId)
    const direction = "Tidal energy: how much power tides can give"
    const continued = await run(box, ["continue", sessionId, direction, "--database", database.url, "--rounds", "1"])
    assert.strictEqual(continued.code, 0, describeRun(continued))
    assert.include(continued.stdout, `Session ${sessionId} sent to the cluster to go deeper`)
    assert.include(worker?.output().stderr ?? "", `cluster: session ${sessionId} going deeper`)
    const deeper = await Effect.runPromise(store.load(sessionId))
    assert.strictEqual(deeper.status, "completed")
    assert.deepStrictEqual(
      deeper.continuations.map((c) => c.direction),
      [direction]
    )
    assert.strictEqual(deeper.reportVersions.length, 1)
    const asked = await run(box, [
      "ask",
      sessionId,
      "What key figures do the sources give on tides?",
      "--database",
      database.url,
      ...research
    ])
    assert.strictEqual(asked.code, 0, describeRun(asked))
    assert.strictEqual((await Effect.runPromise(store.load(sessionId))).answers.length, 1)
  }, 120_000)
  // Last: it stops the worker.
  it("a worker stopped while it runs a session says that it stops, and warns of nothing", async () => {
    await startWorker()
    const running = worker
    if (running === undefined) return assert.fail("no worker")
    // Slow vendors: the session still runs when the worker is told to stop.
    await Effect.runPromise(emulator.setLatency("all", "300 millis"))
    const detached = await run(box, ["--database", database.url, ...research, "--detach", "What outlives its worker?"])
    assert.strictEqual(detached.code, 0, describeRun(detached))
    const sessionId = detached.stdout.trim()
    const deadline = Date.now() + 60_000
    while (!running.output().stderr.includes(`cluster: session ${sessionId} running`)) {
      assert.isBelow(Date.now(), deadline, running.output().stderr)
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    running.child.kill("SIGTERM")
    const stopped = await running.done
    worker = undefined
    await Effect.runPromise(emulator.setLatency("all", 0))
    assert.include(stopped.stderr, "worker stopping: handing its shards over")
    assert.notInclude(stopped.stderr, "No healthy runners available")
    assert.notInclude(stopped.stderr, "DeprecationWarning")
  }, 120_000)
})
