/**
 * MCP over Streamable HTTP at `/mcp` of `deep-research serve`, for clients that reach a shared server rather than start
 * one: the tools of `deep-research mcp` (`Mcp.toolSet`, built once), served by the official SDK's transport, one SDK
 * server and transport per MCP session (`Mcp-Session-Id`): POST carries messages, GET opens the server's stream,
 * DELETE ends the session. Serve's guard has already refused a foreign Host on loopback (DNS rebinding) and a body
 * over its limit or not JSON; here the token is asked for as `/api` asks for it, and the Origin is checked, as MCP
 * asks of every server. An MCP session is bound to the caller that opened it (its token), and so are the tasks it
 * starts (`internal/mcp/taskOwners.ts`) and, with a token for each caller, the research sessions it starts, which its
 * tools reach as that caller (`internal/serving/sessionOwners.ts`). MCP sessions live in this process; the research
 * sessions behind them, and the tasks' bindings, live in the store (or the cluster's database), so the caller that
 * started a task reaches it from any connection, after a restart, from any server of a cluster.
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpBody from "@effect/platform/HttpBody"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js"
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import * as crypto from "node:crypto"
import * as Mcp from "../Mcp.js"
import type * as Runs from "../Runs.js"
import { servedNote } from "../internal/mcp/toolResults.js"
import { originOf } from "../internal/serving/hosts.js"
import { bearerOf, callerOf, challengeOf, tokenRefused } from "./Callers.js"

/** Where MCP is served. */
export const path = "/mcp"

/** Whom the endpoint lets in: serve's own options. */
export interface Options {
  /** The bearer token every request must carry, when the server has one. */
  readonly token: Redacted.Redacted<string> | undefined
  /** Origins whose pages may call the server (serve's `--cors-origin`), besides the server's own. */
  readonly corsOrigins: ReadonlyArray<string>
}

/**
 * How many MCP sessions are kept open at most: beyond it the one used longest ago is closed (its client, answered
 * 404, opens another, as MCP has it), so that clients that never end theirs cannot fill the memory.
 */
export const maxSessions = 1_000

// =============================================================================
// Refusals
// =============================================================================

const refusal = (status: number, tag: string, message: string, headers: Record<string, string> = {}) =>
  HttpServerResponse.unsafeJson({ _tag: tag, message }, { status, headers })

/** A JSON-RPC error with no request to answer, as the SDK's transport sends its own. */
const rpcRefusal = (status: number, code: number, message: string) =>
  HttpServerResponse.unsafeJson({ jsonrpc: "2.0", error: { code, message }, id: null }, { status })

/**
 * Whether a request's Origin may reach MCP: none (a client that is no browser), the server's own (its Host), or one
 * the server allows pages from. An Origin that is not one (user info, a path, `null`, no URL at all) never matches,
 * and a page elsewhere that reached this server is refused, as MCP asks of servers.
 */
export const originAllowed = (
  origin: string | undefined,
  host: string | undefined,
  corsOrigins: ReadonlyArray<string>
): boolean => {
  if (origin === undefined) return true
  const parsed = originOf(origin)
  if (parsed === undefined || host === undefined) return false
  return new URL(parsed).host === host.toLowerCase() || corsOrigins.includes(parsed)
}

// =============================================================================
// Sessions
// =============================================================================

/** The open MCP sessions of this process, the one used last at the end. */
const makeSessions = (toolSet: Mcp.ToolSet) => {
  const open = new Map<string, WebStandardStreamableHTTPServerTransport>()
  const forget = (sessionId: string | undefined) => {
    if (sessionId === undefined) return
    open.delete(sessionId)
    toolSet.owners.disconnect(sessionId)
  }
  return {
    /** The caller's session's transport, now the one used last; undefined for one that ended, never was, or is another's. */
    get: (sessionId: string, caller: string) => {
      const transport = toolSet.owners.callerOf(sessionId) === caller ? open.get(sessionId) : undefined
      if (transport !== undefined) {
        open.delete(sessionId)
        open.set(sessionId, transport)
      }
      return transport
    },
    /**
     * A transport for a new session of this caller, with a server of the tool set on it; kept once it is initialized,
     * and bound to its caller: another caller is told it does not exist.
     */
    start: (caller: string) =>
      Effect.promise(async () => {
        const transport = new WebStandardStreamableHTTPServerTransport({
          sessionIdGenerator: () => crypto.randomUUID(),
          onsessioninitialized: (sessionId) => {
            toolSet.owners.connect(sessionId, caller)
            open.set(sessionId, transport)
            const oldest = open.size > maxSessions ? open.entries().next().value : undefined
            if (oldest !== undefined) void oldest[1].close()
          }
        })
        // Ended by the client (DELETE), by the bound above, or when the server stops.
        transport.onclose = () => forget(transport.sessionId)
        await Mcp.connect(toolSet, transport)
        return transport
      }),
    closeAll: Effect.promise(() => Promise.all([...open.values()].map((transport) => transport.close())))
  }
}

