/**
 * The SDKs' transport against the platform's `fetch`: every case is sent through both, to one local server, and what
 * the caller sees must be the same (status, status text, headers, body, and how it fails). Plus what only the
 * transport decides: an event stream handed on before it ends, and the requests it leaves to `fetch`.
 */
import { assert, describe, it } from "@effect/vitest"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as zlib from "node:zlib"
import { afterAll, beforeAll } from "vitest"
import * as HttpTransport from "../../src/models/httpTransport.js"

const transport = HttpTransport.make(globalThis.fetch)
const implementations = [
  ["fetch", globalThis.fetch],
  ["transport", transport]
] as const

let server: http.Server
let base = ""
// Event streams waiting for the test to let them finish.
const waiting: Array<() => void> = []

const json = { answer: "Solar power grew by 65 GW in 2024.", list: [1, 2, 3], unicode: "Zürich · 東京" }

const handler: http.RequestListener = (request, response) => {
  const url = new URL(request.url ?? "/", base)
  const chunks: Array<Buffer> = []
  request.on("data", (chunk: Buffer) => chunks.push(chunk))
  request.on("end", () => {
    const body = Buffer.concat(chunks).toString("utf8")
    switch (url.pathname) {
      case "/echo": {
        response.statusCode = 201
        response.statusMessage = "Made It"
        response.setHeader("x-repeated", ["one", "two"])
        response.setHeader("content-type", "application/json")
        response.end(
          JSON.stringify({
            method: request.method,
            body,
            authorization: request.headers.authorization ?? null,
            custom: request.headers["x-custom"] ?? null,
            length: request.headers["content-length"] ?? null
          })
        )
        return
      }
      case "/gzip":
      case "/deflate":
      case "/br": {
        const text = JSON.stringify(json)
        const encoded =
          url.pathname === "/gzip"
            ? zlib.gzipSync(text)
            : url.pathname === "/deflate"
              ? zlib.deflateSync(text)
              : zlib.brotliCompressSync(text)
        response.writeHead(200, { "content-type": "application/json", "content-encoding": url.pathname.slice(1) })
        response.end(encoded)
        return
      }
      case "/empty":
        response.writeHead(204, { "x-empty": "yes" })
        response.end()
        return
      case "/limited":
        response.writeHead(429, { "content-type": "application/json", "retry-after": "7", "x-request-id": "req_1" })
        response.end(JSON.stringify({ error: { message: "Rate limit reached", type: "requests", code: null } }))
        return
      case "/redirect":
        response.writeHead(307, { location: "/echo" })
        response.end()
        return
      case "/events":
        response.writeHead(200, { "content-type": "text/event-stream" })
        response.write("data: first\n\n")
        waiting.push(() => response.end("data: second\n\n"))
        return
      case "/hang":
        response.writeHead(200, { "content-type": "application/json" })
        response.write('{"partial":')
        return
      case "/cut":
        response.writeHead(200, { "content-type": "application/json", "content-length": "1000" })
        response.write('{"partial":', () => response.socket?.destroy())
        return
      default:
        response.writeHead(404)
        response.end("not found")
    }
  })
}

