/**
 * The emulator in a process of its own (`emulatorProcess.js`), driven from a benchmark: its address, the requests it
 * served (as intervals on the benchmark's own clock) and the CPU time it spent. With the backend out of the process,
 * the benchmark's CPU and event loop are the library's alone, as they are against real vendors.
 */
import type { Emulator } from "@deep-research/emulator"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import { spawn } from "node:child_process"
import * as path from "node:path"
import { performance } from "node:perf_hooks"
import { createInterface } from "node:readline"
import { fileURLToPath } from "node:url"
import type * as Measure from "./Measure.js"

/** A running emulator process. */
export interface RemoteEmulator {
  readonly url: string
  /** Starts recording the requests the emulator serves. */
  readonly record: Effect.Effect<void>
  /** The requests served since `record`, with their times on this process's `performance.now()` clock. */
  readonly intervals: Effect.Effect<ReadonlyArray<Measure.Interval>>
  /** Stops the process (once; closing the scope stops it too) and gives the CPU milliseconds it spent. */
  readonly stop: Effect.Effect<number>
}

/** How the emulator process is set up. */
export interface Options {
  readonly modelLatencyMillis: number
  readonly searchLatencyMillis: number
  readonly simulate?: Emulator.SimulateOptions | undefined
}

const script = path.join(path.dirname(fileURLToPath(import.meta.url)), "emulatorProcess.js")

const field = (line: string, key: string): unknown => {
  const parsed: unknown = JSON.parse(line)
  return typeof parsed === "object" && parsed !== null ? Reflect.get(parsed, key) : undefined
}

/** Starts the emulator process for the scope. */
export const start = (options: Options): Effect.Effect<RemoteEmulator, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const child = spawn(
        process.execPath,
        [
          script,
          String(options.modelLatencyMillis),
          String(options.searchLatencyMillis),
          JSON.stringify(options.simulate ?? {})
        ],
        { stdio: ["pipe", "pipe", "inherit"] }
      )
      const lines = createInterface({ input: child.stdout })
      // One command at a time: each is answered by the next line.
      const waiting: Array<(line: string) => void> = []
      lines.on("line", (line) => waiting.shift()?.(line))
      const next = () => new Promise<string>((resolve) => waiting.push(resolve))
      const ask = (command: string) => {
        const answer = next()
        child.stdin.write(`${command}\n`)
        return answer
      }
      const first = await Promise.race([next(), new Promise<never>((_, reject) => child.once("error", reject))])
      const url = field(first, "url")
      if (typeof url !== "string") throw new Error(`the emulator process said: ${first}`)

      // The offset of the emulator's clock from ours, from the quickest of a few round trips (its error is at most
      // half that round trip, a fraction of a millisecond on loopback).
      let offset = 0
      let quickest = Number.POSITIVE_INFINITY
      for (let i = 0; i < 20; i++) {
        const sent = performance.now()
        const theirs = Number(field(await ask("now"), "now"))
        const received = performance.now()
        if (received - sent < quickest) {
          quickest = received - sent
          offset = theirs - (sent + received) / 2
        }
      }

      let stopped: Promise<number> | undefined
      const remote: RemoteEmulator = {
        url,
        record: Effect.promise(() => ask("record")).pipe(Effect.asVoid),
        intervals: Effect.promise(async () => {
          const served = field(await ask("intervals"), "intervals")
          if (!Array.isArray(served)) throw new Error("the emulator process gave no intervals")
          return served.map((interval: Measure.Interval): Measure.Interval => ({
            ...interval,
            start: interval.start - offset,
            end: interval.end - offset
          }))
        }),
        stop: Effect.promise(
          () =>
            (stopped ??= (async () => {
              const last = next()
              child.stdin.end()
              const cpu = field(await last, "cpuMillis")
              return typeof cpu === "number" ? cpu : Number.NaN
            })())
        )
      }
      return remote
    }),
    (remote) => remote.stop
  )
