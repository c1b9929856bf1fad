/**
 * What `deep-research serve` acknowledged survives what an operator meets, with real processes on the real file
 * system: a disk that fills up (a small tmpfs: every session either committed and acknowledged, or refused with a 503
 * that says why, and none acknowledged lost after a SIGKILL and a restart with room made), and two servers on one
 * store, one killed while sessions arrive (the survivor lists and runs the dead one's sessions once their leases
 * lapse, without a restart).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { ensureBuilt } from "./support/built.js"
import { describeRun, type Running, sandbox } from "./support/builtCli.js"
import { awaitSettled, getJson, Listed, post, serving } from "./support/servedCli.js"
import * as SmallDisk from "./support/smallDisk.js"

/** Leases of two seconds, so that a killed server's sessions are free soon. */
const shortLeases = { DEEP_RESEARCH_LEASE_SECONDS: "2" }

const killed = (server: Running) =>
  Effect.promise(() => {
    server.child.kill("SIGKILL")
    return server.done
  })

const stoppedAtTheEnd = (server: Running) =>
  Effect.addFinalizer(() =>
    Effect.promise(() => {
      server.child.kill("SIGTERM")
      return server.done
    })
  )

describe("deep-research serve and its store", () => {
  it.scopedLive(
    "on a disk that fills up, every session is acknowledged once committed or refused with why, and none is lost",
    () =>
      Effect.gen(function* () {
        ensureBuilt()
        const disk = yield* SmallDisk.mounted("2m")
        if (disk === undefined) return yield* Effect.logWarning(SmallDisk.unavailable)
        const box = sandbox({ DEEP_RESEARCH_HOME: nodePath.join(disk, "store") })
        yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(box.dir, { recursive: true, force: true })))
        const first = yield* serving(box, ["--max-sessions", "1"])
        // Room for a few sessions, not for forty.
        const free = SmallDisk.fill(disk, 48 * 1024)
        const acknowledged: Array<string> = []
        const refusals: Array<string> = []
        for (let i = 0; i < 40; i++) {
          const answer = yield* post(first.url, `How do tides work, take ${i}?`)
          if ("acknowledged" in answer) acknowledged.push(answer.acknowledged)
          else {
            assert.strictEqual(answer.status, 503, answer.text)
            refusals.push(answer.text)
          }
        }
        assert.isAbove(refusals.length, 0, "the disk filled up")
        for (const text of refusals) assert.match(text, /full/, "a refusal says why")
        const listed = new Set((yield* getJson(Listed, `${first.url}/api/sessions`)).map((s) => s.id))
        for (const id of acknowledged) assert.isTrue(listed.has(id), `acknowledged ${id} is listed at once`)
        const finished = yield* killed(first.server)
        assert.strictEqual(finished.signal, "SIGKILL", describeRun(finished))

        free()
        const second = yield* serving(box, [])
        yield* stoppedAtTheEnd(second.server)
        const after = new Set((yield* getJson(Listed, `${second.url}/api/sessions`)).map((s) => s.id))
        for (const id of acknowledged) assert.isTrue(after.has(id), `acknowledged ${id} is listed after the restart`)
        const statuses = yield* awaitSettled(second.url, acknowledged)
        for (const id of acknowledged) {
          assert.strictEqual(statuses[id], "completed", `${id}\n${second.server.output().stderr.slice(-3000)}`)
        }
      }),
    240_000
  )

  it.scopedLive(
    "two servers on one store: the dead one's acknowledged sessions are listed and run by the other, without a restart",
    () =>
      Effect.gen(function* () {
        ensureBuilt()
        const box = sandbox()
        yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(box.dir, { recursive: true, force: true })))
        const dying = yield* serving(box, ["--max-sessions", "2"], shortLeases)
        const surviving = yield* serving(box, [], shortLeases)
        yield* stoppedAtTheEnd(surviving.server)
        const acknowledged: Array<string> = []
        for (let i = 0; i < 10; i++) {
          const answer = yield* post(dying.url, `How do tides work, take ${i}?`)
          if ("acknowledged" in answer) acknowledged.push(answer.acknowledged)
        }
        assert.strictEqual(acknowledged.length, 10)
        yield* killed(dying.server)

        const listed = new Set((yield* getJson(Listed, `${surviving.url}/api/sessions`)).map((s) => s.id))
        for (const id of acknowledged) assert.isTrue(listed.has(id), `${id} is listed by the other server`)
        const statuses = yield* awaitSettled(surviving.url, acknowledged)
        for (const id of acknowledged) {
          assert.strictEqual(statuses[id], "completed", `${id}\n${surviving.server.output().stderr.slice(-3000)}`)
        }
      }),
    240_000
  )
})
