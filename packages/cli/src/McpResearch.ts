/**
 * The MCP server's `research` tool: a question researched to its report in one call, the textbook long-running tool
 * call. Called as an MCP task (revision 2025-11-25), it answers at once with a task whose id is the session's id, and
 * the session store is the task store: `tasks/get`, `tasks/result`, `tasks/list` and `tasks/cancel` read and stop
 * sessions, so a task outlives the server that started it and is reached from any server of a cluster. Called plainly,
 * it waits for the report and sends the client progress while the session runs, when the client asked for it.
 */
import { type Errors, Review, type Session } from "@deep-research/core"
import type { CreateTaskOptions, TaskStore } from "@modelcontextprotocol/sdk/experimental/tasks"
import type { Request, RequestId, Result, Task } from "@modelcontextprotocol/sdk/types.js"
import { ErrorCode } from "@modelcontextprotocol/sdk/types.js"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as McpCall from "./internal/mcp/mcpCall.js"
import * as McpReview from "./internal/mcp/reviewArgs.js"
import * as Progress from "./Progress.js"
import type * as Runs from "./Runs.js"
import * as RunSchema from "./RunSchema.js"

// =============================================================================
// Shapes
// =============================================================================

export type { TaskStore }

/** What `research` gives: the report, as markdown and beside it the sources its citations number. */
export const ResearchReport = Schema.Struct({
  sessionId: Schema.String,
  query: Schema.String,
  report: Schema.String.annotations({ description: "The report as markdown, citing its sources as [n]" }),
  sources: Schema.Array(RunSchema.SourceView)
})

/** How long a client is asked to wait between two polls of a task: research takes minutes. */
export const pollInterval = 2_000

/** What the server declares of tasks: a tool call may be one, and tasks can be listed and cancelled. */
export const capabilities = { list: {}, cancel: {}, requests: { tools: { call: {} } } }

// =============================================================================
// Sessions as tasks
// =============================================================================

const taskStatusOf = (status: string): Task["status"] => {
  switch (status) {
    case "completed":
    case "failed":
    case "cancelled":
      return status
    // Answered with `answer_clarification`: a session `research` starts never asks (it proceeds).
    case "awaiting_clarification":
    case "awaiting_review":
      return "input_required"
    default:
      return "working"
  }
}

/** Where a session stands, in a line: its phase, round and sources while it runs. */
const describe = (progress: { readonly phase: string; readonly round: number; readonly sources: number }) =>
  `${progress.phase}, round ${progress.round}, ${progress.sources} sources`

const statusMessageOf = (status: RunSchema.RunStatus): string => {
  switch (status.status) {
    case "queued":
      return "queued: waiting to start"
    case "awaiting_clarification":
      return `waiting for an answer to: ${status.clarificationQuestion ?? "its question"} (answer_clarification)`
    case "awaiting_review":
      return `waiting for its plan to be reviewed: ${status.plan?.directives.length ?? 0} directives (review_plan)`
    case "failed":
      return `failed: ${status.error ?? "no reason stored"}; resume_research continues it`
    case "cancelled":
      return "cancelled; resume_research continues it from its last checkpoint"
    case "completed":
      return `completed with ${status.sources} sources`
    case "running":
      return describe(status)
  }
}

const isoOf = (millis: number) => new Date(millis).toISOString()

/** A session as an MCP task: kept as long as the session is (`ttl: null`), until `delete_session`. */
export const taskOf = (runs: Runs.Runs, sessionId: string): Effect.Effect<Task, Errors.SessionNotFound> =>
  Effect.gen(function* () {
    const status = yield* runs.status(sessionId)
    const stored = Option.getOrUndefined(yield* Effect.option(runs.load(sessionId)))
    // A session still waiting for its runner may not be stored yet.
    const now = yield* Clock.currentTimeMillis
    return {
      taskId: sessionId,
      status: taskStatusOf(status.status),
      statusMessage: statusMessageOf(status),
      createdAt: isoOf(stored?.createdAt ?? now),
      lastUpdatedAt: isoOf(stored?.updatedAt ?? now),
      ttl: null,
      pollInterval
    }
  })

