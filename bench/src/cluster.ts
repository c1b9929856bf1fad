/**
 * The research cluster on a real PostgreSQL server (DEEP_RESEARCH_BENCH_DATABASE_URL, default the local server at
 * 127.0.0.1:5432; a fresh database is made for each figure and dropped after):
 *
 * 1. the PostgreSQL store's save and load beside the SQLite store's, on the same session;
 * 2. sessions per minute with 1 and 2 runners (`deep-research worker --simulate`: the emulator runs inside each
 *    worker), once the shards have settled among them; with `--load cpu` (the default) the search rate limit is lifted,
 *    so the load is the pipeline's and the emulator's CPU work, with `--load published` each runner keeps Tavily's;
 * 3. the time from a runner's `kill -9` to its sessions running again on the other runner.
 *
 * With `--pin`, runner n runs on core n only (`taskset`), as a runner on a machine of one core would: the machine's
 * other work (PostgreSQL, this process) still shares the cores with the runners.
 *
 * Usage: node bench/dist/cluster.js [--sessions N] [--only store|throughput|failover] [--load cpu|published] [--pin]
 */
import { ResearchConfig, Session, SessionStore } from "@deep-research/core"
import * as Cluster from "@deep-research/cli/Cluster"
import { SqlSessionStore } from "@deep-research/providers"
import * as SqlClient from "@effect/sql/SqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Context from "effect/Context"
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const here = path.dirname(fileURLToPath(import.meta.url))
const bin = path.resolve(here, "../../packages/cli/bin/deep-research.js")
const base = process.env["DEEP_RESEARCH_BENCH_DATABASE_URL"] ?? "postgres://postgres@127.0.0.1:5432/postgres"
const arg = (name: string) => {
  const at = process.argv.indexOf(`--${name}`)
  return at === -1 ? undefined : process.argv[at + 1]
}
const sessionsPerRun = Number(arg("sessions") ?? "24")
const only = arg("only")
/** `cpu` (the default): the search rate limit lifted, so a runner is bound by its CPU; `published`: Tavily's. */
const load = arg("load") ?? "cpu"
/** Each runner on a core of its own (runner n on core n). */
const pin = process.argv.includes("--pin")

const admin = (statement: string) =>
  Effect.runPromise(
    Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(statement)).pipe(
      Effect.provide(PgClient.layer({ url: Redacted.make(base), maxConnections: 1 }))
    )
  )

/** A fresh database for one figure. */
const withDatabase = async <A>(f: (url: string) => Promise<A>): Promise<A> => {
  const name = `deep_research_bench_${randomBytes(5).toString("hex")}`
  await admin(`CREATE DATABASE ${name}`)
  const url = new URL(base)
  url.pathname = `/${name}`
  try {
    return await f(url.toString())
  } finally {
    await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
  }
}

const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN
}

/** A session with a 40 kB question, saved and loaded as a checkpoint is. */
const sampleSession = (id: string, n: number) =>
  new Session.Session({
    version: Session.currentVersion,
    id,
    createdAt: 1_700_000_000_000,
    updatedAt: 1_700_000_000_000 + n,
    config: ResearchConfig.defaults,
    status: "running",
    query: "x".repeat(40_000),
    rounds: [],
    sources: [],
    metrics: [],
    usage: []
  })

const timeStore = async (store: SessionStore.Service, rounds: number) => {
  const saves: Array<number> = []
  const loads: Array<number> = []
  for (let n = 0; n < rounds; n++) {
    const session = sampleSession(`bench-${n % 10}`, n)
    const t0 = performance.now()
    await Effect.runPromise(store.save(session))
    const t1 = performance.now()
    await Effect.runPromise(store.load(session.id))
    loads.push(performance.now() - t1)
    saves.push(t1 - t0)
  }
  return { saveMedianMs: median(saves), loadMedianMs: median(loads) }
}

const storeFigures = () =>
  withDatabase((url) =>
    Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const postgres = Context.get(
            yield* Layer.build(SqlSessionStore.layerPostgres(Redacted.make(url))),
            SessionStore.SessionStore
          )
          const directory = fs.mkdtempSync(path.join(os.tmpdir(), "deep-research-bench-store-"))
          const files = Context.get(
            yield* Layer.build(SqlSessionStore.layerSqlite(SqlSessionStore.databaseFile(directory))),
            SessionStore.SessionStore
          )
          const pgTimes = yield* Effect.promise(() => timeStore(postgres, 200))
          const fileTimes = yield* Effect.promise(() => timeStore(files, 200))
          fs.rmSync(directory, { recursive: true, force: true })
          return { postgres: pgTimes, files: fileTimes, questionBytes: 40_000 }
        })
      )
    )
  )

