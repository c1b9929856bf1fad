/**
 * Who an MCP task belongs to, as the MCP specification's guidance on tasks asks: a task id is unguessable (the
 * session's id and 256 random bits, never the session id alone, whose date and six characters can be guessed), given
 * only to the client that started the task, and reached only by the caller that started it. The binding is stored
 * beside the session (an artefact, `mcp-task.json`: a digest of the random part and of the caller), so that a client
 * that reconnects after a restart, or reaches another server of a cluster, still reaches its task by its id.
 *
 * A caller is the credential a client presents: a digest of its bearer token, the same for every client of a server
 * with one token, `anyone` on a server with none, `stdio` for the client of `deep-research mcp`. `tasks/list` shows a
 * connection (an MCP session) the tasks it started, which this process remembers.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as crypto from "node:crypto"
import type * as Runs from "../../Runs.js"

/** The artefact that binds a session's task to its caller. */
export const bindingArtefact = "mcp-task.json"

/** The caller of a server without a token: every client is the same caller. */
export const anyone = "anyone"

/** The caller of the MCP server on stdio: the one client that started the process. */
export const stdio = "stdio"

const digest = (label: string, text: string): string =>
  crypto.createHash("sha256").update(`deep-research ${label}\u0000${text}`, "utf8").digest("hex")

/** The caller that presents this bearer token. */
export const callerOfToken = (token: string): string => `token:${digest("caller", token)}`

const Binding = Schema.parseJson(Schema.Struct({ taskDigest: Schema.String, caller: Schema.String }))

/** How much randomness a task id carries beyond its session id. */
export const randomBytes = 32

/** A task id: the session's id, a dot, then 256 random bits (base64url). */
const parse = (taskId: string): { readonly sessionId: string; readonly secret: string } | undefined => {
  const dot = taskId.lastIndexOf(".")
  if (dot <= 0) return undefined
  const secret = taskId.slice(dot + 1)
  return /^[A-Za-z0-9_-]{43}$/.test(secret) ? { sessionId: taskId.slice(0, dot), secret } : undefined
}

const same = (a: string, b: string): boolean =>
  a.length === b.length && crypto.timingSafeEqual(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"))

/** The tasks of a tool set: their bindings, the callers of the open connections, what each connection started. */
export interface Owners {
  /** Binds a connection (an MCP session of the HTTP server) to the caller that opened it. */
  readonly connect: (connection: string, caller: string) => void
  readonly disconnect: (connection: string) => void
  /** The caller behind a connection: the one that opened it, or the stdio client when there is none. */
  readonly callerOf: (connection: string | undefined) => string | undefined
  /** A new task of the session for the caller of the connection: its id, once its binding is stored. */
  readonly bind: (sessionId: string, connection: string | undefined) => Effect.Effect<string>
  /** The session of a task, when the caller of the connection may reach it; none for any other task id. */
  readonly reach: (taskId: string, connection: string | undefined) => Effect.Effect<Option.Option<string>>
  /** The ids of the tasks the connection started, oldest first. */
  readonly startedBy: (connection: string | undefined) => ReadonlyArray<string>
}

/** The owners of the tasks of these runs. */
export const make = (runs: Runs.Runs): Owners => {
  const callers = new Map<string, string>()
  const started = new Map<string, Array<string>>()
  const keyOf = (connection: string | undefined) => connection ?? stdio
  const callerOf = (connection: string | undefined) => (connection === undefined ? stdio : callers.get(connection))
  const stored = (sessionId: string) =>
    runs.artefact(sessionId, bindingArtefact).pipe(
      Effect.map(Option.flatMap((text) => Option.getRight(Schema.decodeEither(Binding)(text)))),
      Effect.orElseSucceed(() => Option.none())
    )
  return {
    connect: (connection, caller) => void callers.set(connection, caller),
    disconnect: (connection) => {
      callers.delete(connection)
      started.delete(connection)
    },
    callerOf,
    bind: (sessionId, connection) =>
      Effect.gen(function* () {
        const caller = callerOf(connection) ?? anyone
        const secret = crypto.randomBytes(randomBytes).toString("base64url")
        const binding = Schema.encodeSync(Binding)({ taskDigest: digest("task", secret), caller })
        // A cluster's runner stores a new session when it starts it: the binding waits for it (ten seconds at most).
        yield* runs
          .saveArtefact(sessionId, bindingArtefact, binding)
          .pipe(Effect.retry({ schedule: Schedule.spaced("250 millis"), times: 40 }), Effect.orDie)
        const taskId = `${sessionId}.${secret}`
        const key = keyOf(connection)
        started.set(key, [...(started.get(key) ?? []), taskId])
        return taskId
      }),
    reach: (taskId, connection) =>
      Effect.gen(function* () {
        const parsed = parse(taskId)
        const caller = callerOf(connection)
        if (parsed === undefined || caller === undefined) return Option.none()
        const binding = yield* stored(parsed.sessionId)
        if (Option.isNone(binding)) return Option.none()
        const secretMatches = same(binding.value.taskDigest, digest("task", parsed.secret))
        return secretMatches && same(binding.value.caller, caller) ? Option.some(parsed.sessionId) : Option.none()
      }),
    startedBy: (connection) => started.get(keyOf(connection)) ?? []
  }
}
