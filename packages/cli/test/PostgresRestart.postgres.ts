/**
 * The cluster's database stopped in the middle of runs and started again, with real processes: a PostgreSQL server of
 * this test's own (`support/pgServer.ts`), `deep-research serve --database URL` and two `deep-research worker`
 * processes, the built CLI. Sessions are POSTed through the HTTP API; while they run the server is stopped
 * (`pg_ctl stop -m fast`) for 20 s and started again on the same port. No process is restarted: each must carry on by
 * itself, every acknowledged session must complete, no session may run in two places at once, and no worker may take
 * the outage for a defect of a session's entity.
 *
 * Not part of `npm test` (it needs PostgreSQL's programs, which `.ci/run` installs): run it with
 * `npx vitest run --config packages/cli/vitest.postgres.config.ts`. The models and search are the vendors' emulator in
 * this process, with a little latency so that research is in flight when the database goes.
 */
import { Emulator } from "@deep-research/emulator"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import { freePort, type Running, sandbox, start } from "./support/builtCli.js"
import * as PgServer from "./support/pgServer.js"
import { serving, Started } from "./support/servedCli.js"

/** How long the database stays stopped. */
const outage = "20 seconds"

/** A line a process printed, and when this process saw it. */
interface Seen {
  readonly process: string
  readonly line: string
  readonly at: number
}

/** Collects each line a process prints on stderr, named. */
const watch = (running: Running, name: string, seen: Array<Seen>) => {
  let pending = ""
  running.child.stderr?.on("data", (chunk: string) => {
    pending += chunk
    const lines = pending.split("\n")
    pending = lines.pop() ?? ""
    for (const line of lines) seen.push({ process: name, line, at: Date.now() })
  })
}

/** The end of what the processes printed, for a failure's message. */
const tail = (seen: ReadonlyArray<Seen>) =>
  seen
    .map((s) => `[${s.process}] ${s.line}`)
    .join("\n")
    .slice(-12000)

/** Asks `check` every half second until it holds; dies saying what it waited for after `seconds`. */
const until = (what: string, check: Effect.Effect<boolean>, seconds: number, seen: ReadonlyArray<Seen>) =>
  Effect.gen(function* () {
    const deadline = Date.now() + seconds * 1000
    while (!(yield* check)) {
      if (Date.now() > deadline) return yield* Effect.dieMessage(`timed out waiting for ${what}\n${tail(seen)}`)
      yield* Effect.sleep("500 millis")
    }
  })

/** A GET's status and text; a request that fails outright is status 0. */
const get = (url: string) =>
  Effect.promise(() =>
    fetch(url).then(
      async (response) => ({ status: response.status, text: await response.text() }),
      (error: unknown) => ({ status: 0, text: String(error) })
    )
  )