/** What a session ended with, as `research` answers: its report, or why it has none. */
export const resultOf = (session: Session.Session): McpCall.Content => {
  const report = session.report
  if (session.status === "completed" && report !== undefined) {
    const encoded = Schema.encodeSync(ResearchReport)({
      sessionId: session.id,
      query: session.query,
      report: report.markdown,
      sources: RunSchema.sourcesOf(session)
    })
    return { content: [{ type: "text", text: report.markdown }], structuredContent: encoded }
  }
  const why =
    session.status === "failed"
      ? `The research failed: ${session.error?.message ?? "no reason stored"}. resume_research continues session ${session.id} from its last checkpoint.`
      : session.status === "cancelled"
        ? `The research was cancelled. resume_research continues session ${session.id} from its last checkpoint.`
        : session.status === "awaiting_clarification"
          ? `The session ${session.id} waits for an answer to its question: ${session.clarification?.decision.question ?? ""} (answer_clarification).`
          : session.status === "awaiting_review"
            ? `The session ${session.id} waits for its plan to be reviewed (review_plan: approve, edit or cancel).\n\n${Review.describe(Review.planOf(session) ?? { brief: session.brief?.brief ?? session.query, directives: [] })}`
            : `The session ${session.id} has no report yet (status ${session.status}).`
  return { isError: true, content: [{ type: "text", text: why }] }
}

// =============================================================================
// The tool
// =============================================================================

/**
 * A task-augmented call: the session starts and its task is the answer. A clarifying question would leave the task
 * waiting for an answer no task client knows to give, so research proceeds with the model's understanding.
 */
export const started = (runs: Runs.Runs, question: string, options: RunSchema.StartOptions) =>
  Effect.gen(function* () {
    const { sessionId } = yield* runs.start(question, options, "proceed")
    return { task: yield* Effect.orDie(taskOf(runs, sessionId)) }
  })

/** The session's progress as it runs, one notice whenever its line changes, until its run ends. */
const followed = (runs: Runs.Runs, sessionId: string, onProgress: McpCall.OnProgress) =>
  runs.events(sessionId, 0).pipe(
    Stream.mapAccum(Progress.initial, (state, { event, id }) => {
      const next = Progress.reduce(state, event)
      return [next, { progress: id, message: describe(next) }]
    }),
    Stream.changesWith((a, b) => a.message === b.message),
    Stream.runForEach(({ message, progress }) => onProgress(progress, message))
  )

/**
 * A plain call: the session runs to its end and its report is the answer. A call the client gives up (cancelled, or
 * its connection closed) cancels the session, which stays stored and resumable.
 */
export const researched = (
  runs: Runs.Runs,
  question: string,
  options: RunSchema.StartOptions,
  onProgress: McpCall.OnProgress | undefined,
  elicit?: McpCall.Call["elicit"]
) =>
  Effect.gen(function* () {
    const { sessionId } = yield* runs.start(question, options, "proceed")
    const runToEnd = Effect.gen(function* () {
      // Every event is told before the answer: the log is read to its end when the run ends.
      if (onProgress !== undefined) yield* followed(runs, sessionId, onProgress)
      yield* runs.awaitRun(sessionId)
    })
    return yield* Effect.gen(function* () {
      yield* runToEnd
      const ended = yield* runs.load(sessionId)
      // A plan held for review is asked of the client's user, where the client can ask (MCP elicitation).
      const decision = ended.status === "awaiting_review" ? yield* McpReview.elicited(ended, elicit) : undefined
      const reviewed = decision === undefined ? undefined : yield* Effect.either(runs.review(sessionId, decision))
      if (reviewed?._tag === "Right") yield* runToEnd
      return resultOf(yield* runs.load(sessionId))
    }).pipe(Effect.onInterrupt(() => Effect.ignore(runs.cancel(sessionId))))
  })

