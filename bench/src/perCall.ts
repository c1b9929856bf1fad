/**
 * Benchmark 10, the CPU of one backend call and of one file write, where a session makes dozens of each:
 *  - a chat completion through `OpenAiLanguageModel` (the OpenAI SDK) against the emulator in its own process, with
 *    the SDK over the providers' transport (the default) and over the platform's `fetch`; and the bare request over
 *    `fetch` and over `node:http`, for scale. 20 calls at once, as 20 sessions make them.
 *  - an event line appended to an open file, through the thread pool (`fs.write`) and synchronously (`fs.writeSync`).
 * CPU is the whole process's (`process.cpuUsage`), divided by the calls. Each figure is the median of 5 rounds.
 * Usage: node bench/dist/perCall.js [--calls N]
 */
import { LanguageModel } from "@deep-research/core"
import { OpenAiLanguageModel } from "@deep-research/providers"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as http from "node:http"
import * as os from "node:os"
import * as path from "node:path"
import OpenAI from "openai"
import * as Measure from "./Measure.js"
import * as RemoteEmulator from "./RemoteEmulator.js"

const callsArg = process.argv.indexOf("--calls")
const calls = callsArg >= 0 ? Number(process.argv[callsArg + 1]) : 400
const rounds = 5
const concurrency = 20

/** CPU microseconds per call of `one`, run `count` times, `concurrency` at once, after a warm-up. */
const cpuPerCall = (one: () => Promise<unknown>, count: number, atOnce: number) =>
  Effect.promise(async () => {
    for (let i = 0; i < 20; i++) await one()
    const before = process.cpuUsage()
    let next = 0
    const worker = async () => {
      while (next < count) {
        next++
        await one()
      }
    }
    await Promise.all(Array.from({ length: atOnce }, worker))
    const used = process.cpuUsage(before)
    return (used.user + used.system) / count
  })

const medianOf = (label: string, one: () => Promise<unknown>, count: number, atOnce: number) =>
  Effect.gen(function* () {
    const samples: Array<number> = []
    for (let i = 0; i < rounds; i++) samples.push(yield* cpuPerCall(one, count, atOnce))
    return {
      label,
      cpuMicrosPerCall: Measure.round(Measure.median(samples), 0),
      rounds: samples.map((s) => Math.round(s))
    }
  })

const program = Effect.scoped(
  Effect.gen(function* () {
    const emulator = yield* RemoteEmulator.start({ modelLatencyMillis: 5, searchLatencyMillis: 5 })
    const baseUrl = `${emulator.url}/openai/v1`
    const text = "Solar power in Europe grew in 2024. ".repeat(150)
    const request: LanguageModel.GenerateRequest = {
      system: "You are a helpful assistant.",
      messages: [LanguageModel.user(text)]
    }
    const overTransport = yield* OpenAiLanguageModel.make({ model: "gpt-4.1", apiKey: "sk-bench", baseUrl })
    const overFetch = yield* OpenAiLanguageModel.make({
      model: "gpt-4.1",
      client: new OpenAI({ apiKey: "sk-bench", baseURL: baseUrl, maxRetries: 0, fetch: globalThis.fetch })
    })
    const url = `${baseUrl}/chat/completions`
    const body = JSON.stringify({
      model: "gpt-4.1",
      messages: [
        { role: "system", content: "You are a helpful assistant." },
        { role: "user", content: text }
      ]
    })
    const headers = { "content-type": "application/json", authorization: "Bearer sk-bench" }
    const agent = new http.Agent({ keepAlive: true })
    const viaFetch = () => globalThis.fetch(url, { method: "POST", headers, body }).then((r) => r.json())
    const viaHttp = () =>
      new Promise<unknown>((resolve, reject) => {
        const sent = http.request(url, { method: "POST", agent, headers }, (response) => {
          const chunks: Array<Buffer> = []
          response.on("data", (chunk: Buffer) => chunks.push(chunk))
          response.on("end", () => resolve(JSON.parse(Buffer.concat(chunks).toString("utf8"))))
        })
        sent.on("error", reject)
        sent.end(body)
      })
    const model = (service: typeof overTransport) => () => Effect.runPromise(Effect.orDie(service.generate(request)))

    const modelCalls = [
      yield* medianOf(
        "model call, SDK over the providers' transport (default)",
        model(overTransport),
        calls,
        concurrency
      ),
      yield* medianOf("model call, SDK over the platform's fetch", model(overFetch), calls, concurrency),
      yield* medianOf("bare request over the platform's fetch", viaFetch, calls, concurrency),
      yield* medianOf("bare request over node:http", viaHttp, calls, concurrency)
    ]
    agent.destroy()

    const directory = fs.mkdtempSync(path.join(os.tmpdir(), "deep-research-bench-writes-"))
    const file = path.join(directory, "events.jsonl")
    const fd = fs.openSync(file, "a", 0o600)
    const line = Buffer.from(
      `${JSON.stringify({ _tag: "ToolCalled", sessionId: "dr-bench", tool: "webSearch", timestamp: Date.now() })}\n`
    )
    const writes = 5_000
    const fileWrites = [
      yield* medianOf(
        "event line through the thread pool (fs.write)",
        () =>
          new Promise<void>((resolve, reject) => fs.write(fd, line, (error) => (error ? reject(error) : resolve()))),
        writes,
        1
      ),
      yield* medianOf(
        "event line written synchronously (fs.writeSync)",
        () => Promise.resolve(fs.writeSync(fd, line)),
        writes,
        1
      )
    ]
    fs.closeSync(fd)
    fs.rmSync(directory, { recursive: true, force: true })
    return { benchmark: "perCall", machine: Measure.machine(), calls, concurrency, modelCalls, fileWrites }
  })
)

Effect.runPromise(program).then(
  (result) => console.log(JSON.stringify(result, null, 2)),
  (error: unknown) => {
    console.error(error)
    process.exitCode = 1
  }
)
