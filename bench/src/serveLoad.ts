/**
 * Benchmark 7: a burst of sessions at `deep-research serve --simulate` (the built CLI, in a process of its own, over a
 * fresh store), as an operator's clients would send them: `--sessions` POSTs to `/api/sessions` at once. Reports
 * each 202's latency (every session is stored, committed, before its 202), `/api/health`'s latency polled one request
 * after the other from the burst to the last completion, and how many sessions completed. Then, in this process, the
 * price of the acknowledgement's durability alone: the same number of `Pipeline.enqueue` at once on the SQLite store
 * on the same disk, as the CLI keeps it (each a committed transaction, synchronous=FULL), against the in-memory store.
 * Usage: node bench/dist/serveLoad.js [--sessions N] [--max-sessions N] [--timeout-seconds S] [--bin FILE]
 *        [--cpu-prof FOLDER] (the server's CPU profile, written to FOLDER when it stops)
 */
import { Pipeline, SessionStore } from "@deep-research/core"
import { MemorySessionStore } from "@deep-research/core/testing"
import { SqlSessionStore } from "@deep-research/providers"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import * as http from "node:http"
import * as os from "node:os"
import * as path from "node:path"
import { performance } from "node:perf_hooks"
import { fileURLToPath } from "node:url"
import * as Measure from "./Measure.js"

const argument = (name: string, fallback: number): number => {
  const at = process.argv.indexOf(name)
  return at >= 0 ? Number(process.argv[at + 1]) : fallback
}
const sessions = argument("--sessions", 200)
/** The server's `--max-sessions`; 0 for none. */
const maxSessions = argument("--max-sessions", 0)
const timeoutMillis = argument("--timeout-seconds", 900) * 1_000
/** A health check that takes longer than this counts as timed out (as a load balancer's would). */
const healthTimeoutMillis = 10_000

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..")
/** `--bin FILE`: another build's `deep-research.js` (an earlier commit's, to compare); this checkout's by default. */
const binArg = process.argv.indexOf("--bin")
const bin =
  binArg >= 0
    ? path.resolve(process.argv[binArg + 1] ?? "")
    : path.join(root, "packages", "cli", "bin", "deep-research.js")

const percentile = (values: ReadonlyArray<number>, p: number): number => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN
}

const summary = (values: ReadonlyArray<number>) => ({
  count: values.length,
  p50Millis: Measure.round(percentile(values, 50), 1),
  p99Millis: Measure.round(percentile(values, 99), 1),
  maxMillis: Measure.round(Math.max(...values), 1)
})

const sleep = (millis: number) => new Promise<void>((resolve) => setTimeout(resolve, millis))

const profileArg = process.argv.indexOf("--cpu-prof")
const profileFolder = profileArg >= 0 ? path.resolve(process.argv[profileArg + 1] ?? ".") : undefined

/** Starts the server and gives its URL once it says where it listens. */
const startServer = async (home: string): Promise<{ readonly child: ChildProcess; readonly url: string }> => {
  const args = [
    ...(profileFolder === undefined ? [] : ["--cpu-prof", "--cpu-prof-dir", profileFolder]),
    bin,
    "serve",
    "--simulate",
    "--no-clarify",
    "--port",
    "0"
  ]
  if (maxSessions > 0) args.push("--max-sessions", String(maxSessions))
  const child = spawn(process.execPath, args, {
    env: { PATH: process.env["PATH"] ?? "", HOME: home, DEEP_RESEARCH_HOME: path.join(home, "store"), NO_COLOR: "1" },
    stdio: ["ignore", "ignore", "pipe"]
  })
  let stderr = ""
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
  for (let waited = 0; waited < 600; waited++) {
    const url = /(http:\/\/127\.0\.0\.1:\d+)\//.exec(stderr)?.[1]
    if (url !== undefined) return { child, url }
    if (child.exitCode !== null) break
    await sleep(100)
  }
  child.kill("SIGKILL")
  throw new Error(`serve did not start:\n${stderr.slice(-2000)}`)
}

/** One `GET` over `agent`: its status, or a failure (`TimeoutError` after `healthTimeoutMillis`). */
const get = (url: string, agent: http.Agent) =>
  new Promise<number>((resolve, reject) => {
    const request = http.get(url, { agent, signal: AbortSignal.timeout(healthTimeoutMillis) }, (response) => {
      response.resume()
      response.once("end", () => resolve(response.statusCode ?? 0))
      response.once("error", reject)
    })
    request.once("error", (error) =>
      reject(error.name === "AbortError" ? Object.assign(error, { name: "TimeoutError" }) : error)
    )
  })

/**
 * `/api/health` asked one request after the other until `stop` is set, as a load balancer would: a client of its own,
 * on its own kept-alive connection (over this process's `fetch`, its probes shared a connection pool with the burst,
 * and the 202s measured that pool's queue: p99 2.3 s where the server took 0.9 s). Each answer's latency, and the
 * timeouts.
 */
const pollHealth = (url: string, stop: { done: boolean }) => {
  const latencies: Array<number> = []
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  let timeouts = 0
  let failures = 0
  const running = (async () => {
    while (!stop.done) {
      const start = performance.now()
      try {
        const status = await get(`${url}/api/health`, agent)
        if (status === 200) latencies.push(performance.now() - start)
        else failures++
      } catch (error) {
        if (error instanceof Error && error.name === "TimeoutError") timeouts++
        else failures++
      }
      await sleep(100)
    }
    agent.destroy()
  })()
  return { latencies, done: running, timeouts: () => timeouts, failures: () => failures }
}

