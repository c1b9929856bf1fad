/**
 * The MCP server's tools, built once over some runs and attached to any transport: `deep-research mcp` serves them on
 * stdio, `deep-research serve` over Streamable HTTP at `/mcp` (`http/McpHttp.ts`). Research starts in the background
 * and returns a session id at once; clients poll its status and progress, read the report, answer a clarification
 * question, cancel, list and evaluate; or they call `research`, as an MCP task or plainly (`McpResearch.ts`). It shares
 * the session store with the CLI.
 */
import * as Secrets from "@deep-research/providers/Secrets"
import { Evaluation } from "@deep-research/evaluation"
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import type * as CliConfig from "./CliConfig.js"
import * as StoredEvaluation from "./StoredEvaluation.js"
import { Unanswered } from "./internal/mcp/answeredBeforeClose.js"
import * as DatabaseProbe from "./internal/serving/databaseProbe.js"
import * as FollowUpTools from "./internal/mcp/followUpTools.js"
import * as McpCall from "./internal/mcp/mcpCall.js"
import { decisionOf, ReviewArgs } from "./internal/mcp/reviewArgs.js"
import { Cancelled, Deleted, hostedNote, SessionList, StartedHere } from "./internal/mcp/toolResults.js"
import * as JsonRpcLines from "./internal/mcp/jsonRpcLines.js"
import * as McpResearch from "./McpResearch.js"
import * as TaskOwners from "./internal/mcp/taskOwners.js"
import * as ToolSpecs from "./internal/mcp/toolSpecs.js"
import { type Hints, spec, type ToolSpec } from "./internal/mcp/toolSpecs.js"
import type * as Runs from "./Runs.js"
import * as ServingRuns from "./ServingRuns.js"
import * as RunSchema from "./RunSchema.js"
import { version } from "./version.js"

// =============================================================================
// Tool arguments
// =============================================================================

const SessionIdArgs = Schema.Struct({
  sessionId: Schema.String.annotations({ description: "The id start_research returned" })
})

/** The question and the options of a session, as `research` takes them too. */
const StartArgs = McpResearch.Args

const AnswerArgs = Schema.Struct({
  sessionId: Schema.String,
  answer: RunSchema.trimmedText("The answer to the clarification question")
})

/** No arguments, as the tool's schema says (`additionalProperties: false`): an empty struct alone takes any object. */
const NoArgs = Schema.Struct({}).pipe(
  Schema.filter((args) => {
    const given = Object.keys(args)[0]
    return given === undefined || { path: [given], message: "this tool takes no arguments" }
  })
)

/** Reads the store only. */
const reads: Hints = { readOnlyHint: true, openWorldHint: false }