/** The request as the SDK's web-standard transport takes it; its body, read by serve's guard, goes beside it. */
const webRequestOf = (request: HttpServerRequest.HttpServerRequest): Request =>
  new Request(new URL(request.url, `http://${request.headers["host"] ?? "localhost"}`), {
    method: request.method,
    headers: Object.entries(request.headers)
  })

const bodyOf = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.either(
    Effect.flatMap(request.text, (text) =>
      Effect.try((): unknown => (text.trim() === "" ? undefined : JSON.parse(text)))
    )
  )

const opened = new TextEncoder().encode(": open\n\n")

/**
 * The transport's answer as serve sends it. Node sends a streamed response's headers with its first bytes: the server's
 * stream (GET) starts with an SSE comment, which clients skip, so that they have it at once rather than at its first
 * message or keep-alive.
 */
const responseOf = (method: string, web: Response): HttpServerResponse.HttpServerResponse => {
  const response = HttpServerResponse.fromWeb(web)
  return method === "GET" && response.status === 200 && response.body._tag === "Stream"
    ? HttpServerResponse.setBody(
        response,
        HttpBody.stream(Stream.concat(Stream.make(opened), response.body.stream), response.body.contentType)
      )
    : response
}

const forward = (transport: WebStandardStreamableHTTPServerTransport, request: Request, body: unknown) =>
  Effect.map(
    Effect.promise(() => transport.handleRequest(request, body === undefined ? {} : { parsedBody: body })),
    (response) => responseOf(request.method, response)
  )

// =============================================================================
// The route
// =============================================================================

const handle = (sessions: ReturnType<typeof makeSessions>, options: Options) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const caller = callerOf(request.headers["authorization"], options.token)
    if (caller === undefined) {
      const presented = bearerOf(request.headers["authorization"]) ?? ""
      return refusal(401, "Unauthorized", tokenRefused(presented), { "www-authenticate": challengeOf(presented) })
    }
    if (!originAllowed(request.headers["origin"], request.headers["host"], options.corsOrigins)) {
      return refusal(403, "Forbidden", "Pages from this Origin may not call this server.")
    }
    const read = request.method === "POST" ? yield* bodyOf(request) : Either.right(undefined)
    if (Either.isLeft(read)) return rpcRefusal(400, -32700, "Parse error: the body is not JSON.")
    const body = read.right
    // As JSON-RPC 2.0 answers an empty batch.
    if (Array.isArray(body) && body.length === 0) {
      return rpcRefusal(400, -32600, "Invalid Request: an empty batch holds no message.")
    }
    const sessionId = request.headers["mcp-session-id"]
    if (sessionId !== undefined) {
      const transport = sessions.get(sessionId, caller)
      return transport === undefined
        ? rpcRefusal(404, -32001, "Session not found: it ended, or the server restarted; initialize a new one.")
        : yield* forward(transport, webRequestOf(request), body)
    }
    if (request.method === "POST" && isInitializeRequest(body)) {
      return yield* forward(yield* sessions.start(caller), webRequestOf(request), body)
    }
    return rpcRefusal(400, -32000, "Bad Request: send Mcp-Session-Id, or initialize to open a session.")
  })

/**
 * `/mcp` on serve's router, over these runs, which each caller reaches as `reach` gives them (its own sessions and no
 * one's, where the server tells its callers apart: `SessionOwners.forCallers`); its MCP sessions close with the server.
 */
export const layer = (
  runs: Runs.Runs,
  options: Options,
  reach: (caller: string | undefined) => Runs.Runs = () => runs
) =>
  HttpApiBuilder.Router.use((router) =>
    Effect.gen(function* () {
      const sessions = makeSessions(yield* Mcp.toolSet(runs, undefined, servedNote, reach))
      yield* Effect.addFinalizer(() => Effect.asVoid(sessions.closeAll))
      yield* router.all(path, handle(sessions, options))
    })
  )
