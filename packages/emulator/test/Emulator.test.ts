import { fileURLToPath } from "node:url"
import Anthropic from "@anthropic-ai/sdk"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import { readFileSync } from "node:fs"
import * as Http from "node:http"
import OpenAI from "openai"
import { Emulator } from "../src/index.js"

const cassettes = fileURLToPath(new URL("../../providers/test/fixtures/vendor-cassettes", import.meta.url))

// The least the Messages API takes: the emulator refuses a body without max_tokens, as the API does.
const anthropicBody = { model: "claude-haiku-4-5", max_tokens: 16, messages: [{ role: "user", content: "hi" }] }

const fetchText = (url: string, init?: RequestInit) =>
  Effect.promise(async () => {
    const response = await fetch(url, init)
    return { status: response.status, headers: response.headers, text: await response.text() }
  })

const postJson = (url: string, body: unknown) =>
  fetchText(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })

const eventNames = (sse: string): ReadonlyArray<string> =>
  sse
    .split("\n")
    .filter((line) => line.startsWith("event: "))
    .map((line) => line.slice("event: ".length))

const anthropicClient = (emulator: Emulator.Handle) =>
  new Anthropic({ apiKey: "sk-ant-test", baseURL: emulator.baseUrl("anthropic"), maxRetries: 0 })