/** POSTs a session; its id when acknowledged (202), else the status and the answer's text. */
const post = (url: string, question: string) =>
  Effect.promise(() =>
    fetch(`${url}/api/sessions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ question, allowClarification: false })
    }).then(
      async (response) => {
        const text = await response.text()
        return response.status === 202
          ? { acknowledged: Schema.decodeUnknownSync(Schema.parseJson(Started))(text).sessionId, status: 202, text }
          : { acknowledged: undefined, status: response.status, text }
      },
      (error: unknown) => ({ acknowledged: undefined, status: 0, text: String(error) })
    )
  )

const SessionStatus = Schema.parseJson(Schema.Struct({ status: Schema.String }))

/** A session's status through the API; undefined while the server cannot answer it. */
const statusOf = (url: string, id: string) =>
  Effect.map(get(`${url}/api/sessions/${id}`), (answer) =>
    answer.status === 200 ? Schema.decodeUnknownSync(SessionStatus)(answer.text).status : undefined
  )

/** Whether a process is alive: not exited, and signal 0 reaches it. */
const alive = (running: Running) =>
  running.child.exitCode === null &&
  running.child.signalCode === null &&
  running.child.pid !== undefined &&
  process.kill(running.child.pid, 0)

/** A session's runs by the workers' logs: each start and its end (settled or stopped), on which worker. */
const runsOf = (seen: ReadonlyArray<Seen>, id: string) =>
  seen.filter(
    (s) => s.process.startsWith("worker") && new RegExp(`cluster: session ${id} (running|settled|stopped)`).test(s.line)
  )

describe("the cluster's PostgreSQL stopped for 20 s and started again", () => {
  it.scopedLive(
    "serve and the workers carry on without a restart, every acknowledged session completes, none runs twice at once",
    () =>
      Effect.gen(function* () {
        const seen: Array<Seen> = []
        const database = yield* PgServer.make.pipe(Effect.orDie)
        const emulator = yield* Emulator.start()
        yield* Emulator.simulate(emulator)
        const box = sandbox({
          OPENAI_BASE_URL: emulator.baseUrl("openai"),
          TAVILY_BASE_URL: emulator.baseUrl("tavily")
        })
        yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(box.dir, { recursive: true, force: true })))
        const stopAll = (running: Running) =>
          Effect.promise(() => {
            running.child.kill("SIGKILL")
            return running.done
          })

        const workers: Array<Running> = []
        for (const index of [0, 1]) {
          const port = yield* Effect.promise(freePort)
          const worker = start(box, [
            "worker",
            "--database",
            database.url,
            "--port",
            String(port),
            "--model",
            "openai:emulated-model",
            "--search",
            "tavily",
            "--concurrency",
            "2"
          ])
          watch(worker, `worker ${index}`, seen)
          yield* Effect.addFinalizer(() => stopAll(worker))
          workers.push(worker)
          // One after the other: the first makes the tables, and the second finds them made.
          yield* until(
            `worker ${index} ready`,
            Effect.sync(() => seen.some((s) => s.process === `worker ${index}` && s.line.includes("worker ready"))),
            90,
            seen
          )
        }
        const { server, url } = yield* serving(box, ["--database", database.url, "--max-rounds", "2"])
        watch(server, "serve", seen)
        yield* Effect.addFinalizer(() => stopAll(server))
        yield* until(
          "serve healthy",
          Effect.map(get(`${url}/api/health`), (h) => h.status === 200),
          60,
          seen
        )

        yield* emulator.setLatency("all", "150 millis")
        const acknowledged: Array<string> = []
        for (let n = 0; n < 8; n++) {
          const answer = yield* post(url, `What changed in topic ${n} over the last decade?`)
          assert.strictEqual(answer.status, 202, answer.text)
          if (answer.acknowledged !== undefined) acknowledged.push(answer.acknowledged)
        }
        // In the middle of runs: once several have started on the workers, and before they finish.
        yield* until(
          "research in flight",
          Effect.sync(() => acknowledged.filter((id) => runsOf(seen, id).length > 0).length >= 4),
          90,
          seen
        )

        const stoppedAt = Date.now()
        yield* Effect.orDie(database.stop)
        // While the database is away serve says why (a 503 naming it), and a session asked for now is either refused
        // so or acknowledged (then it must complete like the others).
        yield* until(
          "serve to say the database is away",
          Effect.map(get(`${url}/api/health`), (h) => h.status === 503),
          30,
          seen
        )
        const health = yield* get(`${url}/api/health`)
        assert.include(health.text, "cannot use the session database at", health.text)
        assert.include(health.text, "127.0.0.1", health.text)
        const during = yield* post(url, "What was asked while the database was away?")
        seen.push({ process: "test", line: `POST during the outage: ${during.status} ${during.text}`, at: Date.now() })
        if (during.acknowledged !== undefined) acknowledged.push(during.acknowledged)
        else assert.strictEqual(during.status, 503, during.text)
        yield* Effect.sleep(outage)
        yield* Effect.orDie(database.start)
        const restartedAt = Date.now()

        yield* until(
          "every acknowledged session to complete",
          Effect.gen(function* () {
            for (const id of acknowledged) if ((yield* statusOf(url, id)) !== "completed") return false
            return true
          }),
          150,
          seen
        )

        // No process was restarted: the ones started at first are alive, the same processes.
        for (const running of [server, ...workers]) assert.isTrue(alive(running), tail(seen))
        // Each session ran in one place at a time: by the workers' logs, a run starts only once the one before it (on
        // either worker) has ended.
        for (const id of acknowledged) {
          let open: string | undefined
          for (const mark of runsOf(seen, id)) {
            if (mark.line.includes(" running")) {
              assert.isUndefined(open, `${id} ran on ${open} and ${mark.process} at once\n${tail(seen)}`)
              open = mark.process
            } else if (mark.process === open) open = undefined
          }
        }
        // The outage stopped no session's work as a defect of its entity, which the cluster restarts with every message
        // it holds, logging it with its stack each time.
        const defects = seen.filter((s) => s.line.includes("Defect in entity"))
        assert.lengthOf(defects, 0, tail(seen))
        // The outage was in the middle of runs: some session was running while the database was away.
        assert.isTrue(
          acknowledged.some((id) => {
            const marks = runsOf(seen, id)
            const started = marks.find((mark) => mark.line.includes(" running"))
            const settled = marks.filter((mark) => mark.line.includes(" settled")).at(-1)
            return started !== undefined && started.at < stoppedAt && (settled?.at ?? 0) > restartedAt
          }),
          tail(seen)
        )
      }),
    240_000
  )
})
