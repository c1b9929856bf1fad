/**
 * How the MCP server answers a tool call, whatever the tool: its arguments decoded into a sentence a model acts on
 * when they are wrong, its effect run in the server's runtime, its value or its error's message as the result (text,
 * and data in the shape of the tool's `outputSchema`), and what the call asked beside its arguments (a task, progress,
 * its cancellation).
 */
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js"
import type {
  CreateTaskResult,
  ElicitRequestFormParams,
  ElicitResult,
  ServerNotification,
  ServerRequest
} from "@modelcontextprotocol/sdk/types.js"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as ParseResult from "effect/ParseResult"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import * as DatabaseProbe from "../serving/databaseProbe.js"
import * as DecodeIssues from "../serving/decodeIssues.js"
import * as Nesting from "../serving/nesting.js"

/** A tool's result as MCP carries it: text for every client, and data in the shape of its `outputSchema`. */
export type Content = {
  readonly isError?: boolean
  readonly content: Array<{ type: "text"; text: string }>
  readonly structuredContent?: { readonly [key: string]: unknown }
}

/** Progress for a client that gave a progress token: a number that grows with each notice, and what is going on. */
export type OnProgress = (progress: number, message: string) => Effect.Effect<void>

/** How a tool was called, beside its arguments. */
export interface Call {
  /** The client asked for a task (MCP 2025-11-25): the tool answers with one at once. */
  readonly task: boolean
  /** Progress for the client, when it gave a progress token. */
  readonly onProgress: OnProgress | undefined
  /** Aborted when the client cancels the call or goes away. */
  readonly signal: AbortSignal
  /** The MCP session the call came on (Streamable HTTP's `Mcp-Session-Id`); none on stdio. */
  readonly connection: string | undefined
  /** Asks the client's user through a form (MCP elicitation), when the client said it can. */
  readonly elicit?: ((request: ElicitRequestFormParams) => Promise<ElicitResult>) | undefined
}

/** A tool's implementation. */
export type Handler = (args: unknown, call: Call) => Promise<Content | CreateTaskResult>

export const text = (value: string): Content => ({ content: [{ type: "text", text: value }] })

/**
 * A result as data, in the shape the tool's `outputSchema` publishes (`structuredContent`), and the same JSON as text
 * for clients that read only the text, as MCP asks of a tool that returns structured content.
 */
export const structured =
  <A, I extends { readonly [key: string]: unknown }>(schema: Schema.Schema<A, I>) =>
  (value: A): Content => {
    const encoded = Schema.encodeSync(schema)(value)
    return { content: [{ type: "text", text: JSON.stringify(encoded, null, 2) }], structuredContent: encoded }
  }

/**
 * A JSON-RPC error as the SDK sends it (its code, its message as is). Not the SDK's `McpError`, whose message carries
 * the "MCP error -32602:" prefix that a client adds again when it reads the error.
 */
export class ProtocolError extends Error {
  constructor(
    readonly code: number,
    message: string
  ) {
    super(message)
  }
}

export const failure = (message: string): Content => ({ isError: true, content: [{ type: "text", text: message }] })

export const decodeArgs = <A, I>(schema: Schema.Schema<A, I>, args: unknown): Either.Either<A, string> =>
  // Thousands of levels would take the decoder past the stack: they are refused before it walks them.
  Nesting.valueNestsDeeperThan(args, Nesting.maxNesting)
    ? Either.left(`${Nesting.tooDeep}.`)
    : Either.mapLeft(
        Schema.decodeUnknownEither(schema, { onExcessProperty: "error", errors: "all" })(args ?? {}),
        // Said as a sentence a model acts on ('sessionId' is required.), not Schema's tree of the whole arguments.
        (error) =>
          DecodeIssues.messageOf(ParseResult.ArrayFormatter.formatErrorSync(error)) ??
          ParseResult.TreeFormatter.formatErrorSync(error)
      )

/**
 * A tool's answer from an effect run in `runtime` (the server's: its log lines go to stderr, never among the messages
 * on stdout), interrupted when `signal` aborts: its value as the tool says it, or its error's message; a failure while
 * the database does not answer is said as that outage, in the sentence the CLI and the HTTP API say.
 */
export const answerIn =
  (runtime: Runtime.Runtime<never>, database?: DatabaseProbe.Probe) =>
  <A, E>(effect: Effect.Effect<A, E>, onSuccess: (a: A) => Content, signal?: AbortSignal): Promise<Content> =>
    Runtime.runPromiseExit(runtime)(
      DatabaseProbe.sayingOutage(database)(effect),
      signal === undefined ? {} : { signal }
    ).then((exit) =>
      Exit.match(exit, {
        onSuccess,
        onFailure: (cause) => {
          const error = Cause.squash(cause)
          return failure(error instanceof Error ? error.message : String(error))
        }
      })
    )

/** An effect as the SDK takes it: a promise that rejects with the effect's own error (a `ProtocolError` keeps its code). */
export const promised =
  (runtime: Runtime.Runtime<never>) =>
  <A, E>(effect: Effect.Effect<A, E>): Promise<A> =>
    Runtime.runPromiseExit(runtime)(effect).then((exit) =>
      Exit.isSuccess(exit) ? exit.value : Promise.reject(Cause.squash(exit.cause))
    )

/** A handler that decodes its arguments first. */
export const withArgs =
  <A, I>(schema: Schema.Schema<A, I>, f: (args: A) => Promise<Content>) =>
  async (args: unknown): Promise<Content> => {
    const decoded = decodeArgs(schema, args)
    return Either.isLeft(decoded) ? failure(`Invalid arguments: ${decoded.left}`) : f(decoded.right)
  }

/** How a request asked for its tool call: its task, its progress token, its signal. */
export const callOf = (
  params: { readonly task?: unknown },
  extra: RequestHandlerExtra<ServerRequest, ServerNotification>,
  elicit?: Call["elicit"]
): Call => {
  const token = extra._meta?.progressToken
  return {
    task: params.task !== undefined,
    onProgress:
      token === undefined
        ? undefined
        : (progress, message) =>
            // A notice the client can no longer take changes nothing of the research.
            Effect.ignore(
              Effect.tryPromise(() =>
                extra.sendNotification({
                  method: "notifications/progress",
                  params: { progressToken: token, progress, message }
                })
              )
            ),
    signal: extra.signal,
    connection: extra.sessionId,
    elicit
  }
}