const postSession = async (url: string, i: number) => {
  const start = performance.now()
  const response = await fetch(`${url}/api/sessions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ question: `How do tides work, take ${i}?`, allowClarification: false })
  })
  const body: unknown = await response.json()
  const millis = performance.now() - start
  const id =
    typeof body === "object" && body !== null && "sessionId" in body && typeof body.sessionId === "string"
      ? body.sessionId
      : undefined
  return { status: response.status, millis, id }
}

/** Lists the sessions until every one is completed (or none is queued or running any more), or the time is up. */
const awaitCompleted = async (url: string, ids: ReadonlyArray<string>) => {
  const wanted = new Set(ids)
  const deadline = performance.now() + timeoutMillis
  let statuses = new Map<string, string>()
  while (performance.now() < deadline) {
    const listed: unknown = await (await fetch(`${url}/api/sessions`)).json()
    statuses = new Map(
      (Array.isArray(listed) ? listed : []).flatMap((entry: unknown) =>
        typeof entry === "object" && entry !== null && "id" in entry && "status" in entry
          ? [[String(entry.id), String(entry.status)] as const]
          : []
      )
    )
    const open = [...wanted].filter((id) => {
      const status = statuses.get(id)
      return status === undefined || status === "queued" || status === "running"
    })
    if (open.length === 0) break
    await sleep(500)
  }
  return [...wanted].filter((id) => statuses.get(id) === "completed").length
}

/**
 * `Pipeline.enqueue` of `sessions` new sessions at once on a store: each one's time, and the whole burst's; then waits
 * until every session can be locked (a journaled one has its folder), so that the next burst has the disk to itself.
 */
const enqueueBurst = (store: Layer.Layer<SessionStore.SessionStore>) =>
  Effect.gen(function* () {
    const start = performance.now()
    const each = yield* Effect.forEach(
      Array.from({ length: sessions }, (_, i) => i),
      (i) =>
        Effect.suspend(() => {
          const begun = performance.now()
          return Effect.map(Pipeline.enqueue(`How do tides work, take ${i}?`), (session) => ({
            millis: performance.now() - begun,
            id: session.id
          }))
        }),
      { concurrency: "unbounded" }
    )
    const burstMillis = performance.now() - start
    const sessionStore = yield* SessionStore.SessionStore
    yield* Effect.forEach(each, ({ id }) => Effect.scoped(sessionStore.lock(id)), { discard: true })
    return { ...summary(each.map(({ millis }) => millis)), burstMillis: Measure.round(burstMillis, 1) }
  }).pipe(Effect.provide(store), Effect.orDie, Effect.runPromise)

const main = async () => {
  const home = mkdtempSync(path.join(os.tmpdir(), "deep-research-bench-serve-"))
  const loadBefore = os.loadavg()
  try {
    const { child, url } = await startServer(home)
    const stop = { done: false }
    const health = pollHealth(url, stop)
    await sleep(1_000)
    const burstStart = performance.now()
    const posted = await Promise.all(Array.from({ length: sessions }, (_, i) => postSession(url, i)))
    const acknowledgedMillis = performance.now() - burstStart
    const ids = posted.flatMap((post) => (post.status === 202 && post.id !== undefined ? [post.id] : []))
    const completed = await awaitCompleted(url, ids)
    const allMillis = performance.now() - burstStart
    stop.done = true
    await health.done
    // The store is removed only once the server has stopped writing it (and written its profile).
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
    child.kill("SIGTERM")
    await exited
    const folder = mkdtempSync(path.join(os.tmpdir(), "deep-research-bench-enqueue-"))
    const sqlite = await enqueueBurst(
      Layer.orDie(SqlSessionStore.layerSqlite(SqlSessionStore.databaseFile(folder), { holdAccepted: true }))
    )
    rmSync(folder, { recursive: true, force: true })
    const inMemory = await enqueueBurst(MemorySessionStore.layer)
    const result = {
      benchmark: "serveLoad",
      machine: Measure.machine(),
      loadAverageBefore: loadBefore.map((load) => Measure.round(load, 2)),
      loadAverageAfter: os.loadavg().map((load) => Measure.round(load, 2)),
      bin: path.relative(root, bin),
      command: `node packages/cli/bin/deep-research.js serve --simulate --no-clarify${maxSessions > 0 ? ` --max-sessions ${maxSessions}` : ""}`,
      sessions,
      accepted: ids.length,
      refused: posted.filter((post) => post.status !== 202).map((post) => post.status),
      acknowledgements: {
        ...summary(posted.map((post) => post.millis)),
        allMillis: Measure.round(acknowledgedMillis, 0)
      },
      health: { ...summary(health.latencies), timeouts: health.timeouts(), failures: health.failures() },
      completed,
      allCompletedSeconds: Measure.round(allMillis / 1_000, 1),
      enqueueAtOnce: { sqliteStore: sqlite, memoryStore: inMemory }
    }
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`)
  } finally {
    rmSync(home, { recursive: true, force: true })
  }
}

await main()
