/**
 * `deep-research serve`: the HTTP API (`http/Api.ts`), its OpenAPI document and docs, the OpenAI-compatible
 * endpoint, MCP over Streamable HTTP (`http/McpHttp.ts`) and the web page, over the same hosted runs as the MCP server
 * on stdio (`Runs`). Loopback by default; any other address needs `DEEP_RESEARCH_API_TOKEN` (32 characters at least).
 * A body is read only with the token, and limited in size and nesting before it is parsed; a request's headers and body
 * have a time limit and a client a number of connections (`internal/serving/connections.ts`); CORS is off unless
 * origins are given; an outage of the database is a 503 naming it; no error body carries a secret.
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpApiScalar from "@effect/platform/HttpApiScalar"
import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpIncomingMessage from "@effect/platform/HttpIncomingMessage"
import * as HttpServer from "@effect/platform/HttpServer"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as nodeFs from "node:fs"
import * as nodeHttp from "node:http"
import type * as CliConfig from "./CliConfig.js"
import { Api, ServiceUnavailable } from "./http/Api.js"
import { asOpenAiError, withExcerpts, withoutSecrets, withReadableMessage } from "./http/errorBodies.js"
import * as Callers from "./http/Callers.js"
import * as Handlers from "./http/Handlers.js"
import * as McpHttp from "./http/McpHttp.js"
import * as OpenAiCompat from "./http/OpenAiCompat.js"
import * as RequestLimits from "./http/requestLimits.js"
import * as Unrouted from "./http/Unrouted.js"
import * as Connections from "./internal/serving/connections.js"
import { hostNameOf, originOf } from "./internal/serving/hosts.js"
import * as DatabaseProbe from "./internal/serving/databaseProbe.js"
import * as Nesting from "./internal/serving/nesting.js"
import * as SessionOwners from "./internal/serving/sessionOwners.js"
import type * as Runs from "./Runs.js"
import * as ServingRuns from "./ServingRuns.js"

// =============================================================================
// Options
// =============================================================================

/** How the server listens and whom it lets in. */
export interface Options {
  readonly host: string
  readonly port: number
  /** The bearer token every API request must carry; required on any address but loopback. */
  readonly token: Redacted.Redacted<string> | undefined
  /** Origins allowed to call the API from a browser page of theirs; none: CORS off. */
  readonly corsOrigins: ReadonlyArray<string>
  /** Request bodies larger than this are refused with 413 before they are parsed. */
  readonly maxBodyBytes: number
  /** The database the runs keep their sessions in (`--database`): an outage of it is a 503 naming it. */
  readonly database?: Redacted.Redacted<string> | undefined
  /** How long a request's headers, and the whole request, may take to arrive: 408 and closed beyond. */
  readonly headersTimeoutMillis: number
  readonly requestTimeoutMillis: number
  /** How many connections one client (remote address) may hold open: a request on one more is refused with 429. */
  readonly maxConnectionsPerClient: number
}

/**
 * The defaults: loopback, port 8787, no CORS, bodies up to 256 KiB, headers within 10 s and the whole request within
 * 30 s, 256 open connections a client.
 */
export const defaults: Options = {
  host: "127.0.0.1",
  port: 8787,
  token: undefined,
  corsOrigins: [],
  maxBodyBytes: 256 * 1024,
  headersTimeoutMillis: Connections.headersTimeoutMillis,
  requestTimeoutMillis: Connections.requestTimeoutMillis,
  maxConnectionsPerClient: Connections.maxConnectionsPerClient
}

export { hostNameOf, originOf }

/** Whether an address to listen on is reachable from this machine only. */
export const isLoopback = (host: string): boolean => {
  const bare = host.replace(/^\[|\]$/g, "").toLowerCase()
  return bare === "localhost" || bare === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(bare)
}

/** The shortest API token the server takes: as long as the README's `openssl rand -hex 32` is not guessed. */
export const minimumTokenLength = 32

