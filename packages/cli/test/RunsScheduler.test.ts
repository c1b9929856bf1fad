/**
 * The runs a process hosts (`serve`, the MCP server) are scheduled as the program that hosts them is: under the CLI,
 * the sliced scheduler, which is what keeps the event loop served with many sessions at once (BENCHMARKS.md,
 * "Home-made parts"). A runtime of their own would otherwise put them on Effect's default scheduler, beside it.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Scheduler from "effect/Scheduler"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import * as CliConfig from "../src/CliConfig.js"
import * as Runs from "../src/Runs.js"

/** A scheduler that counts the tasks given to it and hands them on to Effect's default one. */
const counting = () => {
  let tasks = 0
  const scheduler = Scheduler.make((task, priority) => {
    tasks++
    Scheduler.defaultScheduler.scheduleTask(task, priority)
  })
  return { scheduler, tasks: () => tasks }
}

describe("the runs of serve and the MCP server", () => {
  it.live("run on the scheduler of the program that hosts them", () =>
    Effect.gen(function* () {
      const store = fs.mkdtempSync(nodePath.join(os.tmpdir(), "deep-research-runs-scheduler-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(store, { recursive: true, force: true })))
      const resolved = Either.getOrThrow(CliConfig.resolve({ simulate: true, store }, {}, undefined))
      const program = counting()
      const during = yield* Effect.gen(function* () {
        const runs = yield* Runs.make(resolved)
        const before = program.tasks()
        const started = yield* runs.start("How do tides work?", { allowClarification: false }, "proceed")
        yield* runs.awaitRun(started.sessionId)
        const session = yield* runs.load(started.sessionId)
        return { tasks: program.tasks() - before, status: session.status }
      }).pipe(Effect.withScheduler(program.scheduler))
      assert.strictEqual(during.status, "completed")
      // A simulated run is hundreds of scheduled steps; on a scheduler of its own, the program's would see about one.
      assert.isAbove(during.tasks, 100, `the program's scheduler was given ${during.tasks} tasks during the run`)
    }).pipe(Effect.scoped)
  )
})
