/**
 * The emulator's simulated research world in a process of its own, so that a benchmark's CPU, event-loop delay and
 * memory are the library's alone. Prints `{"url": ...}` on its first line, then answers one command per line of its
 * standard input with one line of JSON:
 *  - `now`: `{"now": ...}`, its `performance.now()` (to align its clock with the benchmark's);
 *  - `record`: `{"recording": true}`, and starts recording the requests it serves (`Measure.makeRecorder`);
 *  - `intervals`: `{"intervals": [...]}`, the requests served since `record`, on its own clock.
 * When its standard input closes it prints `{"cpuMillis": ...}` and exits.
 * Usage: node bench/dist/emulatorProcess.js [modelLatencyMillis] [searchLatencyMillis] [simulateOptionsJson]
 */
import { Emulator } from "@deep-research/emulator"
import * as Effect from "effect/Effect"
import { performance } from "node:perf_hooks"
import { createInterface } from "node:readline"
import * as Measure from "./Measure.js"

const modelLatency = Number(process.argv[2] ?? "300")
const searchLatency = Number(process.argv[3] ?? "150")
const simulateOptions: Emulator.SimulateOptions = JSON.parse(process.argv[4] ?? "{}")

const reply = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`)

const started = process.cpuUsage()
await Effect.runPromise(
  Effect.scoped(
    Effect.gen(function* () {
      const handle = yield* Emulator.start()
      yield* Emulator.simulate(handle, simulateOptions)
      yield* handle.setLatency("openai.chat", modelLatency)
      yield* handle.setLatency("tavily.search", searchLatency)
      yield* handle.setLatency("tavily.extract", searchLatency)
      reply({ url: handle.url })
      let recorder: Measure.Recorder | undefined
      yield* Effect.async<void>((resume) => {
        const lines = createInterface({ input: process.stdin })
        lines.on("line", (command) => {
          switch (command.trim()) {
            case "now":
              return reply({ now: performance.now() })
            case "record":
              recorder?.stop()
              recorder = Measure.makeRecorder()
              recorder.start()
              return reply({ recording: true })
            case "intervals": {
              const intervals = recorder?.stop() ?? []
              recorder = undefined
              return reply({ intervals })
            }
            default:
              return reply({ error: `unknown command: ${command}` })
          }
        })
        lines.on("close", () => resume(Effect.void))
      })
    })
  )
)
// The last line: the CPU time the emulator spent, so a benchmark can tell its cost from the library's.
const cpu = process.cpuUsage(started)
reply({ cpuMillis: Math.round((cpu.user + cpu.system) / 1000) })
process.exit(0)