/** Why the server must not start with these options, if it must not. */
export const refusal = (options: Pick<Options, "host" | "token">): string | undefined => {
  if (options.token !== undefined) {
    // Each of the tokens, when it holds several (one for each caller).
    const lengths = Callers.tokensOf(options.token).map((token) => token.length)
    const length = lengths.length === 0 ? 0 : Math.min(...lengths)
    return length >= minimumTokenLength
      ? undefined
      : `DEEP_RESEARCH_API_TOKEN is ${length} characters long; deep-research serve takes a token of at least ` +
          `${minimumTokenLength}, which no one guesses: make one with \`openssl rand -hex 32\`.`
  }
  return isLoopback(options.host)
    ? undefined
    : `deep-research serve listens on ${options.host}, which other machines can reach: set DEEP_RESEARCH_API_TOKEN ` +
        "to a long random secret first (`openssl rand -hex 32`; clients then send Authorization: Bearer <token>), " +
        "or keep the default --host 127.0.0.1."
}

// =============================================================================
// Requests before the API sees them
// =============================================================================

/** What is served beside the API: the page, its files, the API's docs and OpenAPI document. */
const pages = ["/", "/assets/:name", "/docs", "/openapi.json"]

const knownRoutes = Unrouted.routesOf(Api, pages)

const isJson = (contentType: string | undefined): boolean =>
  contentType !== undefined && /^application\/([\w.-]+\+)?json\s*(;|$)/i.test(contentType)

/**
 * Refuses what no handler should see: a request on a connection beyond its client's limit (429), a Host that is not a
 * host and port (400), a request to a loopback server without a token that names another host (a page
 * elsewhere reaching this server through DNS rebinding), a body sent without the token when one is set (refused
 * before it is read), a body over the limit (read here with the limit, so the handler reads it from memory; a body
 * streamed without a length is refused), a body that is not JSON or nests too deep to decode. Every error leaves as
 * JSON with a message, also where the router has none (a path nobody serves, a method a path does not take), quotes
 * the request only in part, and quotes a secret as `[redacted]`.
 */
