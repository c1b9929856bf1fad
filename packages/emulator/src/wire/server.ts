/**
 * The emulator's HTTP server: routes requests to endpoints, records them, refuses what the vendor would refuse (see
 * `conformance.ts`), picks the reply (one-shot queue, then the endpoint's responder, then the fallback, else a 501
 * naming the endpoint), applies latency and faults, and frames
 * `stream: true` answers as each vendor streams them.
 */
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { rejection } from "./conformance.js"
import { faultAction } from "./faults.js"
import { get } from "./json.js"
import { keylessRoutes } from "./keyless.js"
import { anthropicMessageStream, openaiChatStream, openaiResponsesStream } from "./sse.js"
import type { Endpoint, RecordedRequest, Reply, Responder } from "./types.js"

/** A fallback consulted when an endpoint has nothing scripted; `undefined` means "not mine". */
export type Fallback = (request: RecordedRequest) => Reply | undefined | Promise<Reply | undefined>

/** The mutable state behind one emulator. */
export interface State {
  readonly queues: Map<Endpoint, Array<Reply>>
  readonly responders: Map<Endpoint, { readonly responder: Responder; next: number }>
  readonly latency: Map<Endpoint | "all", number>
  readonly log: Array<RecordedRequest>
  /** Requests whose client went away before they were answered (hangs, long latency). */
  readonly abandoned: Array<RecordedRequest>
  fallback: Fallback | undefined
}

/** A running server. */
export interface Running {
  readonly url: string
  readonly state: State
  readonly close: () => Promise<void>
}

const routes: ReadonlyArray<{ readonly method: string; readonly path: RegExp; readonly endpoint: Endpoint }> = [
  { method: "POST", path: /^\/openai(?:\/v1)?\/chat\/completions$/, endpoint: "openai.chat" },
  { method: "POST", path: /^\/openai(?:\/v1)?\/responses$/, endpoint: "openai.responses" },
  { method: "GET", path: /^\/openai(?:\/v1)?\/models$/, endpoint: "openai.models" },
  { method: "POST", path: /^\/anthropic(?:\/v1)?\/messages$/, endpoint: "anthropic.messages" },
  { method: "POST", path: /^\/tavily\/search$/, endpoint: "tavily.search" },
  { method: "POST", path: /^\/tavily\/extract$/, endpoint: "tavily.extract" },
  { method: "POST", path: /^\/exa\/search$/, endpoint: "exa.search" },
  { method: "POST", path: /^\/exa\/contents$/, endpoint: "exa.contents" },
  { method: "POST", path: /^\/perplexity(?:\/v1)?\/chat\/completions$/, endpoint: "perplexity.chat" },
  { method: "GET", path: /^\/semantic-scholar\/graph\/v1\/paper\/search$/, endpoint: "semanticScholar.search" },
  { method: "GET", path: /^\/web(?:\/.*)?$/, endpoint: "web.page" },
  { method: "HEAD", path: /^\/web(?:\/.*)?$/, endpoint: "web.page" },
  ...keylessRoutes
]

const routeOf = (method: string, path: string): Endpoint | undefined =>
  routes.find((route) => route.method === method && route.path.test(path))?.endpoint

const readBody = (request: Http.IncomingMessage): Promise<string> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")))
    request.on("error", reject)
  })

const parseBody = (text: string): unknown => {
  if (text === "") return undefined
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

const flattenHeaders = (headers: Http.IncomingHttpHeaders): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [key, value] of Object.entries(headers)) {
    if (value !== undefined) out[key.toLowerCase()] = Array.isArray(value) ? value.join(", ") : value
  }
  return out
}

/** The next reply an endpoint's responder gives. */
const fromResponder = async (
  entry: { readonly responder: Responder; next: number },
  request: RecordedRequest
): Promise<Reply> => {
  const responder = entry.responder
  if (typeof responder === "function") return responder(request)
  if (isReplyList(responder)) {
    const index = Math.min(entry.next, responder.length - 1)
    entry.next += 1
    const reply: Reply | undefined = responder[index]
    return reply ?? unscripted(request)
  }
  return responder
}

const isReplyList = (responder: Responder): responder is ReadonlyArray<Reply> => Array.isArray(responder)

const unscripted = (request: RecordedRequest): Reply => ({
  kind: "json",
  status: 501,
  body: {
    error: {
      message: `The emulator has no reply scripted for ${request.endpoint} (${request.method} ${request.path}). Script it with respond() or enqueue().`,
      type: "emulator_unscripted",
      endpoint: request.endpoint
    }
  }
})

const pickReply = async (state: State, request: RecordedRequest): Promise<Reply> => {
  const queued = state.queues.get(request.endpoint)?.shift()
  if (queued !== undefined) return queued
  const entry = state.responders.get(request.endpoint)
  if (entry !== undefined) return fromResponder(entry, request)
  if (state.fallback !== undefined) {
    const reply = await state.fallback(request)
    if (reply !== undefined) return reply
  }
  return unscripted(request)
}

const wantsStream = (request: RecordedRequest): boolean => get(request.body, "stream") === true

