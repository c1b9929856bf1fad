/**
 * `deep-research worker --database URL`: a runner of the research cluster. It joins the cluster through the
 * database, takes its share of the shards, and runs the sessions placed on them with the models and search it was
 * given (each worker brings its own keys). It stops on SIGTERM or Ctrl-C: its shards are released for the other
 * runners, and a session it was running carries on elsewhere from its last checkpoint.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as http from "node:http"
import * as Cluster from "./Cluster.js"
import type * as CliConfig from "./CliConfig.js"
import * as Store from "./Store.js"
import * as Wiring from "./Wiring.js"

/** Where a runner listens, and the address it gives the others. */
export interface Address {
  /** The host other runners and clients reach this one at. */
  readonly host: string
  readonly port: number
  /** The interface it listens on (its host by default; 0.0.0.0 for all). */
  readonly listenHost: string
  /** A port for `GET /health` (200 while the runner serves its shards, 503 once it is stopping); none by default. */
  readonly healthPort?: number | undefined
}

/** A failure to report to the user: a message and an exit code. */
export interface Refusal {
  readonly code: number
  readonly message: string
}

/** Runs a worker until it is interrupted. */
export const run = (resolved: CliConfig.Resolved, address: Address): Effect.Effect<void, Refusal> =>
  Effect.gen(function* () {
    const url = resolved.credentials.databaseUrl
    if (url === undefined) {
      return yield* Effect.fail<Refusal>({
        code: 2,
        message: "deep-research worker needs the cluster's database: --database URL or DEEP_RESEARCH_DATABASE_URL"
      })
    }
    // The store's tables are made (or found) first: a database that cannot be reached is one plain message.
    yield* Effect.mapError(Store.checkDatabase(resolved.credentials), (error) => ({ code: 2, message: error.message }))
    const advisoryLocks = Cluster.advisoryLocksFromEnv(process.env)
    const runner = Cluster.entityLayer.pipe(
      Layer.provide(Wiring.layer(resolved)),
      Layer.provideMerge(Cluster.runnerShardingLayer(url, address, advisoryLocks))
    )
    const state = { ready: false }
    const announce = Layer.scopedDiscard(
      Effect.acquireRelease(
        Effect.zipRight(
          Effect.sync(() => (state.ready = true)),
          Effect.logInfo(`worker ready: runner ${address.host}:${address.port} (pid ${process.pid})`)
        ),
        () =>
          Effect.zipRight(
            Effect.sync(() => (state.ready = false)),
            Effect.logInfo("worker stopping: handing its shards over")
          )
      )
    )
    // Announced once the runner is up, and before it is torn down: its health answers 503 outside that span.
    yield* Layer.launch(
      announce.pipe(Layer.provide(runner.pipe(Layer.provideMerge(healthLayer(address, state)))))
    ).pipe(
      Effect.catchAll((error) =>
        Effect.fail<Refusal>({ code: 2, message: `the worker could not start: ${describe(error, address)}` })
      )
    )
  })

/**
 * `GET /health` on `healthPort` (on the listening interface): 200 `ready` while the runner serves, 503 `stopping`
 * (or `starting`) otherwise; for a load balancer or an orchestrator's probes.
 */
const healthLayer = (address: Address, state: { readonly ready: boolean }) =>
  address.healthPort === undefined
    ? Layer.empty
    : Layer.scopedDiscard(
        Effect.acquireRelease(
          Effect.async<http.Server, Refusal>((resume) => {
            const server = http.createServer((request, response) => {
              const ok = request.url === "/health" && state.ready
              response.writeHead(request.url === "/health" ? (ok ? 200 : 503) : 404, { "content-type": "text/plain" })
              response.end(request.url === "/health" ? (ok ? "ready\n" : "not ready\n") : "not found\n")
            })
            server.once("error", (error) =>
              resume(
                Effect.fail({ code: 2, message: `cannot serve health on port ${address.healthPort}: ${error.message}` })
              )
            )
            server.listen(address.healthPort, address.listenHost, () => resume(Effect.succeed(server)))
          }),
          (server) => Effect.async<void>((resume) => void server.close(() => resume(Effect.void)))
        )
      )

/** The system's code of an error's cause (`EADDRINUSE`), if it has one. */
const causeCode = (error: object): unknown => {
  const cause: unknown = Reflect.get(error, "cause")
  return typeof cause === "object" && cause !== null ? Reflect.get(cause, "code") : undefined
}

/**
 * Why a worker could not start, in words: a port another process listens on (a worker already running on this
 * machine, on the default port) is said as such, with the option that chooses another, where the socket's error said
 * only "Open".
 */
const describe = (error: unknown, address: Address): string => {
  if (typeof error !== "object" || error === null) return String(error)
  if (Reflect.get(error, "_tag") === "SocketServerError" && causeCode(error) === "EADDRINUSE") {
    return (
      `port ${address.port} on ${address.listenHost} is taken (by another deep-research worker on this machine?): ` +
      "choose another with --port"
    )
  }
  const message: unknown = Reflect.get(error, "message")
  return typeof message === "string" ? message : String(error)
}
