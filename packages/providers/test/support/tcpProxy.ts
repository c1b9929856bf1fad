/**
 * A TCP proxy on loopback to a database, which a test closes (every connection cut, new ones refused) and opens again
 * on the same port: the database's outage as a process reaching it over the network sees one, without stopping a
 * server that other tests share.
 *
 * Used by the providers' tests and, through a relative import, by the CLI's.
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as net from "node:net"

/** A proxy's URL (the target's, on the proxy's port), and how to close it and open it again. */
export interface TcpProxy {
  readonly url: string
  readonly close: Effect.Effect<void>
  readonly open: Effect.Effect<void>
}

/** A proxy to `target` for the life of the scope, open. */
export const make = (target: URL): Effect.Effect<TcpProxy, never, Scope.Scope> =>
  Effect.gen(function* () {
    const sockets = new Set<net.Socket>()
    const server = net.createServer((client) => {
      const upstream = net.connect(Number(target.port), target.hostname)
      for (const socket of [client, upstream]) {
        sockets.add(socket)
        socket.on("close", () => sockets.delete(socket))
        socket.on("error", () => socket.destroy())
      }
      client.pipe(upstream).pipe(client)
    })
    const listen = (port: number) =>
      Effect.async<number>((resume) => {
        server.listen(port, "127.0.0.1", () => {
          const address = server.address()
          resume(Effect.succeed(typeof address === "object" && address !== null ? address.port : 0))
        })
      })
    const close = Effect.async<void>((resume) => {
      for (const socket of sockets) socket.destroy()
      server.close(() => resume(Effect.void))
    })
    const port = yield* listen(0)
    yield* Effect.addFinalizer(() => (server.listening ? close : Effect.void))
    const url = new URL(target)
    url.port = String(port)
    return { url: url.toString(), close, open: Effect.asVoid(listen(port)) }
  })
