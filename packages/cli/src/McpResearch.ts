/**
 * The MCP server's `research` tool: a question researched to its report in one call, the textbook long-running tool
 * call. Called as an MCP task (revision 2025-11-25), it answers at once with a task of its own id (unguessable, and
 * bound to the caller that started it: `internal/mcp/taskOwners.ts`), and the session store is the task store:
 * `tasks/get`, `tasks/result` and `tasks/cancel` read and stop the task's session for the caller that started it, and
 * `tasks/list` lists a connection's own tasks, so a task outlives the server that started it and is reached from any
 * server of a cluster. Called plainly, it waits for the report and sends the client progress while the session runs,
 * when the client asked for it.
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
import * as TaskOwners from "./internal/mcp/taskOwners.js"
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

/** A session as the MCP task `taskId`: kept as long as the session is (`ttl: null`), until `delete_session`. */
export const taskOf = (
  runs: Runs.Runs,
  sessionId: string,
  taskId: string
): Effect.Effect<Task, Errors.ResearchSessionNotFound> =>
  Effect.gen(function* () {
    const status = yield* runs.status(sessionId)
    const stored = Option.getOrUndefined(yield* Effect.option(runs.load(sessionId)))
    // A session still waiting for its runner may not be stored yet.
    const now = yield* Clock.currentTimeMillis
    return {
      taskId,
      status: taskStatusOf(status.status),
      // The session's id, for the tools that take one (get_status, get_report, ...): the task's id is not it.
      statusMessage: `session ${sessionId}: ${statusMessageOf(status)}`,
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
export const started = (
  runs: Runs.Runs,
  owners: TaskOwners.Owners,
  question: string,
  options: RunSchema.StartOptions,
  connection: string | undefined
) =>
  Effect.gen(function* () {
    const { sessionId } = yield* runs.start(question, options, "proceed")
    const taskId = yield* owners.bind(sessionId, connection)
    return { task: yield* Effect.orDie(taskOf(runs, sessionId, taskId)) }
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
  (runs: Runs.Runs, runtime: Runtime.Runtime<never>, owners: TaskOwners.Owners): McpCall.Handler =>
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
            started(runs, owners, question, options, call.connection),
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

/** The connection's own tasks, a page from `cursor`; a task whose session was deleted is left out. */
const page = (runs: Runs.Runs, owners: TaskOwners.Owners, cursor: string | undefined, connection: string | undefined) =>
  Effect.gen(function* () {
    const from = cursor === undefined ? 0 : Number(cursor)
    if (!Number.isSafeInteger(from) || from < 0) {
      return yield* Effect.fail(new McpCall.ProtocolError(ErrorCode.InvalidParams, "Invalid cursor."))
    }
    const mine = owners.startedBy(connection)
    const tasks = yield* Effect.forEach(mine.slice(from, from + pageSize), (taskId) =>
      Effect.flatMap(
        owners.reach(taskId, connection),
        Option.match({
          onNone: () => Effect.succeed(Option.none<Task>()),
          onSome: (sessionId) => Effect.option(taskOf(runs, sessionId, taskId))
        })
      )
    )
    const found = tasks.flatMap(Option.toArray)
    return from + pageSize < mine.length ? { tasks: found, nextCursor: String(from + pageSize) } : { tasks: found }
  })

/** No task of that id for this caller: the same answer whether it never was or is another's. */
const notFound = () => new McpCall.ProtocolError(ErrorCode.InvalidParams, "Task not found.")

/**
 * The session store as the SDK's task store, each task reached only by the caller that started it
 * (`TaskOwners.reach`), after a reconnection or a restart as well. Its result is the session's; only a cancel changes
 * it.
 */
export const taskStore = (runs: Runs.Runs, runtime: Runtime.Runtime<never>, owners: TaskOwners.Owners): TaskStore => {
  const run = McpCall.promised(runtime)
  const reached = (taskId: string, connection: string | undefined) =>
    Effect.flatMap(owners.reach(taskId, connection), (sessionId) =>
      Option.isNone(sessionId) ? Effect.fail(notFound()) : Effect.succeed(sessionId.value)
    )
  return {
    createTask: (_params: CreateTaskOptions, _requestId: RequestId, _request: Request) =>
      Promise.reject(
        new McpCall.ProtocolError(ErrorCode.InvalidRequest, "A task here is a research session: call research.")
      ),
    getTask: (taskId, connection) =>
      run(
        Effect.flatMap(reached(taskId, connection), (sessionId) => taskOf(runs, sessionId, taskId)).pipe(
          Effect.orElseSucceed(() => null)
        )
      ),
    storeTaskResult: () =>
      Promise.reject(new McpCall.ProtocolError(ErrorCode.InvalidRequest, "A task's result is its session's report.")),
    getTaskResult: (taskId, connection): Promise<Result> =>
      run(
        Effect.flatMap(reached(taskId, connection), (sessionId) =>
          Effect.mapBoth(runs.load(sessionId), { onFailure: invalid, onSuccess: resultOf })
        )
      ),
    updateTaskStatus: (taskId, status, _message, connection) =>
      status === "cancelled"
        ? run(
            Effect.flatMap(reached(taskId, connection), (sessionId) =>
              Effect.asVoid(Effect.mapError(runs.cancel(sessionId), invalid))
            )
          )
        : Promise.reject(
            new McpCall.ProtocolError(ErrorCode.InvalidRequest, `A task's status is its session's, not ${status}.`)
          ),
    listTasks: (cursor, connection) => run(page(runs, owners, cursor, connection))
  }
}