describe("Emulator", () => {
  it.scoped("answers an unscripted endpoint with a 501 naming the endpoint", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      const response = yield* postJson(`${emulator.baseUrl("tavily")}/search`, { query: "q" })
      assert.strictEqual(response.status, 501)
      assert.include(response.text, "tavily.search")
    })
  )

  it.scoped("serves one-shot replies before the responder, and repeats the last reply of an array", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("exa.search", [Emulator.json({ n: 1 }), Emulator.json({ n: 2 })])
      yield* emulator.enqueue("exa.search", Emulator.json({ n: 0 }))
      const seen: Array<unknown> = []
      for (let i = 0; i < 4; i++) {
        const response = yield* postJson(`${emulator.baseUrl("exa")}/search`, { query: "q" })
        seen.push(JSON.parse(response.text).n)
      }
      assert.deepStrictEqual(seen, [0, 1, 2, 2])
    })
  )

  it.scoped("logs every request with its endpoint, query, headers and parsed body", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("semanticScholar.search", Emulator.semanticScholarPapers([{ paperId: "p1", title: "T" }]))
      yield* fetchText(`${emulator.baseUrl("semanticScholar")}/paper/search?query=graphene&limit=5`, {
        headers: { "x-api-key": "s2-key" }
      })
      yield* postJson(`${emulator.baseUrl("tavily")}/search`, { query: "solar" })
      const scholar = yield* emulator.requests("semanticScholar.search")
      assert.strictEqual(scholar.length, 1)
      assert.deepStrictEqual(scholar[0]?.query, { query: "graphene", limit: "5" })
      assert.strictEqual(scholar[0]?.headers["x-api-key"], "s2-key")
      const all = yield* emulator.requests()
      assert.deepStrictEqual(
        all.map((r) => r.endpoint),
        ["semanticScholar.search", "tavily.search"]
      )
      assert.deepStrictEqual(all[1]?.body, { query: "solar" })
    })
  )

  it.scoped("replays an Anthropic SSE cassette byte for byte", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      const path = `${cassettes}/anthropic/messages-stream-text.json`
      const recorded = JSON.parse(readFileSync(path, "utf8")).response.sse
      yield* emulator.replay(path)
      const response = yield* postJson(`${emulator.baseUrl("anthropic")}/v1/messages`, {
        ...anthropicBody,
        stream: true
      })
      assert.strictEqual(response.text, recorded)
      assert.include(response.headers.get("content-type") ?? "", "text/event-stream")
    })
  )

  it.scoped("frames a streamed Anthropic text answer in the cassette's event order", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      const recorded: string = JSON.parse(readFileSync(`${cassettes}/anthropic/messages-stream-text.json`, "utf8"))
        .response.sse
      yield* emulator.respond("anthropic.messages", Emulator.anthropicText("1\n2\n3"))
      const response = yield* postJson(`${emulator.baseUrl("anthropic")}/v1/messages`, {
        ...anthropicBody,
        stream: true
      })
      assert.deepStrictEqual(eventNames(response.text), eventNames(recorded))
      for (const message of response.text.split("\n\n").filter((m) => m !== "")) {
        const lines = message.split("\n")
        assert.strictEqual(lines.length, 2)
        assert.match(lines[0] ?? "", /^event: [a-z_]+$/)
        const payload = JSON.parse((lines[1] ?? "").slice("data: ".length))
        assert.strictEqual(payload.type, (lines[0] ?? "").slice("event: ".length))
      }
    })
  )

  it.scoped("streams Anthropic tool_use so the real SDK rebuilds text and tool input", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      const input = { queries: ["solar capacity 2024", "wind capacity 2024"], note: "a long argument to split" }
      yield* emulator.respond(
        "anthropic.messages",
        Emulator.anthropicToolUse([{ id: "toolu_1", name: "webSearch", arguments: input }], { text: "Searching." })
      )
      const message = yield* Effect.promise(() =>
        anthropicClient(emulator)
          .messages.stream({ model: "claude-sonnet-4-6", max_tokens: 100, messages: [{ role: "user", content: "go" }] })
          .finalMessage()
      )
      assert.strictEqual(message.stop_reason, "tool_use")
      const [text, tool] = message.content
      assert.strictEqual(text?.type === "text" ? text.text : undefined, "Searching.")
      assert.deepStrictEqual(tool?.type === "tool_use" ? tool.input : undefined, input)
      const sse = yield* postJson(`${emulator.baseUrl("anthropic")}/v1/messages`, { ...anthropicBody, stream: true })
      assert.include(sse.text, '"partial_json":""')
    })
  )

  it.scoped("answers Anthropic non-streaming requests with the message JSON", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("anthropic.messages", Emulator.anthropicText("hello", { usage: { input: 7, output: 2 } }))
      const message = yield* Effect.promise(() =>
        anthropicClient(emulator).messages.create({
          model: "claude-sonnet-4-6",
          max_tokens: 100,
          messages: [{ role: "user", content: "hi" }]
        })
      )
      assert.deepStrictEqual(
        message.content.map((b) => (b.type === "text" ? b.text : b.type)),
        ["hello"]
      )
      assert.strictEqual(message.usage.input_tokens, 7)
      const [request] = yield* emulator.requests("anthropic.messages")
      assert.strictEqual(request?.headers["authorization"], "Bearer sk-ant-test")
    })
  )

  it.scoped("streams an OpenAI chat answer with a usage chunk and [DONE] when include_usage is asked", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond(
        "openai.chat",
        Emulator.openaiToolCalls([{ id: "call_1", name: "webSearch", arguments: { queries: ["a", "b"] } }], {
          usage: { input: 40, output: 12 }
        })
      )
      const client = new OpenAI({ apiKey: "sk-test", baseURL: emulator.baseUrl("openai"), maxRetries: 0 })
      const chunks = yield* Effect.promise(async () => {
        const stream = await client.chat.completions.create({
          model: "gpt-4o-mini",
          messages: [{ role: "user", content: "go" }],
          stream: true,
          stream_options: { include_usage: true }
        })
        const all: Array<OpenAI.Chat.Completions.ChatCompletionChunk> = []
        for await (const chunk of stream) all.push(chunk)
        return all
      })
      const last = chunks[chunks.length - 1]
      assert.strictEqual(last?.choices.length, 0)
      assert.strictEqual(last?.usage?.prompt_tokens, 40)
      const args = chunks
        .flatMap((c) => c.choices.flatMap((choice) => choice.delta.tool_calls ?? []))
        .map((d) => d.function?.arguments ?? "")
        .join("")
      assert.deepStrictEqual(JSON.parse(args), { queries: ["a", "b"] })
      const raw = yield* postJson(`${emulator.baseUrl("openai")}/chat/completions`, { stream: true })
      assert.isTrue(raw.text.endsWith("data: [DONE]\n\n"))
      assert.notInclude(raw.text, "event:")
    })
  )

  it.scoped("serves scripted web pages with their content type, and a 404 page for others", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond(
        "web.page",
        Emulator.webPages({
          "/article.html": "<html><head><title>A</title></head><body>Body</body></html>",
          "/notes.txt": Emulator.page("plain notes", { contentType: "text/plain; charset=utf-8" })
        })
      )
      const html = yield* fetchText(`${emulator.baseUrl("web")}/article.html`)
      assert.strictEqual(html.status, 200)
      assert.include(html.headers.get("content-type") ?? "", "text/html")
      assert.include(html.text, "<title>A</title>")
      const text = yield* fetchText(`${emulator.baseUrl("web")}/notes.txt`)
      assert.strictEqual(text.headers.get("content-type"), "text/plain; charset=utf-8")
      assert.strictEqual(text.text, "plain notes")
      const missing = yield* fetchText(`${emulator.baseUrl("web")}/nowhere`)
      assert.strictEqual(missing.status, 404)
    })
  )

  it.scoped("plays a rate limit in each vendor's shape with retry-after", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      const fault = Emulator.fault({ type: "rate_limit", retryAfterSeconds: 7 })
      yield* emulator.respond("tavily.search", fault)
      yield* emulator.respond("anthropic.messages", fault)
      yield* emulator.respond("openai.chat", fault)
      const tavily = yield* postJson(`${emulator.baseUrl("tavily")}/search`, { query: "q" })
      assert.strictEqual(tavily.status, 429)
      assert.deepStrictEqual(JSON.parse(tavily.text), { detail: { error: Emulator.errorTexts.tavilyRateLimit } })
      const anthropic = yield* postJson(`${emulator.baseUrl("anthropic")}/v1/messages`, anthropicBody)
      assert.strictEqual(JSON.parse(anthropic.text).error.type, "rate_limit_error")
      assert.strictEqual(anthropic.headers.get("retry-after"), "7")
      assert.isNotNull(anthropic.headers.get("anthropic-ratelimit-requests-reset"))
      const openai = yield* postJson(`${emulator.baseUrl("openai")}/chat/completions`, { model: "gpt-4.1" })
      assert.strictEqual(JSON.parse(openai.text).error.code, "rate_limit_exceeded")
      assert.strictEqual(openai.headers.get("x-ratelimit-reset-requests"), "7s")
    })
  )

  it.scoped("plays Anthropic 529 as overloaded_error and prompt-too-long with the numbers", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.enqueue(
        "anthropic.messages",
        Emulator.fault({ type: "server_error", status: 529 }),
        Emulator.fault({ type: "context_length" })
      )
      const overloaded = yield* postJson(`${emulator.baseUrl("anthropic")}/v1/messages`, anthropicBody)
      assert.strictEqual(overloaded.status, 529)
      assert.deepStrictEqual(JSON.parse(overloaded.text).error, { type: "overloaded_error", message: "Overloaded" })
      const tooLong = yield* postJson(`${emulator.baseUrl("anthropic")}/v1/messages`, anthropicBody)
      assert.strictEqual(tooLong.status, 400)
      assert.match(JSON.parse(tooLong.text).error.message, /^prompt is too long: \d+ tokens > \d+ maximum$/)
    })
  )

  it.scoped("plays Tavily quota as 432 with the documented text", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("tavily.extract", Emulator.fault({ type: "quota" }))
      const response = yield* postJson(`${emulator.baseUrl("tavily")}/extract`, { urls: ["https://a"] })
      assert.strictEqual(response.status, 432)
      assert.strictEqual(JSON.parse(response.text).detail.error, Emulator.errorTexts.tavilyPlanLimit)
    })
  )

  it.scoped("drops the connection on a reset fault", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("exa.contents", Emulator.fault({ type: "reset" }))
      const outcome = yield* Effect.exit(
        Effect.tryPromise(() => fetch(`${emulator.baseUrl("exa")}/contents`, { method: "POST", body: "{}" }))
      )
      assert.isTrue(Exit.isFailure(outcome))
    })
  )

  it.scoped("hangs until the client aborts, having logged the request", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("perplexity.chat", Emulator.fault({ type: "hang" }))
      const controller = new AbortController()
      const pending = fetch(`${emulator.baseUrl("perplexity")}/chat/completions`, {
        method: "POST",
        body: "{}",
        signal: controller.signal
      }).then(
        () => "answered",
        () => "aborted"
      )
      yield* Effect.promise(async () => {
        while ((await Effect.runPromise(emulator.requests("perplexity.chat"))).length === 0) {
          await new Promise((resolve) => setImmediate(resolve))
        }
      })
      controller.abort()
      assert.strictEqual(yield* Effect.promise(() => pending), "aborted")
    })
  )

  it.scoped("serves malformed JSON with a JSON content type", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("openai.chat", Emulator.fault({ type: "malformed_json" }))
      const response = yield* postJson(`${emulator.baseUrl("openai")}/chat/completions`, {})
      assert.strictEqual(response.status, 200)
      assert.include(response.headers.get("content-type") ?? "", "application/json")
      assert.throws(() => JSON.parse(response.text))
    })
  )

  it.scoped("answers invalid tool arguments with the first offered tool and unparsable arguments", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("openai.chat", Emulator.fault({ type: "invalid_tool_arguments" }))
      const response = yield* postJson(`${emulator.baseUrl("openai")}/chat/completions`, {
        tools: [{ type: "function", function: { name: "webSearch", parameters: { type: "object", properties: {} } } }]
      })
      const call = JSON.parse(response.text).choices[0].message.tool_calls[0]
      assert.strictEqual(call.function.name, "webSearch")
      assert.throws(() => JSON.parse(call.function.arguments))
    })
  )

  it.scoped("delays answers by the latency set, so a client that gives up first leaves the request abandoned", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("tavily.search", Emulator.tavilyResults([]))
      yield* emulator.setLatency("tavily.search", "1 hour")
      const controller = new AbortController()
      const pending = fetch(`${emulator.baseUrl("tavily")}/search`, {
        method: "POST",
        body: "{}",
        signal: controller.signal
      }).then(
        () => "answered",
        () => "aborted"
      )
      yield* Effect.promise(async () => {
        while ((await Effect.runPromise(emulator.requests("tavily.search"))).length === 0) {
          await new Promise((resolve) => setImmediate(resolve))
        }
      })
      controller.abort()
      assert.strictEqual(yield* Effect.promise(() => pending), "aborted")
      yield* Effect.promise(async () => {
        while ((await Effect.runPromise(emulator.abandoned("tavily.search"))).length === 0) {
          await new Promise((resolve) => setImmediate(resolve))
        }
      })
      yield* emulator.setLatency("tavily.search", 0)
      const answered = yield* postJson(`${emulator.baseUrl("tavily")}/search`, { query: "q" })
      assert.strictEqual(answered.status, 200)
    })
  )

  it.effect("is provided as a layer", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.Emulator
      yield* emulator.respond("web.page", Emulator.page("from the layer"))
      assert.strictEqual((yield* fetchText(`${emulator.baseUrl("web")}/x`)).text, "from the layer")
    }).pipe(Effect.provide(Emulator.layer()))
  )

  it.scoped("keeps connections alive between calls, as vendors do", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("web.page", Emulator.page("again"))
      // Node's agent reuses a kept-alive socket; a keep-alive hint of a second or less makes clients drop it.
      const agent = yield* Effect.acquireRelease(
        Effect.sync(() => new Http.Agent({ keepAlive: true, maxSockets: 1 })),
        (agent) => Effect.sync(() => agent.destroy())
      )
      const get = () =>
        Effect.async<{ readonly reused: boolean; readonly keepAlive: string }>((resume) => {
          const request = Http.get(`${emulator.baseUrl("web")}/x`, { agent }, (response) => {
            response.resume()
            response.on("end", () =>
              resume(
                Effect.succeed({ reused: request.reusedSocket, keepAlive: String(response.headers["keep-alive"]) })
              )
            )
          })
        })
      const first = yield* get()
      const second = yield* get()
      assert.isFalse(first.reused)
      assert.isTrue(second.reused)
      const hint = Number(/timeout=(\d+)/.exec(first.keepAlive)?.[1])
      assert.isAtLeast(hint, 5)
    })
  )

  it.effect("stops listening when its scope closes", () =>
    Effect.gen(function* () {
      const scope = yield* Scope.make()
      const emulator = yield* Scope.extend(Emulator.start(), scope)
      yield* emulator.respond("web.page", Emulator.page("up"))
      assert.strictEqual((yield* fetchText(`${emulator.baseUrl("web")}/x`)).text, "up")
      yield* Scope.close(scope, Exit.void)
      const after = yield* Effect.exit(Effect.tryPromise(() => fetch(`${emulator.baseUrl("web")}/x`)))
      assert.isTrue(Exit.isFailure(after))
    })
  )
})
