import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Scope } from "effect"
import { execFile } from "node:child_process"
import * as path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import * as HeapGrowth from "../src/internal/HeapGrowth.js"

const built = pathToFileURL(
  path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "dist", "internal", "HeapGrowth.js")
)

/**
 * The largest heap a Node process reaches holding about 60 MB while it makes and drops 0.8 GB of garbage, with the
 * growth `limit` of `options` from its start. The young generation is held to the same size on every Node line (Node
 * 24's V8 sizes it larger by default, up to most of this heap), so that what is measured is the old generation, whose
 * growth the limit sets.
 */
const peakHeapMiB = async (options: HeapGrowth.Options): Promise<number> => {
  const script = `
    const HeapGrowth = await import(${JSON.stringify(built.href)})
    const { Effect, Scope } = await import("effect")
    const scope = Effect.runSync(Scope.make())
    const set = Effect.runSync(Scope.extend(HeapGrowth.limit(${JSON.stringify(options)}), scope))
    const kept = []
    for (let i = 0; i < 300000; i++) kept.push({ text: "kept " + i, values: [i, i + 1] })
    let peak = 0
    for (let round = 0; round < 50; round++) {
      let garbage = []
      for (let i = 0; i < 100000; i++) garbage.push({ text: "dropped " + i, values: new Array(8).fill(i) })
      garbage = undefined
      peak = Math.max(peak, process.memoryUsage().heapTotal)
    }
    console.log(JSON.stringify({ set, peak: peak / 2 ** 20, kept: kept.length }))`
  const output = await new Promise<string>((resolve, reject) =>
    execFile(
      process.execPath,
      ["--max-semi-space-size=16", "--input-type=module", "-e", script],
      { env: { ...process.env, NODE_OPTIONS: "" } },
      (error, stdout) => (error === null ? resolve(stdout) : reject(error))
    )
  )
  const result = JSON.parse(output) as { readonly set: boolean; readonly peak: number }
  assert.isTrue(result.set)
  return result.peak
}

/**
 * Two such processes a test: about 10 s on a quiet machine, and 30 s each at a load of 15 on two cores (a test's
 * timeout is a bound on a hung child, not a measure).
 */
const childrenTimeout = 180_000

describe("HeapGrowth", () => {
  it("finds a growth the process was started with, on its command line or in NODE_OPTIONS", () => {
    assert.isFalse(HeapGrowth.startedWithOwn([], undefined))
    assert.isFalse(HeapGrowth.startedWithOwn(["--max-old-space-size=1024"], "--enable-source-maps"))
    assert.isTrue(HeapGrowth.startedWithOwn(["--heap-growing-percent=50"], undefined))
    assert.isTrue(HeapGrowth.startedWithOwn([], "--enable-source-maps --heap_growing_percent=20"))
    assert.isFalse(HeapGrowth.startedWithOwn([], "--heap-growing-percentage=20"))
  })

  it("keeps a growth the process was started with", () =>
    Effect.gen(function* () {
      const before = process.env["NODE_OPTIONS"]
      process.env["NODE_OPTIONS"] = "--heap-growing-percent=300"
      const set = yield* Effect.ensuring(
        Effect.scoped(HeapGrowth.limit()),
        Effect.sync(() => {
          if (before === undefined) delete process.env["NODE_OPTIONS"]
          else process.env["NODE_OPTIONS"] = before
        })
      )
      assert.isFalse(set)
    }))

  it("keeps one watcher a process: a limit made while another is open leaves the flag to it", () =>
    Effect.gen(function* () {
      const before = process.env["NODE_OPTIONS"]
      delete process.env["NODE_OPTIONS"]
      const outer = yield* Scope.make()
      const first = yield* Scope.extend(HeapGrowth.limit(), outer)
      const [second, third] = yield* Effect.all(
        [Effect.scoped(HeapGrowth.limit()), Effect.scoped(HeapGrowth.limit())],
        {
          concurrency: 2
        }
      )
      yield* Scope.close(outer, Exit.void)
      const afterwards = yield* Effect.scoped(HeapGrowth.limit())
      if (before !== undefined) process.env["NODE_OPTIONS"] = before
      assert.deepStrictEqual([first, second, third, afterwards], [true, false, false, true])
    }))

  it("refuses a growth that is not a whole number of percent from 1 to 300", () =>
    Effect.gen(function* () {
      for (const percent of [0, -5, 301, 1.5, Number.NaN]) {
        const exit = yield* Effect.exit(Effect.scoped(HeapGrowth.limit({ percent })))
        assert.isTrue(Exit.isFailure(exit) && Cause.isDie(exit.cause), `${percent}`)
      }
    }))

  // The child processes load the module built by `npm ci` (prepare), as a program would.
  it(
    "lets the heap grow less past what is alive once that is large",
    async () => {
      const small = await peakHeapMiB({ percent: 20, aboveMiB: 0 })
      const large = await peakHeapMiB({ percent: 300, aboveMiB: 0 })
      assert.isBelow(small, large / 1.5, `peak heap ${small.toFixed(0)} MiB at 20%, ${large.toFixed(0)} MiB at 300%`)
    },
    childrenTimeout
  )

  it(
    "leaves V8 its own growth while what is alive is small",
    async () => {
      const bounded = await peakHeapMiB({ percent: 20, aboveMiB: 0 })
      const unbounded = await peakHeapMiB({ percent: 20, aboveMiB: 10_000 })
      assert.isBelow(
        bounded,
        unbounded / 1.5,
        `peak heap ${bounded.toFixed(0)} MiB bounded, ${unbounded.toFixed(0)} not`
      )
    },
    childrenTimeout
  )
})