// -----------------------------------------------------------------------------
// Workers
// -----------------------------------------------------------------------------

interface Worker {
  readonly child: ChildProcess
  readonly lines: Array<{ readonly line: string; readonly at: number }>
}

const startWorker = (url: string, port: number, home: string, core?: number): Worker => {
  const command = [process.execPath, bin, "worker", "--simulate", "--database", url, "--port", String(port)]
  const [program = "", ...args] =
    core === undefined ? command : ["taskset", "--cpu-list", String(core % os.cpus().length), ...command]
  const child = spawn(program, args, {
    env: { PATH: process.env["PATH"] ?? "", HOME: home, DEEP_RESEARCH_HOME: path.join(home, "store") },
    // The configuration file there lifts the search rate limit: a runner's work is then bound by its CPU alone.
    cwd: home,
    stdio: ["ignore", "ignore", "pipe"]
  })
  const lines: Array<{ line: string; at: number }> = []
  let pending = ""
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
    pending += chunk
    const parts = pending.split("\n")
    pending = parts.pop() ?? ""
    for (const line of parts) lines.push({ line, at: performance.now() })
  })
  return { child, lines }
}

const waitFor = async (check: () => boolean | Promise<boolean>, seconds: number, what: string) => {
  const deadline = Date.now() + seconds * 1000
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
}

/** Sends sessions to the cluster before any runner is up: they wait, persisted, for the runners. */
const submitAll = (url: string, home: string, count: number) => {
  for (let n = 0; n < count; n++) {
    const result = spawnSync(
      process.execPath,
      [bin, "--simulate", "--no-clarify", "--detach", "--database", url, `Question ${n}: how do heat pumps work?`],
      { env: { PATH: process.env["PATH"] ?? "", HOME: home, DEEP_RESEARCH_HOME: path.join(home, "store") } }
    )
    if (result.status !== 0) throw new Error(`submit failed: ${String(result.stderr)}`)
  }
}

/** Sends sessions from this process as a client of the cluster, as `serve --database` does: all within a second. */
const submitDirect = (url: string, ids: ReadonlyArray<string>) =>
  Effect.runPromise(
    Effect.forEach(
      ids,
      (id) => Cluster.submit(id, `Question ${id}: how do heat pumps work?`, ResearchConfig.defaults, "proceed"),
      { discard: true }
    ).pipe(Effect.provide(Cluster.clientLayer(Redacted.make(url), true)), Effect.scoped)
  )

const query = <A>(url: string, f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>, orElse: A) =>
  Effect.runPromise(
    Effect.flatMap(SqlClient.SqlClient, f).pipe(
      Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })),
      Effect.catchAll(() => Effect.succeed(orElse))
    )
  )

/** How many sessions have completed, by one query (spawning a CLI to ask would take CPU from the runners). */
const completedCount = (url: string) =>
  query(
    url,
    (sql) =>
      Effect.map(
        sql`SELECT count(*)::int AS n FROM deep_research_sessions WHERE data->>'status' = 'completed'`,
        (rows) => Number(rows[0]?.["n"] ?? 0)
      ),
    0
  )

