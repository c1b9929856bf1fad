/**
 * Failover with real processes: three `deep-research worker` runners share one database; thirty sessions are sent
 * to the cluster; one runner is killed with SIGKILL while it has research in flight. Its sessions must move to the
 * others and complete, none lost, none run by two runners at once, no finished research unit run again, and a session
 * waiting for a clarification must still be waiting.
 *
 * The models and search are the vendors' emulator, in this process (every runner reaches it over HTTP, with a little
 * latency so that research is in flight when the runner dies). The database is a real PostgreSQL server when
 * DEEP_RESEARCH_TEST_DATABASE_URL is set, else PGlite served over the wire protocol in this process (its connections
 * share one backend, so the cluster's shard locks use its lock table there: DEEP_RESEARCH_SHARD_LOCKS=table).
 */
import { ResearchConfig, type Session, SessionStore } from "@deep-research/core"
import { Emulator } from "@deep-research/emulator"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Redacted from "effect/Redacted"
import * as Scope from "effect/Scope"
import type * as PgDatabase from "../../providers/test/support/pgDatabase.js"
import * as Cluster from "../src/Cluster.js"
import * as ClusterWorld from "./support/clusterWorld.js"
import { freePort, type Running, sandbox, start } from "./support/builtCli.js"

const scope = Effect.runSync(Scope.make())
let database: PgDatabase.TestDatabase
let emulator: Emulator.Handle
let env: Record<string, string>
let store: SessionStore.Service
const runners: Array<Running> = []
const healthPorts: Array<number> = []

const run = <A, E>(effect: Effect.Effect<A, E, Scope.Scope>) => Effect.runPromise(Scope.extend(effect, scope))

beforeAll(async () => {
  const world = await run(ClusterWorld.make)
  database = world.database
  emulator = world.emulator
  store = world.store
  env = world.env
}, 120_000)

afterAll(async () => {
  for (const runner of runners) runner.child.kill("SIGKILL")
  await Promise.all(runners.map((runner) => runner.done))
  await Effect.runPromise(Scope.close(scope, Exit.void))
}, 60_000)

/** A line a runner printed, and when this process saw it. */
interface Seen {
  readonly runner: number
  readonly line: string
  readonly at: number
}

const seen: Array<Seen> = []

const startRunner = async (index: number) => {
  const box = sandbox(env)
  const port = await freePort()
  const healthPort = await freePort()
  healthPorts[index] = healthPort
  const runner = start(box, [
    "worker",
    "--database",
    database.url,
    "--port",
    String(port),
    "--health-port",
    String(healthPort),
    "--model",
    "openai:emulated-model",
    "--search",
    "tavily",
    "--concurrency",
    "2"
  ])
  let pending = ""
  runner.child.stderr?.on("data", (chunk: string) => {
    pending += chunk
    const lines = pending.split("\n")
    pending = lines.pop() ?? ""
    for (const line of lines) seen.push({ runner: index, line, at: Date.now() })
  })
  runners.push(runner)
  return runner
}