export const guard =
  (options: Options, scrub: (text: string) => string, database?: DatabaseProbe.Probe) =>
  <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R> =>
    Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      const openAi = request.url.startsWith("/v1/")
      // Every response leaves through here, errors in the shape their clients read (for /v1, OpenAI's).
      const finish = (response: HttpServerResponse.HttpServerResponse) => {
        const explained = Unrouted.explain(knownRoutes, request.method, request.url, response)
        return HttpServerResponse.setHeader(
          withoutSecrets(withExcerpts(openAi ? asOpenAiError(explained) : withReadableMessage(explained)), scrub),
          "x-content-type-options",
          "nosniff"
        )
      }
      const refuse = (status: number, tag: string, message: string) =>
        finish(HttpServerResponse.unsafeJson({ _tag: tag, message }, { status }))
      if (Connections.isBeyondLimit(request)) {
        return HttpServerResponse.setHeader(
          refuse(429, "TooManyConnections", Connections.tooManyConnections(options.maxConnectionsPerClient)),
          "connection",
          "close"
        )
      }
      const host = hostNameOf(request.headers["host"])
      if (host === undefined) {
        return refuse(400, "BadRequest", "The Host header is not a host name and port (RFC 9110, section 7.2).")
      }
      if (Connections.hostLines(request) > 1) {
        return refuse(400, "BadRequest", "The request has more than one Host header (RFC 9112, section 3.2).")
      }
      // An Origin a browser would never send (user info, a path, no URL at all) is refused on every path; MCP
      // checks further which origins may call it. `null`, a page with no origin of its own, is an origin.
      const origin = request.headers["origin"]
      if (origin !== undefined && origin !== "null" && originOf(origin) === undefined) {
        return refuse(403, "Forbidden", "The Origin header is not an origin (scheme://host[:port]).")
      }
      if (options.token === undefined && !isLoopback(host)) {
        return refuse(
          403,
          "Forbidden",
          "This server answers requests to localhost only (set DEEP_RESEARCH_API_TOKEN to serve other names)."
        )
      }
      if (request.method === "POST" || request.method === "PUT" || request.method === "PATCH") {
        // Every route that takes a body needs the token: without it, nothing of the body is read.
        const presented = RequestLimits.bearerOf(request.headers["authorization"])
        if (options.token !== undefined && !Callers.accepts(presented, options.token)) {
          // As RFC 6750 has it, and as MCP clients read it to know they need a bearer token.
          return finish(
            HttpServerResponse.unsafeJson(
              { _tag: "Unauthorized", message: Callers.tokenRefused(presented) },
              { status: 401, headers: { "www-authenticate": Callers.challengeOf(presented) } }
            )
          )
        }
        const tooLarge = () => refuse(413, "PayloadTooLarge", `The request body is over ${options.maxBodyBytes} bytes.`)
        // A streamed body of unknown length could only be refused by cutting the connection mid-request, leaving the
        // client no answer: it is refused whole instead. Every JSON client sends a length.
        if (request.headers["transfer-encoding"] !== undefined) {
          return refuse(411, "LengthRequired", "Send the request body with a Content-Length.")
        }
        const declared = Number(request.headers["content-length"] ?? "0")
        if (declared > options.maxBodyBytes) return tooLarge()
        const read = yield* Effect.either(
          HttpIncomingMessage.withMaxBodySize(request.text, Option.some(options.maxBodyBytes))
        )
        if (read._tag === "Left") return tooLarge()
        // Every body the API takes is JSON: anything else is said to be so, rather than decoded as a string.
        if (read.right.trim() !== "") {
          const contentType = request.headers["content-type"]
          if (!isJson(contentType)) {
            return refuse(
              415,
              "UnsupportedMediaType",
              `Send the request body as JSON, with Content-Type: application/json (it came as ${contentType ?? "no content type"}).`
            )
          }
          if (Nesting.textNestsDeeperThan(read.right, Nesting.maxNesting)) {
            return refuse(400, "TooDeep", `The request body is ${Nesting.tooDeep}.`)
          }
          const invalid = jsonError(read.right)
          if (invalid !== undefined) return refuse(400, "InvalidJson", `The request body is not valid JSON: ${invalid}`)
        }
      }
      // What the API answers is sent before this middleware would see it: it is finished on its way out instead.
      yield* HttpApp.appendPreResponseHandler((_, response) => Effect.map(sayingOutage(database, response), finish))
      return yield* app
    })

/**
 * A failure (500) said as the outage it came from when the database does not answer now: a 503 naming it, the
 * sentence health and the CLI say. Other responses, and every response of a server without a database, pass as they are.
 */
const sayingOutage = (
  database: DatabaseProbe.Probe | undefined,
  response: HttpServerResponse.HttpServerResponse
): Effect.Effect<HttpServerResponse.HttpServerResponse> =>
  database === undefined || response.status !== 500
    ? Effect.succeed(response)
    : Effect.map(database.check, (unavailable) =>
        unavailable === undefined
          ? response
          : HttpServerResponse.unsafeJson(
              encodeServiceUnavailable(new ServiceUnavailable({ message: unavailable.message })),
              {
                status: 503,
                headers: response.headers
              }
            )
      )

const encodeServiceUnavailable = Schema.encodeSync(ServiceUnavailable)

/** Why a text is not JSON, or undefined when it is. */
const jsonError = (text: string): string | undefined => {
  try {
    JSON.parse(text)
    return undefined
  } catch (error) {
    return error instanceof Error ? error.message : String(error)
  }
}

// =============================================================================
// The web page
// =============================================================================

const assetTypes: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml"
}

/** Where the built page lives: `assets/` beside `src/` and `dist/` alike. */
export const assetsDirectory = new URL("../assets/", import.meta.url)

const pagePolicy =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