/** What `research` takes: the question and the options of `start_research`. */
export const Args = Schema.Struct({
  question: RunSchema.trimmedText("What to research, in any language"),
  ...RunSchema.StartOptions.fields
})

/**
 * `research`: a task at once when the client asks for one (what cannot start is then the request's error, as the SDK
 * lets a task call answer with a task only), else the report when it is written.
 */
export const handler =
  (runs: Runs.Runs, runtime: Runtime.Runtime<never>): McpCall.Handler =>
  async (args, call) => {
    const decoded = McpCall.decodeArgs(Args, args)
    if (Either.isLeft(decoded)) {
      if (!call.task) return McpCall.failure(`Invalid arguments: ${decoded.left}`)
      throw new McpCall.ProtocolError(ErrorCode.InvalidParams, `Invalid arguments: ${decoded.left}`)
    }
    const { question, ...options } = decoded.right
    return call.task
      ? McpCall.promised(runtime)(
          Effect.mapError(
            started(runs, question, options),
            (error) => new McpCall.ProtocolError(ErrorCode.InvalidParams, error.message)
          )
        )
      : McpCall.answerIn(runtime)(
          researched(runs, question, options, call.onProgress, call.elicit),
          (result) => result,
          call.signal
        )
  }

// =============================================================================
// The task store
// =============================================================================

const invalid = (error: { readonly message: string }) =>
  new McpCall.ProtocolError(ErrorCode.InvalidParams, error.message)

/** How many tasks one page of `tasks/list` holds. */
const pageSize = 100

const page = (runs: Runs.Runs, cursor: string | undefined) =>
  Effect.gen(function* () {
    const from = cursor === undefined ? 0 : Number(cursor)
    if (!Number.isSafeInteger(from) || from < 0) {
      return yield* Effect.fail(new McpCall.ProtocolError(ErrorCode.InvalidParams, `Invalid cursor: ${cursor}`))
    }
    const listed = yield* runs.list
    const tasks = listed.slice(from, from + pageSize).map((session): Task => ({
      taskId: session.id,
      status: taskStatusOf(session.status),
      createdAt: isoOf(session.createdAt),
      lastUpdatedAt: isoOf(session.updatedAt ?? session.createdAt),
      ttl: null,
      pollInterval
    }))
    return from + pageSize < listed.length ? { tasks, nextCursor: String(from + pageSize) } : { tasks }
  })

/**
 * The session store as the SDK's task store. Tasks are not kept apart by MCP session: a task is a research session,
 * reached by its id from any connection that may reach the sessions at all (the server's token is what guards them),
 * after a reconnection or a restart as well. Its result is the session's; only a cancel changes it.
 */
export const taskStore = (runs: Runs.Runs, runtime: Runtime.Runtime<never>): TaskStore => {
  const run = McpCall.promised(runtime)
  return {
    createTask: (_params: CreateTaskOptions, _requestId: RequestId, _request: Request) =>
      Promise.reject(
        new McpCall.ProtocolError(ErrorCode.InvalidRequest, "A task here is a research session: call research.")
      ),
    getTask: (taskId) => run(Effect.orElseSucceed(taskOf(runs, taskId), () => null)),
    storeTaskResult: () =>
      Promise.reject(new McpCall.ProtocolError(ErrorCode.InvalidRequest, "A task's result is its session's report.")),
    getTaskResult: (taskId): Promise<Result> =>
      run(Effect.mapBoth(runs.load(taskId), { onFailure: invalid, onSuccess: resultOf })),
    updateTaskStatus: (taskId, status) =>
      status === "cancelled"
        ? run(Effect.asVoid(Effect.mapError(runs.cancel(taskId), invalid)))
        : Promise.reject(
            new McpCall.ProtocolError(ErrorCode.InvalidRequest, `A task's status is its session's, not ${status}.`)
          ),
    listTasks: (cursor) => run(page(runs, cursor))
  }
}
