/**
 * Nothing `deep-research serve` acknowledged is lost when its process is killed. The built CLI serves a simulated
 * configuration on a loopback port over a temporary store; sessions are POSTed one after the other while earlier ones
 * are still answered, and the server is killed (SIGKILL: no finalizer runs) right after some 202 arrives. Restarted on
 * the same store, the server lists every acknowledged id and runs each to completion by itself; what the killed
 * process left half-made is gone. Once without a session limit, once with `--max-sessions 2` (most sessions queued).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { ensureBuilt } from "./support/built.js"
import { describeRun, type Running, type Sandbox, sandbox, start } from "./support/builtCli.js"

const Started = Schema.Struct({ sessionId: Schema.String, status: Schema.String })
const Listed = Schema.Array(Schema.Struct({ id: Schema.String, status: Schema.String }))
const Status = Schema.Struct({ status: Schema.String })

/** At most this many POSTs, one every few milliseconds, each without waiting for the ones before. */
const maxPosts = 60
const postEvery = "15 millis"
/** The server is killed when this many 202s have arrived. */
const killAfter = 12

/** A `serve --simulate` of the built CLI on a port of its choosing, once it says where it listens. */
const serving = (box: Sandbox, extra: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const server = start(box, ["serve", "--simulate", "--no-clarify", "--port", "0", ...extra])
    for (let waited = 0; waited < 600; waited++) {
      const url = /(http:\/\/127\.0\.0\.1:\d+)\//.exec(server.output().stderr)?.[1]
      if (url !== undefined) return { server, url }
      if (server.child.exitCode !== null) break
      yield* Effect.sleep("100 millis")
    }
    const finished = yield* Effect.promise(() => {
      server.child.kill("SIGKILL")
      return server.done
    })
    return yield* Effect.dieMessage(`serve did not start:\n${describeRun(finished)}`)
  })

const getJson = <A, I>(schema: Schema.Schema<A, I>, url: string) =>
  Effect.promise(async () => Schema.decodeUnknownSync(schema)(await (await fetch(url)).json()))

/**
 * POSTs sessions until `killAfter` of them are acknowledged, then kills the server at once, in the callback of that
 * 202, before anything else of this process runs. Gives the acknowledged ids.
 */
const postUntilKilled = (server: Running, url: string) =>
  Effect.gen(function* () {
    const acknowledged: Array<string> = []
    let killed = false
    const inFlight: Array<Promise<void>> = []
    for (let i = 0; i < maxPosts && !killed; i++) {
      inFlight.push(
        fetch(`${url}/api/sessions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ question: `How do tides work, take ${i}?`, allowClarification: false })
        }).then(
          async (response) => {
            const text = await response.text()
            if (killed || response.status !== 202) return
            acknowledged.push(Schema.decodeUnknownSync(Schema.parseJson(Started))(text).sessionId)
            if (acknowledged.length >= killAfter) {
              killed = true
              server.child.kill("SIGKILL")
            }
          },
          // A request the killed server never answered was never acknowledged.
          () => undefined
        )
      )
      yield* Effect.sleep(postEvery)
    }
    yield* Effect.promise(() => Promise.all(inFlight))
    const finished = yield* Effect.promise(() => server.done)
    assert.strictEqual(finished.signal, "SIGKILL", `the server was killed, not ended:\n${describeRun(finished)}`)
    return acknowledged
  })

/** Polls each session's status until none is queued or running; bounded. */
const awaitSettled = (url: string, ids: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    let statuses: Record<string, string> = {}
    for (let round = 0; round < 900; round++) {
      statuses = {}
      for (const id of ids) statuses[id] = (yield* getJson(Status, `${url}/api/sessions/${id}`)).status
      if (Object.values(statuses).every((status) => status !== "queued" && status !== "running")) return statuses
      yield* Effect.sleep("200 millis")
    }
    return statuses
  })

const survivesAKill = (extra: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    ensureBuilt()
    const box = sandbox()
    yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(box.dir, { recursive: true, force: true })))
    const first = yield* serving(box, extra)
    const acknowledged = yield* postUntilKilled(first.server, first.url)
    assert.isAtLeast(acknowledged.length, killAfter)

    const second = yield* serving(box, extra)
    yield* Effect.addFinalizer(() =>
      Effect.promise(() => {
        second.server.child.kill("SIGTERM")
        return second.server.done
      })
    )
    const listed = new Set((yield* getJson(Listed, `${second.url}/api/sessions`)).map((session) => session.id))
    for (const id of acknowledged) assert.isTrue(listed.has(id), `acknowledged ${id} is listed after the restart`)

    const statuses = yield* awaitSettled(second.url, acknowledged)
    for (const id of acknowledged) {
      assert.strictEqual(statuses[id], "completed", `${id}\n${second.server.output().stderr.slice(-3000)}`)
    }
    // Every folder of the store holds a session, but one the killed process had only just made, which says nothing of
    // its maker (empty, or only marked simulated) and is kept a minute; its lock and temporary files are gone.
    const sessions = nodePath.join(box.env["DEEP_RESEARCH_HOME"] ?? "", "sessions")
    yield* getJson(Listed, `${second.url}/api/sessions`)
    for (const name of fs.readdirSync(sessions)) {
      const files = fs.readdirSync(nodePath.join(sessions, name))
      const whole = files.includes("session.json") || files.every((file) => file === "simulated.json")
      assert.isTrue(whole, `${name} holds ${files.join(", ")}`)
    }
  })

describe("deep-research serve killed while sessions arrive", () => {
  it.scopedLive(
    "lists every acknowledged session after a restart, and runs each to completion",
    () => survivesAKill([]),
    240_000
  )

  it.scopedLive(
    "with --max-sessions 2, keeps the queued ones too",
    () => survivesAKill(["--max-sessions", "2"]),
    240_000
  )
})