/** The page at `/` and its files under `/assets/`, read once when the server starts. */
const pageLayer = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function* () {
    const names = yield* Effect.sync(() => nodeFs.readdirSync(assetsDirectory))
    for (const name of names) {
      const type = assetTypes[name.slice(name.lastIndexOf("."))]
      if (type === undefined) continue
      const body = yield* Effect.sync(() => nodeFs.readFileSync(new URL(name, assetsDirectory)))
      const response = HttpServerResponse.uint8Array(body, {
        contentType: type,
        headers: { "content-security-policy": pagePolicy, "cache-control": "no-cache" }
      })
      yield* router.get(name === "index.html" ? "/" : `/assets/${name}`, Effect.succeed(response))
    }
  })
)

// =============================================================================
// Layers
// =============================================================================

/** Every route of the server over some runs, given an `HttpServer`. */
export const routes = (runs: Runs.Runs, options: Options) =>
  Layer.unwrapEffect(
    Effect.map(DatabaseProbe.forDatabase(options.database), (database) => routesProbing(runs, options, database))
  )

const routesProbing = (runs: Runs.Runs, options: Options, database: DatabaseProbe.Probe | undefined) => {
  // Each request's caller reaches its own sessions and no one's, where the server tells its callers apart.
  const reach = SessionOwners.forCallers(runs, Callers.tellsCallersApart(options.token))
  const runsOf = Callers.runsOfRequests(reach, options.token)
  return HttpApiBuilder.serve(guard(options, runs.scrub, database)).pipe(
    Layer.provide(HttpApiScalar.layer({ path: "/docs" })),
    Layer.provide(HttpApiBuilder.middlewareOpenApi({ path: "/openapi.json" })),
    Layer.provide(pageLayer),
    Layer.provide(McpHttp.layer(runs, options, reach)),
    Layer.provide(
      options.corsOrigins.length === 0
        ? Layer.empty
        : HttpApiBuilder.middlewareCors({ allowedOrigins: options.corsOrigins, maxAge: 600 })
    ),
    Layer.provide(HttpApiBuilder.api(Api)),
    Layer.provide(
      Layer.mergeAll(
        Handlers.sessionsLayer(runsOf),
        Handlers.systemLayer(runs, database),
        Handlers.libraryLayer(runsOf),
        OpenAiCompat.layer(runsOf)
      ).pipe(Layer.provide(Callers.authorizationLayer(options.token)))
    )
  )
}

/** The server listening on its address, which the `HttpServer` it outputs tells. */
export const layer = (runs: Runs.Runs, options: Options) =>
  Layer.provideMerge(
    routes(runs, options),
    NodeHttpServer.layer(() => Connections.limited(nodeHttp.createServer(Connections.timeouts(options)), options), {
      host: options.host,
      port: options.port
    })
  )

/** A served address as a URL. */
export const urlOf = (address: HttpServer.Address): string =>
  address._tag === "UnixAddress"
    ? `unix:${address.path}`
    : `http://${address.hostname.includes(":") ? `[${address.hostname}]` : address.hostname}:${address.port}`

/** Serves until interrupted: hosts the runs, listens, and says where on stderr. */
export const serve = (resolved: CliConfig.Resolved, options: Options) =>
  Effect.gen(function* () {
    const refused = refusal(options)
    if (refused !== undefined) return yield* Effect.fail(new Error(refused))
    // Nothing a stopped server acknowledged is lost: what it left queued or interrupted runs again here.
    const runs = yield* ServingRuns.make(resolved, { resumeStopped: true })
    const context = yield* Layer.build(layer(runs, options))
    const server = yield* Effect.provide(HttpServer.HttpServer, context)
    const url = urlOf(server.address)
    yield* Effect.sync(() =>
      process.stderr.write(
        `deep-research serve${resolved.simulate ? " [simulated]" : ""}: ${url}/ (API docs ${url}/docs, OpenAPI ` +
          `${url}/openapi.json, OpenAI-compatible ${url}/v1, MCP ${url}${McpHttp.path})${options.token === undefined ? "" : "; API token required"}\n`
      )
    )
    return yield* Effect.never
  }).pipe(Effect.scoped)