const tools: ReadonlyArray<ToolSpec> = [
  {
    ...spec(
      "research",
      "Research",
      "Research a question to its cited report. Best called as a task: its result is the report with its sources, and only the client that started it reaches it by its id. Called plainly, it answers when the report is written (minutes), with progress notifications when asked.",
      StartArgs,
      { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
      McpResearch.ResearchReport
    ),
    execution: { taskSupport: "optional" }
  },
  spec(
    "start_research",
    "Start research",
    "Start researching a question. Returns a session id at once; the research runs in the background.",
    StartArgs,
    // Each call starts another session.
    { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    StartedHere
  ),
  spec(
    "get_status",
    "Research status",
    "The status of a session (queued while it waits for a free slot, running, awaiting_clarification, awaiting_review, completed, failed, cancelled) with its progress: phase, round, researchers, sources, tokens and cost; the clarification question when one is pending, the plan (brief and directives) when it awaits review (review_plan), and what the source policy left out (sourcePolicyRemovals).",
    SessionIdArgs,
    reads,
    RunSchema.RunStatus
  ),
  spec(
    "get_report",
    "Research report",
    "The report of a completed session, as markdown with numbered citations.",
    SessionIdArgs,
    reads
  ),
  spec(
    "list_sessions",
    "List sessions",
    "Every session: id, status, question, created, cost.",
    NoArgs,
    reads,
    SessionList
  ),
  spec(
    "answer_clarification",
    "Answer clarification",
    "Answer the clarification question of a session that awaits one; research continues in the background.",
    AnswerArgs,
    { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    StartedHere
  ),
  spec(
    "review_plan",
    "Review the plan",
    "Approve, edit or cancel the plan (brief and first directives) of a session awaiting_review, started with review: true; get_status shows the plan. Research begins in the background after approval or an edit.",
    ReviewArgs,
    { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    StartedHere
  ),
  spec(
    "cancel_research",
    "Cancel research",
    "Stop a running session. Its work so far stays saved.",
    SessionIdArgs,
    // Nothing stored is lost (the session can be resumed); a second call finds it stopped already.
    { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    Cancelled
  ),
  spec(
    "resume_research",
    "Resume research",
    "Resume a cancelled or failed session, or one whose run was interrupted, from its last checkpoint: finished researchers are not redone. Returns at once; the research runs in the background.",
    SessionIdArgs,
    { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    StartedHere
  ),
  spec(
    "delete_session",
    "Delete session",
    "Delete a session and everything stored for it: its checkpoints, events, report and evaluation. A running session must be cancelled first.",
    SessionIdArgs,
    { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    Deleted
  ),
  spec(
    "evaluate_report",
    "Evaluate report",
    "Judge a completed session's report on eight dimensions and check its citations.",
    SessionIdArgs,
    // A judge model reads the report; its evaluation replaces the one stored before.
    { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false }
  ),
  ...FollowUpTools.specs
]

// =============================================================================
// Server
// =============================================================================

const { failure, structured, text, withArgs } = McpCall
type Content = McpCall.Content

/** A run started, with the note of a run this process hosts (a cluster's runs go on without it). */
const startedHere =
  (runs: Runs.Runs, note: string) =>
  (started: RunSchema.Started): Content =>
    structured(StartedHere)(runs.isRunning(started.sessionId) ? { ...started, note } : started)

/** Said on the server's stderr when it stops with runs going: each is stored cancelled, to be resumed. */
const stoppedRuns = (runs: Runs.Runs) =>
  Effect.gen(function* () {
    const going = (yield* runs.list).filter((listed) => runs.isRunning(listed.id))
    for (const { id } of going) {
      yield* Effect.logWarning(
        `The MCP server stops while session ${id} runs: it is stored cancelled. Resume it with resume_research ` +
          `(from a client that keeps the server running) or deep-research resume ${id}.`
      )
    }
  })

const handlersOf = (
  runs: Runs.Runs,
  runtime: Runtime.Runtime<never>,
  database: DatabaseProbe.Probe | undefined,
  owners: TaskOwners.Owners,
  note: string
): Record<string, McpCall.Handler> => {
  const answer = McpCall.answerIn(runtime, database)
  const started = startedHere(runs, note)
  return {
    research: McpResearch.handler(runs, runtime, owners),
    ...FollowUpTools.handlers(runs, runtime, database, started),
    start_research: withArgs(StartArgs, ({ question, ...options }) => answer(runs.start(question, options), started)),
    get_status: withArgs(SessionIdArgs, ({ sessionId }) =>
      answer(runs.status(sessionId), structured(RunSchema.RunStatus))
    ),
    get_report: withArgs(SessionIdArgs, ({ sessionId }) =>
      answer(runs.load(sessionId), (session) =>
        session.report === undefined
          ? failure(RunSchema.conflict(session.id, session.status, "has no report yet").message)
          : text(session.report.markdown)
      )
    ),
    list_sessions: withArgs(NoArgs, () => answer(runs.list, (sessions) => structured(SessionList)({ sessions }))),
    answer_clarification: withArgs(AnswerArgs, ({ answer: reply, sessionId }) =>
      answer(runs.answer(sessionId, reply), started)
    ),
    review_plan: withArgs(ReviewArgs, (args) => answer(runs.review(args.sessionId, decisionOf(args)), started)),
    cancel_research: withArgs(SessionIdArgs, ({ sessionId }) => answer(runs.cancel(sessionId), structured(Cancelled))),
    resume_research: withArgs(SessionIdArgs, ({ sessionId }) => answer(runs.resume(sessionId), started)),
    delete_session: withArgs(SessionIdArgs, ({ sessionId }) =>
      answer(runs.remove(sessionId), () => structured(Deleted)({ sessionId, deleted: true }))
    ),
    evaluate_report: withArgs(SessionIdArgs, ({ sessionId }) =>
      answer(runs.evaluate(sessionId), ({ evaluation, file }) =>
        text(
          [
            StoredEvaluation.format(evaluation),
            "",
            `Stored in ${file}`,
            "",
            JSON.stringify(Schema.encodeSync(Evaluation.Evaluation)(evaluation))
          ].join("\n")
        )
      )
    )
  }
}

/** The tools over some runs, built once and attached to every server that serves them (`serverOf`). */
export interface ToolSet {
  /** The tools' handlers for a connection: over the runs as its caller reaches them. */
  readonly handlersFor: (connection: string | undefined) => Record<string, McpCall.Handler>
  /** The sessions as MCP tasks. */
  readonly taskStore: McpResearch.TaskStore
  /** Who each task belongs to, and the caller behind each connection. */
  readonly owners: TaskOwners.Owners
  /** What every message the server sends is scrubbed with: the runs' secrets never leave. */
  readonly scrub: (text: string) => string
}

/**
 * The tools over these runs. Their work runs in the caller's runtime: its logger, its scheduler, its tracer (the
 * server's: its log lines go to stderr, never among the messages on stdout). `note` goes with a run this process
 * hosts: what keeps it going (the stdio server's by default). `reach` gives the runs as a caller reaches them
 * (`SessionOwners.forCallers`); every session is every caller's by default, as on stdio.
 */
export const toolSet = (
  runs: Runs.Runs,
  database?: DatabaseProbe.Probe,
  note: string = hostedNote,
  reach: (caller: string | undefined) => Runs.Runs = () => runs
): Effect.Effect<ToolSet> =>
  Effect.map(Effect.runtime<never>(), (runtime) => {
    const owners = TaskOwners.make(runs)
    return {
      handlersFor: (connection) => handlersOf(reach(owners.callerOf(connection)), runtime, database, owners, note),
      taskStore: McpResearch.taskStore(runs, runtime, owners),
      owners,
      scrub: runs.scrub
    }
  })

const listed = tools.map(ToolSpecs.listed)

const taskTools = new Set(tools.flatMap((t) => (t.execution === undefined ? [] : [t.name])))

/**
 * Connects a server of the tool set to a transport whose every outgoing message is scrubbed of the runs' secrets: a
 * refusal that quotes a bad argument or an unknown id quotes a key or the token as `[redacted]`.
 */
export const connect = (toolSet: ToolSet, transport: Transport): Promise<void> => {
  const send = transport.send.bind(transport)
  const scrubbed = Secrets.scrubValue(toolSet.scrub)
  transport.send = (message, options) => send(scrubbed(message), options)
  return serverOf(toolSet).connect(transport)
}

/** A server of the tool set, for one connection: the SDK's server holds one transport at a time. */
const serverOf = (toolSet: ToolSet): Server => {
  const server = new Server(
    { name: "deep-research", version },
    { capabilities: { tools: {}, tasks: McpResearch.capabilities }, taskStore: toolSet.taskStore }
  )
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: listed }))
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const params = request.params
    const handler = toolSet.handlersFor(extra.sessionId)[params.name]
    // A tool that does not exist is the request's fault, a protocol error (as the MCP specification has it);
    // arguments a tool refuses are its result, which the model can read and correct.
    if (handler === undefined) {
      throw new McpCall.ProtocolError(
        ErrorCode.InvalidParams,
        `Unknown tool: ${params.name} (this server has ${tools.map((t) => t.name).join(", ")})`
      )
    }
    // As MCP asks of a tool whose `taskSupport` is left out (forbidden).
    if (params.task !== undefined && !taskTools.has(params.name)) {
      throw new McpCall.ProtocolError(
        ErrorCode.MethodNotFound,
        `The tool ${params.name} does not run as a task (${[...taskTools].join(", ")} does): call it without a task.`
      )
    }
    try {
      const elicits = server.getClientCapabilities()?.elicitation !== undefined
      return await handler(
        params.arguments,
        McpCall.callOf(params, extra, elicits ? (request) => server.elicitInput(request) : undefined)
      )
    } catch (error) {
      if (error instanceof McpCall.ProtocolError) throw error
      return failure(error instanceof Error ? error.message : String(error))
    }
  })
  return server
}

/** Runs the MCP server over a transport until it closes. */
export const serve = (resolved: CliConfig.Resolved, transport: Transport) =>
  // The runs share one runtime for the server's life; its log lines go to stderr, since stdout carries the protocol.
  // Built before serving, so that a configuration the providers refuse fails the command.
  Effect.scoped(
    Effect.gen(function* () {
      const runs = yield* ServingRuns.make(resolved)
      const database = yield* DatabaseProbe.forDatabase(resolved.credentials.databaseUrl)
      return yield* serveRuns(runs, transport, database)
    })
  )

/** Serves these runs over a transport until it closes. With the probe of the runs' database, a failure during its outage says so. */
export const serveRuns = (runs: Runs.Runs, transport: Transport, database?: DatabaseProbe.Probe) =>
  Effect.gen(function* () {
    const tools = yield* toolSet(runs, database)
    // Watched before connecting: a client that sends its requests and closes its input may be answered, and the
    // transport closed, before the connection's own promise has resolved.
    const closed = yield* Deferred.make<void>()
    transport.onclose = () => Deferred.unsafeDone(closed, Exit.void)
    yield* Effect.promise(() => connect(tools, transport))
    // Closed by the client or stopped by a signal alike.
    yield* Effect.ensuring(Deferred.await(closed), stoppedRuns(runs))
  })

/** The MCP server on this process's stdin and stdout, until the client closes stdin. */
export const serveStdio = (resolved: CliConfig.Resolved) =>
  Effect.suspend(() => {
    // A line that is no JSON-RPC message is answered with JSON-RPC's error, not dropped (`jsonRpcLines.ts`).
    const input = process.stdin.pipe(
      JsonRpcLines.validLines((refusal) => process.stdout.write(`${JSON.stringify(refusal)}\n`))
    )
    const unanswered = new Unanswered()
    const transport = unanswered.watch(new StdioServerTransport(input, process.stdout))
    // The SDK's transport does not notice the end of its input; a client that goes away closes stdin. What it asked
    // before is answered first (a minute at most).
    const onEnd = () => void unanswered.settled(60_000).then(() => transport.close())
    return Effect.acquireUseRelease(
      Effect.sync(() => input.once("end", onEnd)),
      () => serve(resolved, transport),
      () => Effect.sync(() => input.off("end", onEnd))
    )
  })
