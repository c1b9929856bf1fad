/**
 * Nothing `deep-research serve` acknowledged is lost when its process is killed. The built CLI serves a simulated
 * configuration on a loopback port over a temporary store; sessions are POSTed one after the other while earlier ones
 * are still answered, and the server is killed (SIGKILL: no finalizer runs) right after some 202 arrives. Restarted on
 * the same store, the server lists every acknowledged id and runs each to completion by itself. Once without a session limit, once with `--max-sessions 2` (most sessions queued).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import { ensureBuilt } from "./support/built.js"
import { describeRun, type Running, sandbox } from "./support/builtCli.js"
import { awaitSettled, getJson, Listed, serving, Started } from "./support/servedCli.js"

/** At most this many POSTs, one every few milliseconds, each without waiting for the ones before. */
const maxPosts = 60
const postEvery = "15 millis"
/** The server is killed when this many 202s have arrived. */
const killAfter = 12

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
    // The store is one database file (and SQLite's write-ahead log beside it): nothing else was left.
    const store = box.env["DEEP_RESEARCH_HOME"] ?? ""
    const left = fs.readdirSync(store).filter((name) => !/^deep-research\.db(?:-wal|-shm)?$/.test(name))
    assert.deepStrictEqual(left, [], `the store folder holds ${left.join(", ")}`)
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
