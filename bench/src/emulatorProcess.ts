/**
 * The emulator's simulated research world in a process of its own, so that a benchmark's event-loop delay and memory
 * are the library's alone. Prints `{"url": ...}` on its first line and runs until its standard input closes, then prints
 * `{"cpuMillis": ...}`.
 * Usage: node bench/dist/emulatorProcess.js [modelLatencyMillis] [searchLatencyMillis]
 */
import { Emulator } from "@deep-research/providers/testing"
import * as Effect from "effect/Effect"

const modelLatency = Number(process.argv[2] ?? "300")
const searchLatency = Number(process.argv[3] ?? "150")

const started = process.cpuUsage()
await Effect.runPromise(
  Effect.scoped(
    Effect.gen(function* () {
      const handle = yield* Emulator.start()
      yield* Emulator.simulate(handle)
      yield* handle.setLatency("openai.chat", modelLatency)
      yield* handle.setLatency("tavily.search", searchLatency)
      yield* handle.setLatency("tavily.extract", searchLatency)
      process.stdout.write(`${JSON.stringify({ url: handle.url })}\n`)
      yield* Effect.async<void>((resume) => {
        process.stdin.on("end", () => resume(Effect.void))
        process.stdin.on("close", () => resume(Effect.void))
        process.stdin.resume()
      })
    })
  )
)
// The second line: the CPU time the emulator spent, so a benchmark can tell its cost from the library's.
const cpu = process.cpuUsage(started)
process.stdout.write(`${JSON.stringify({ cpuMillis: Math.round((cpu.user + cpu.system) / 1000) })}\n`)
process.exit(0)