/** A JSON answer to a `stream: true` request becomes the same content framed as the vendor streams it. */
const streamed = (endpoint: Endpoint, body: unknown, request: RecordedRequest): string | undefined => {
  switch (endpoint) {
    case "openai.chat":
    case "perplexity.chat":
      return openaiChatStream(body, get(get(request.body, "stream_options"), "include_usage") === true)
    case "anthropic.messages":
      return anthropicMessageStream(body)
    case "openai.responses":
      return openaiResponsesStream(body)
    default:
      return undefined
  }
}

const send = (
  response: Http.ServerResponse,
  status: number,
  headers: Readonly<Record<string, string>>,
  defaultType: string,
  body: string,
  head: boolean
): void => {
  const lower: Record<string, string> = {}
  for (const [key, value] of Object.entries(headers)) lower[key.toLowerCase()] = value
  delete lower["content-length"]
  delete lower["transfer-encoding"]
  delete lower["content-encoding"]
  response.writeHead(status, { "content-type": defaultType, ...lower, "content-length": Buffer.byteLength(body) })
  response.end(head ? undefined : body)
}

const delay = (ms: number, response: Http.ServerResponse): Promise<boolean> =>
  new Promise((resolve) => {
    if (ms <= 0) return resolve(true)
    const timer = setTimeout(() => {
      response.off("close", onClose)
      resolve(true)
    }, ms)
    const onClose = () => {
      clearTimeout(timer)
      resolve(false)
    }
    response.once("close", onClose)
  })

const handle = async (state: State, req: Http.IncomingMessage, res: Http.ServerResponse): Promise<void> => {
  const url = new URL(req.url ?? "/", "http://127.0.0.1")
  const method = (req.method ?? "GET").toUpperCase()
  const text = await readBody(req)
  const endpoint = routeOf(method, url.pathname)
  if (endpoint === undefined) {
    send(
      res,
      404,
      {},
      "application/json",
      JSON.stringify({ error: { message: `The emulator serves no ${method} ${url.pathname}`, type: "not_found" } }),
      false
    )
    return
  }
  const request: RecordedRequest = {
    endpoint,
    method,
    path: url.pathname,
    query: Object.fromEntries(url.searchParams.entries()),
    headers: flattenHeaders(req.headers),
    body: parseBody(text),
    at: Date.now()
  }
  state.log.push(request)
  const latency = state.latency.get(endpoint) ?? state.latency.get("all") ?? 0
  if (!(await delay(latency, res))) {
    state.abandoned.push(request)
    return
  }
  // What the vendor would refuse is refused before anything scripted is consumed.
  let reply = rejection(request) ?? (await pickReply(state, request))
  if (reply.kind === "fault") {
    const action = faultAction(endpoint, reply.fault, request)
    if (action === "hang") {
      if (res.writableFinished || req.socket.destroyed) state.abandoned.push(request)
      else res.once("close", () => state.abandoned.push(request))
      return
    }
    if (action === "reset") {
      req.socket.destroy()
      return
    }
    reply = action
  }
  const head = method === "HEAD"
  switch (reply.kind) {
    case "json": {
      const status = reply.status ?? 200
      const sse = status < 300 && wantsStream(request) ? streamed(endpoint, reply.body, request) : undefined
      if (sse !== undefined) {
        send(
          res,
          status,
          { "cache-control": "no-cache", ...reply.headers },
          "text/event-stream; charset=utf-8",
          sse,
          head
        )
        // A recorded JSON content type must not override the stream's.
        return
      }
      send(res, status, reply.headers ?? {}, "application/json", JSON.stringify(reply.body), head)
      return
    }
    case "sse":
      send(res, reply.status ?? 200, reply.headers ?? {}, "text/event-stream; charset=utf-8", reply.text, head)
      return
    case "raw":
      send(res, reply.status ?? 200, reply.headers ?? {}, "text/plain; charset=utf-8", reply.body, head)
      return
    case "fault":
      send(res, 500, {}, "application/json", JSON.stringify({ error: "a fault cannot answer a fault" }), head)
  }
}

/** Starts a server on 127.0.0.1. */
export const listen = (port: number): Promise<Running> =>
  new Promise((resolve, reject) => {
    const state: State = {
      queues: new Map(),
      responders: new Map(),
      latency: new Map(),
      log: [],
      abandoned: [],
      fallback: undefined
    }
    const server = Http.createServer((req, res) => {
      handle(state, req, res).catch((error: unknown) => {
        if (res.headersSent) return res.destroy()
        const message = error instanceof Error ? error.message : String(error)
        send(res, 500, {}, "application/json", JSON.stringify({ error: { message, type: "emulator_error" } }), false)
      })
    })
    // Vendors keep connections alive between calls; so does the emulator. (A hint of a second or less makes the
    // fetch client drop each connection after its answer, and every call then pays for a new one.)
    server.keepAliveTimeout = 30_000
    server.once("error", reject)
    server.listen(port, "127.0.0.1", () => {
      const address: AddressInfo | string | null = server.address()
      if (address === null || typeof address === "string") {
        return reject(new Error("the emulator did not get a TCP address"))
      }
      resolve({
        url: `http://127.0.0.1:${address.port}`,
        state,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done())
            server.closeAllConnections()
          })
      })
    })
  })