const until = async (what: string, check: () => boolean | Promise<boolean>, seconds: number) => {
  const deadline = Date.now() + seconds * 1000
  while (!(await check())) {
    if (Date.now() > deadline) {
      throw new Error(
        `timed out waiting for ${what}\n${seen
          .map((s) => `[${s.runner}] ${s.line}`)
          .join("\n")
          .slice(-4000)}`
      )
    }
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}

const sessions = () => Effect.runPromise(Effect.flatMap(store.list, (list) => Effect.succeed(list)))
const load = (id: string) => Effect.runPromise(store.load(id))
const events = (id: string) => Effect.runPromise(store.events(id))

/** The sessions a runner had started (or resumed) and not settled or stopped, by its log. */
const inFlight = (runner: number): ReadonlyArray<string> => {
  const open = new Set<string>()
  for (const { line, runner: r } of seen) {
    if (r !== runner) continue
    const match = /cluster: session (\S+) (running|settled|stopped)/.exec(line)
    if (match === null) continue
    const [, id = "", what] = match
    if (what === "running") open.add(id)
    else open.delete(id)
  }
  return [...open]
}

const submit = (ids: ReadonlyArray<string>, clarification: "await" | "proceed") =>
  run(
    Effect.forEach(
      ids,
      (id) => Cluster.submit(id, `What changed in topic ${id}?`, ResearchConfig.defaults, clarification),
      { discard: true }
    ).pipe(Effect.provide(Cluster.clientLayer(Redacted.make(database.url), database.kind !== "pglite")), Effect.scoped)
  )

describe("a research cluster of three runners", () => {
  it("loses no session when a runner is killed mid-round, and runs none twice", async () => {
    const ready = () => seen.filter((s) => s.line.includes("worker ready")).length
    if (database.kind === "pglite") {
      // PGlite serves every connection from one backend session, where the advisory lock under which each runner makes
      // the cluster's tables excludes nobody: started together, runners could interleave those statements there (on a
      // real server, `.ci/run`, they start together, as ClusterStorage.test.ts shows they can).
      for (const index of [0, 1, 2]) {
        await startRunner(index)
        await until(`runner ${index} ready`, () => ready() === index + 1, 60)
      }
    } else {
      await Promise.all([0, 1, 2].map(startRunner))
    }
    await until("three runners ready", () => ready() === 3, 60)
    for (const port of healthPorts) {
      const health = await fetch(`http://127.0.0.1:${port}/health`)
      assert.strictEqual(health.status, 200)
      assert.strictEqual(await health.text(), "ready\n")
    }

    // A session that asks a clarifying question, settled before the others start.
    await Effect.runPromise(
      emulator.enqueue(
        "openai.chat",
        Emulator.openaiJson({ needClarification: true, question: "Which country do you mean?", verification: "" })
      )
    )
    await submit(["dr-waiting"], "await")
    await until(
      "the clarification to wait",
      async () => {
        const waiting = (await sessions()).find((s) => s.id === "dr-waiting")
        return waiting?.status === "awaiting_clarification"
      },
      60
    )

    await Effect.runPromise(emulator.setLatency("all", "120 millis"))
    const ids = Array.from({ length: 30 }, (_, n) => `dr-failover-${n}`)
    await submit(ids, "proceed")

    // Mid-round: the runner with the most sessions in flight, once one of them has finished a research unit.
    let victim = -1
    await until(
      "research in flight",
      async () => {
        const counts = [0, 1, 2].map((r) => inFlight(r).length)
        const busiest = counts.indexOf(Math.max(...counts))
        const candidates = inFlight(busiest)
        if (candidates.length < 2) return false
        for (const id of candidates) {
          const log = await events(id).catch(() => [])
          if (log.some((e) => e._tag === "Checkpointed" && /^research unit \S+ completed$/.test(e.label))) {
            victim = busiest
            return true
          }
        }
        return false
      },
      90
    )
    const orphans = inFlight(victim)
    const killedAt = Date.now()
    runners[victim]?.child.kill("SIGKILL")
    await runners[victim]?.done

    await until(
      "every session to complete",
      async () => {
        const all = await sessions()
        return ids.every((id) => all.find((s) => s.id === id)?.status === "completed")
      },
      180
    )

    // None lost: every session completed with a report.
    for (const id of ids) {
      const session: Session.Session = await load(id)
      assert.strictEqual(session.status, "completed", id)
      assert.isDefined(session.report, id)
    }
    // Its sessions moved: each it had not finished was run again by one of the other runners, after the kill. (One
    // can finish on it between the look at its log and the kill, its last line unwritten: its log says so.)
    const unfinished: Array<string> = []
    for (const id of orphans) {
      const log = await events(id)
      if (!log.some((e) => e._tag === "SessionCompleted" && e.timestamp < killedAt)) unfinished.push(id)
    }
    assert.isAbove(unfinished.length, 0)
    for (const id of unfinished) {
      const resumed = seen.filter(
        (s) => s.runner !== victim && s.line.includes(`cluster: session ${id} running`) && s.at >= killedAt
      )
      assert.isAbove(resumed.length, 0, `${id} was not resumed by another runner`)
    }
    // None ran on two runners at once: on the survivors, a session's runs never overlap.
    for (const id of ids) {
      const marks = seen.filter((s) => s.runner !== victim && new RegExp(`cluster: session ${id} `).test(s.line))
      let open: number | undefined
      for (const mark of marks) {
        if (mark.line.includes(" running")) {
          assert.isUndefined(open, `${id} ran on runners ${open} and ${mark.runner} at once`)
          open = mark.runner
        } else if (mark.runner === open) open = undefined
      }
      // And the killed runner never ran a session once another runner had it.
      const victimStarts = seen.filter((s) => s.runner === victim && s.line.includes(`cluster: session ${id} running`))
      const otherStarts = marks.filter((s) => s.line.includes(" running"))
      for (const start of victimStarts) for (const other of otherStarts) assert.isBelow(start.at, other.at + 1, id)
    }
    // No finished research unit ran again: each unit's completion is checkpointed once per session.
    for (const id of ids) {
      const labels = (await events(id)).flatMap((e) =>
        e._tag === "Checkpointed" && /^research unit \S+ completed$/.test(e.label) ? [e.label] : []
      )
      assert.strictEqual(new Set(labels).size, labels.length, `${id}: ${labels.join(", ")}`)
    }
    // The pending clarification still waits for its answer.
    assert.strictEqual((await load("dr-waiting")).status, "awaiting_clarification")
  }, 300_000)

  it("a runner stopped with SIGTERM hands its sessions over, and they complete on another", async () => {
    const alive = [0, 1, 2].filter((r) => runners[r]?.child.exitCode === null && runners[r]?.child.signalCode === null)
    assert.isAtLeast(alive.length, 2)
    const ids = Array.from({ length: 6 }, (_, n) => `dr-handover-${n}`)
    await submit(ids, "proceed")
    let leaving = -1
    await until(
      "research in flight",
      () => {
        leaving = alive.find((r) => inFlight(r).some((id) => id.startsWith("dr-handover-"))) ?? -1
        return leaving !== -1
      },
      90
    )
    const handed = inFlight(leaving).filter((id) => id.startsWith("dr-handover-"))
    const stoppedAt = Date.now()
    runners[leaving]?.child.kill("SIGTERM")
    const exit = await runners[leaving]?.done
    // Interrupted by a signal, as the CLI's runs are: exit 130, after saying it hands its shards over.
    assert.strictEqual(exit?.code, 130)
    assert.isTrue(seen.some((s) => s.runner === leaving && s.line.includes("worker stopping")))
    await until(
      "every handed-over session to complete",
      async () => {
        const all = await sessions()
        return ids.every((id) => all.find((s) => s.id === id)?.status === "completed")
      },
      180
    )
    // Each session it had in flight either finished there while it stopped (it gives them time to) or was taken over.
    for (const id of handed) {
      const finishedThere = seen.some(
        (s) => s.runner === leaving && s.line.includes(`cluster: session ${id} settled completed`)
      )
      const takenOver = seen.some(
        (s) => s.runner !== leaving && s.at >= stoppedAt && s.line.includes(`cluster: session ${id} running`)
      )
      assert.isTrue(finishedThere || takenOver, `${id} was neither finished nor taken over`)
    }
  }, 300_000)
})