beforeAll(async () => {
  server = http.createServer(handler)
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(async () => {
  server.closeAllConnections()
  await new Promise<void>((resolve) => server.close(() => resolve()))
})

/** What a caller sees of a response, or of its failure. */
const seen = async (send: () => Promise<Response>) => {
  try {
    const response = await send()
    const text = await response.text()
    return {
      status: response.status,
      statusText: response.statusText,
      ok: response.ok,
      contentType: response.headers.get("content-type"),
      repeated: response.headers.get("x-repeated"),
      retryAfter: response.headers.get("retry-after"),
      hasBody: response.body !== null,
      text
    }
  } catch (error) {
    return { failed: error instanceof Error ? `${error.constructor.name} ${error.name}` : String(error) }
  }
}

const both = async (path: string, init?: RequestInit) => {
  const [platform, ours] = await Promise.all(implementations.map(([, f]) => seen(() => f(`${base}${path}`, init))))
  assert.deepStrictEqual(ours, platform)
  return ours
}

describe("HttpTransport, the same answers as fetch", () => {
  it("a JSON request: method, headers (a Headers object), body and its length; status text and repeated headers", async () => {
    const result = await both("/echo", {
      method: "post",
      headers: new Headers({ authorization: "Bearer sk-test", "x-custom": "ä", "content-type": "application/json" }),
      body: JSON.stringify({ q: "Zürich" })
    })
    assert.strictEqual("status" in result && result.status, 201)
    assert.include("text" in result ? result.text : "", '"method":"POST"')
    assert.strictEqual("repeated" in result && result.repeated, "one, two")
  })

  it("a body of bytes, and headers as a record", async () => {
    const result = await both("/echo", {
      method: "PUT",
      headers: { "x-custom": "bytes" },
      body: new TextEncoder().encode("abc")
    })
    assert.include("text" in result ? result.text : "", '"length":"3"')
  })

  it("gzip, deflate and brotli bodies arrive decoded", async () => {
    for (const path of ["/gzip", "/deflate", "/br"]) {
      const result = await both(path)
      assert.deepStrictEqual(JSON.parse("text" in result ? result.text : ""), json)
    }
  })

  it("a 204 has a null body; a 429 keeps its headers and error body", async () => {
    const empty = await both("/empty")
    assert.strictEqual("hasBody" in empty && empty.hasBody, false)
    const limited = await both("/limited")
    assert.strictEqual("retryAfter" in limited && limited.retryAfter, "7")
    assert.strictEqual("ok" in limited && limited.ok, false)
  })

  it("a redirect is followed, with the method and body of a 307", async () => {
    const result = await both("/redirect", { method: "POST", body: "again" })
    assert.include("text" in result ? result.text : "", '"body":"again"')
  })

  it("a refused connection and a connection cut mid-body fail as fetch fails", async () => {
    const closed = http.createServer()
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve))
    const port = (closed.address() as AddressInfo).port
    await new Promise<void>((resolve) => closed.close(() => resolve()))
    const [platform, ours] = await Promise.all(
      implementations.map(([, f]) => seen(() => f(`http://127.0.0.1:${port}/`)))
    )
    assert.deepStrictEqual(ours, { failed: "TypeError TypeError" })
    assert.deepStrictEqual(ours, platform)
    const cut = await both("/cut")
    assert.deepStrictEqual(cut, { failed: "TypeError TypeError" })
  })

  it("an abort before sending, and while the body is awaited, rejects with AbortError", async () => {
    const early = new AbortController()
    early.abort()
    await both("/echo", { signal: early.signal })
    for (const [name, f] of implementations) {
      const controller = new AbortController()
      const result = seen(() => f(`${base}/hang`, { signal: controller.signal }))
      setTimeout(() => controller.abort(), 50)
      assert.deepStrictEqual(await result, { failed: "DOMException AbortError" }, name)
    }
  })
})

describe("HttpTransport, what only it decides", () => {
  it("hands an event stream on as it arrives, and ends it on abort", async () => {
    const controller = new AbortController()
    const response = await transport(`${base}/events`, { signal: controller.signal })
    assert.strictEqual(response.headers.get("content-type"), "text/event-stream")
    const reader = response.body!.getReader()
    const first = await reader.read()
    assert.strictEqual(new TextDecoder().decode(first.value), "data: first\n\n")
    waiting.shift()?.()
    const second = await reader.read()
    assert.strictEqual(new TextDecoder().decode(second.value), "data: second\n\n")
    assert.strictEqual((await reader.read()).done, true)

    const aborted = new AbortController()
    const open = await transport(`${base}/events`, { signal: aborted.signal })
    const streamReader = open.body!.getReader()
    await streamReader.read()
    aborted.abort()
    const failure = await streamReader.read().then(
      () => "read",
      (error: unknown) => (error instanceof Error ? error.name : String(error))
    )
    assert.strictEqual(failure, "AbortError")
    waiting.shift()?.()
  })

  it("leaves to fetch what it does not cover: a streamed body, a Request, another protocol, a dispatcher", async () => {
    const given: Array<string> = []
    const platform: typeof fetch = (input, init) => {
      given.push(input instanceof Request ? "request" : String(input).split(":")[0]!)
      return globalThis.fetch(input, init)
    }
    const covering = HttpTransport.make(platform)
    await covering(`${base}/echo`, { method: "POST", body: "plain" })
    assert.deepStrictEqual(given, [])
    const stream = new ReadableStream({
      start: (controller) => {
        controller.enqueue(new TextEncoder().encode("streamed"))
        controller.close()
      }
    })
    await (await covering(`${base}/echo`, { method: "POST", body: stream, duplex: "half" } as RequestInit)).text()
    await (await covering(new Request(`${base}/echo`))).text()
    await covering("data:text/plain,hello").then((r) => r.text())
    await (await covering(`${base}/echo`, { dispatcher: undefined, priority: "high" } as unknown as RequestInit)).text()
    assert.deepStrictEqual(given, ["http", "request", "data", "http"])
  })
})