/** How many connections of this database hold shard locks (PostgreSQL advisory locks): one per runner with shards. */
const shardHolders = (url: string) =>
  query(
    url,
    (sql) =>
      Effect.map(
        sql`SELECT count(DISTINCT pid)::int AS n FROM pg_locks
            WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
        (rows) => Number(rows[0]?.["n"] ?? 0)
      ),
    0
  )

/** The CPU time a process has used so far (user and system), from /proc; 0 where there is none. */
const cpuOf = (pid: number | undefined): number => {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? []
    // utime and stime are fields 14 and 15 of stat, counted from the state (field 3) here; in clock ticks (1/100 s).
    return (Number(fields[11]) + Number(fields[12])) / 100
  } catch {
    return 0
  }
}

/** The simulated search's published rate limit lifted (the emulator has none): the load is the runners' CPU work. */
const unlimitedSearch = { resilience: { providers: { tavily: { requestsPerSecond: null } } } }

/**
 * Steady-state throughput: the runners start, the shards settle among them (each holds its share), then the sessions
 * are sent at once and the clock runs until all have completed. Sent before the runners settle, sessions would start
 * on whichever runner took the shards first and move when the others take theirs, and the figure would measure that.
 */
const throughput = (runners: number) =>
  withDatabase(async (url) => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), "deep-research-bench-cluster-"))
    if (load === "cpu") fs.writeFileSync(path.join(home, "deep-research.config.json"), JSON.stringify(unlimitedSearch))
    const workers = Array.from({ length: runners }, (_, n) =>
      startWorker(url, 35100 + 10 * runners + n, home, pin ? n : undefined)
    )
    try {
      await waitFor(() => workers.every((w) => w.lines.some((l) => l.line.includes("worker ready"))), 60, "ready")
      let settled = 0
      await waitFor(
        async () => {
          settled = (await shardHolders(url)) === runners ? settled + 1 : 0
          return settled >= 8
        },
        60,
        "the shards to settle among the runners"
      )
      const ids = Array.from({ length: sessionsPerRun }, (_, n) => `dr-bench-${runners}-${n}`)
      const started = performance.now()
      await submitDirect(url, ids)
      await waitFor(async () => (await completedCount(url)) >= sessionsPerRun, 600, "all sessions").catch((error) => {
        for (const [n, w] of workers.entries()) {
          process.stderr.write(
            `--- runner ${n}\n${w.lines
              .map((l) => l.line)
              .join("\n")
              .slice(-6000)}\n`
          )
        }
        throw error
      })
      const minutes = (performance.now() - started) / 60_000
      const cpuSeconds = workers.map((w) => Math.round(cpuOf(w.child.pid) * 10) / 10)
      // Which runner started which sessions (a session moved between runners counts on both).
      const startedBy = workers.map(
        (w) => new Set(w.lines.flatMap((l) => /cluster: session (\S+) running/.exec(l.line)?.slice(1) ?? [])).size
      )
      return {
        runners,
        sessions: sessionsPerRun,
        seconds: minutes * 60,
        sessionsPerMinute: sessionsPerRun / minutes,
        startedBy,
        cpuSeconds
      }
    } finally {
      for (const w of workers) w.child.kill("SIGTERM")
      await Promise.all(workers.map((w) => new Promise((resolve) => w.child.once("exit", resolve))))
      fs.rmSync(home, { recursive: true, force: true })
    }
  })

const failover = () =>
  withDatabase(async (url) => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), "deep-research-bench-failover-"))
    submitAll(url, home, 8)
    const workers = [startWorker(url, 35200, home), startWorker(url, 35201, home)]
    try {
      await waitFor(() => workers.every((w) => w.lines.some((l) => l.line.includes("worker ready"))), 60, "ready")
      await waitFor(() => workers.some((w) => w.lines.some((l) => l.line.includes("running"))), 60, "a session running")
      const victim = workers.find((w) => w.lines.some((l) => l.line.includes("running"))) ?? workers[0]!
      const survivor = workers.find((w) => w !== victim)!
      const killedAt = performance.now()
      victim.child.kill("SIGKILL")
      await waitFor(() => survivor.lines.some((l) => l.at > killedAt && l.line.includes("resumed")), 120, "resumed")
      const resumed = survivor.lines.find((l) => l.at > killedAt && l.line.includes("resumed"))!
      return { secondsFromKillToResumed: (resumed.at - killedAt) / 1000 }
    } finally {
      for (const w of workers) w.child.kill("SIGTERM")
      fs.rmSync(home, { recursive: true, force: true })
    }
  })

const main = async () => {
  const result: Record<string, unknown> = { cpus: os.cpus().length, database: new URL(base).host, load, pinned: pin }
  if (only === undefined || only === "store") result["store"] = await storeFigures()
  if (only === undefined || only === "throughput") {
    result["throughput"] = [await throughput(1), await throughput(2)]
  }
  if (only === undefined || only === "failover") result["failover"] = await failover()
  console.log(JSON.stringify(result, null, 2))
}

void main().then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
