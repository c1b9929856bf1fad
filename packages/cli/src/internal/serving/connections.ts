/**
 * How long `deep-research serve` waits for a request and how many connections one client may hold open: a client that
 * sends its headers or its body slowly, or opens connection after connection, cannot hold the server's sockets. The
 * figures are in `docs/security.md`.
 */
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import type * as nodeHttp from "node:http"
import type * as net from "node:net"
import type * as stream from "node:stream"

/** A request's headers must all arrive within this time (milliseconds): Node answers 408 and closes otherwise. */
export const headersTimeoutMillis = 10_000

/**
 * A whole request, headers and body (256 KiB at most), must arrive within this time (milliseconds): Node answers 408
 * and closes otherwise. The answer may take as long as it takes (a report, an event stream).
 */
export const requestTimeoutMillis = 30_000

/** The open connections one client (one remote address) may hold; a request on one beyond them is refused with 429. */
export const maxConnectionsPerClient = 256

/** How a server is limited (`Serve.Options`; the figures above by default). */
export interface Limits {
  readonly headersTimeoutMillis: number
  readonly requestTimeoutMillis: number
  readonly maxConnectionsPerClient: number
}

/**
 * The server's options for the timeouts, checked every second rather than Node's every 30 seconds. A request without
 * a Host is let through to the guard, which says what is wrong in a sentence (Node's own 400 has no body).
 */
export const timeouts = (limits: Limits): nodeHttp.ServerOptions => ({
  headersTimeout: limits.headersTimeoutMillis,
  requestTimeout: limits.requestTimeoutMillis,
  connectionsCheckingInterval: Math.min(1_000, limits.headersTimeoutMillis),
  requireHostHeader: false
})

/** What a request Node refuses before any handler sees it is told, by the code of Node's error. */
const clientErrorAnswer = (code: string | undefined, limits: Limits) => {
  switch (code) {
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return {
        status: "408 Request Timeout",
        tag: "RequestTimeout",
        message:
          `The request came too slowly: its headers must arrive within ${limits.headersTimeoutMillis / 1000} s ` +
          `and all of it within ${limits.requestTimeoutMillis / 1000} s.`
      }
    case "HPE_HEADER_OVERFLOW":
      return {
        status: "431 Request Header Fields Too Large",
        tag: "HeadersTooLarge",
        message: "The request's headers are too large."
      }
    case "HPE_CHUNK_EXTENSIONS_OVERFLOW":
      return {
        status: "413 Payload Too Large",
        tag: "PayloadTooLarge",
        message: "The request's chunk extensions are too large."
      }
    default:
      return {
        status: "400 Bad Request",
        tag: "BadRequest",
        message: "The request is not HTTP/1.1 this server can read."
      }
  }
}

/**
 * Answers what Node refuses before a handler sees it (a request too slow, headers too large, bytes that are not HTTP)
 * with a sentence in JSON, as every other refusal, where Node's own answer has a status line only; then closes the
 * connection. Nothing is written over a response already under way, nor to a socket the client has closed.
 */
const answerClientErrors = (server: nodeHttp.Server, limits: Limits) =>
  server.on("clientError", (error: NodeJS.ErrnoException, socket: stream.Duplex) => {
    const inFlight: unknown = Reflect.get(socket, "_httpMessage")
    const started = typeof inFlight === "object" && inFlight !== null && Reflect.get(inFlight, "headersSent") === true
    if (socket.writable && !started && error.code !== "ECONNRESET") {
      const answer = clientErrorAnswer(error.code, limits)
      const body = JSON.stringify({ _tag: answer.tag, message: answer.message })
      socket.write(
        `HTTP/1.1 ${answer.status}\r\nContent-Type: application/json\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n${body}`
      )
    }
    socket.destroy(error)
  })

/** The connections opened beyond their client's limit, whose requests are refused. */
const beyondLimit = new WeakSet<net.Socket>()

/**
 * The server, counting each client's open connections (one beyond `maxConnectionsPerClient` is marked), and answering
 * what Node refuses before any handler in a sentence.
 */
export const limited = (server: nodeHttp.Server, limits: Limits): nodeHttp.Server => {
  answerClientErrors(server, limits)
  const open = new Map<string, number>()
  server.on("connection", (socket: net.Socket) => {
    const client = socket.remoteAddress ?? ""
    const count = (open.get(client) ?? 0) + 1
    open.set(client, count)
    if (count > limits.maxConnectionsPerClient) beyondLimit.add(socket)
    socket.once("close", () => {
      const left = (open.get(client) ?? 1) - 1
      if (left === 0) open.delete(client)
      else open.set(client, left)
    })
  })
  return server
}

/** Whether a request came on a connection beyond its client's limit. */
export const isBeyondLimit = (request: HttpServerRequest.HttpServerRequest): boolean => {
  try {
    return beyondLimit.has(NodeHttpServerRequest.toIncomingMessage(request).socket)
  } catch {
    // A request that did not come through Node's server (none here) has no connection to count.
    return false
  }
}

/** How many Host header lines a request has (Node keeps the first of several, which RFC 9112 asks to refuse). */
export const hostLines = (request: HttpServerRequest.HttpServerRequest): number => {
  try {
    const raw = NodeHttpServerRequest.toIncomingMessage(request).rawHeaders
    return raw.filter((name, i) => i % 2 === 0 && name.toLowerCase() === "host").length
  } catch {
    // A request that did not come through Node's server (none here) has its headers as given: one Host at most.
    return 1
  }
}

/** What a request on a connection beyond the limit is told. */
export const tooManyConnections = (limit: number): string =>
  `This client holds more than ${limit} open connections to the server: close some, or reuse them (keep-alive), ` +
  "and try again."
