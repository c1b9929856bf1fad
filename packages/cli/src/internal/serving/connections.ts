/**
 * How long `deep-research serve` waits for a request and how many connections one client may hold open: a client that
 * sends its headers or its body slowly, or opens connection after connection, cannot hold the server's sockets. The
 * figures are in `docs/security.md`.
 */
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import type * as nodeHttp from "node:http"
import type * as net from "node:net"

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

/** The server's options for the timeouts, checked every second rather than Node's every 30 seconds. */
export const timeouts = (limits: Limits): nodeHttp.ServerOptions => ({
  headersTimeout: limits.headersTimeoutMillis,
  requestTimeout: limits.requestTimeoutMillis,
  connectionsCheckingInterval: Math.min(1_000, limits.headersTimeoutMillis)
})

/** The connections opened beyond their client's limit, whose requests are refused. */
const beyondLimit = new WeakSet<net.Socket>()

/** The server, counting each client's open connections: one beyond `maxConnectionsPerClient` is marked. */
export const limited = (server: nodeHttp.Server, limits: Limits): nodeHttp.Server => {
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

/** What a request on a connection beyond the limit is told. */
export const tooManyConnections = (limit: number): string =>
  `This client holds more than ${limit} open connections to the server: close some, or reuse them (keep-alive), ` +
  "and try again."
