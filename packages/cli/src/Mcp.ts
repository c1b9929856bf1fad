/**
 * `deep-research mcp`: an MCP server on stdio. Research starts in the background and returns a session id at once;
 * clients poll its status and progress, read the report, answer a clarification question, cancel, list and
 * evaluate. It shares the session store with the CLI.
 */
import {
  Pipeline,
  ResearchConfig,
  ResearchEvents,
  Session,
  SessionLimit,
  SessionStore,
  Tool
} from "@deep-research/core"
import { Evaluation as EvaluationResult } from "@deep-research/evaluation"
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Queue from "effect/Queue"
import * as Schema from "effect/Schema"
import type * as CliConfig from "./CliConfig.js"
import * as Evaluation from "./Evaluation.js"
import * as Logging from "./internal/logging.js"
import * as Progress from "./Progress.js"
import * as Store from "./Store.js"
import { version } from "./version.js"
import * as Wiring from "./Wiring.js"

// =============================================================================
// Tool arguments
// =============================================================================

const SessionIdArgs = Schema.Struct({
  sessionId: Schema.String.annotations({ description: "The id start_research returned" })
})

const StartArgs = Schema.Struct({
  question: Schema.NonEmptyTrimmedString.annotations({ description: "What to research, in any language" }),
  maxRounds: Schema.optional(Schema.Int.pipe(Schema.positive())).annotations({
    description: "Supervision rounds at most (default 6)"
  }),
  concurrency: Schema.optional(Schema.Int.pipe(Schema.positive())).annotations({
    description: "Researchers at once at most (default 5)"
  }),
  maxToolCalls: Schema.optional(Schema.Int.pipe(Schema.positive())).annotations({
    description: "Search and extract calls per researcher (default 10)"
  }),
  budgetTokens: Schema.optional(Schema.Int.pipe(Schema.positive())),
  budgetUsd: Schema.optional(Schema.Number.pipe(Schema.positive())),
  allowClarification: Schema.optional(Schema.Boolean).annotations({
    description:
      "Run the clarification phase first; when the question needs it, the session waits for answer_clarification (default true)"
  })
})

const AnswerArgs = Schema.Struct({
  sessionId: Schema.String,
  answer: Schema.NonEmptyTrimmedString.annotations({ description: "The answer to the clarification question" })
})

const NoArgs = Schema.Struct({})

interface ToolSpec {
  readonly name: string
  readonly description: string
  readonly inputSchema: ReturnType<typeof Tool.jsonSchemaOf>
}

const spec = <A, I>(name: string, description: string, schema: Schema.Schema<A, I>): ToolSpec => ({
  name,
  description,
  inputSchema: Tool.jsonSchemaOf(schema)
})

const tools: ReadonlyArray<ToolSpec> = [
  spec(
    "start_research",
    "Start researching a question. Returns a session id at once; the research runs in the background.",
    StartArgs
  ),
  spec(
    "get_status",
    "The status of a session (queued while it waits for a free slot, running, awaiting_clarification, completed, failed, cancelled) with its progress: phase, round, researchers, sources, tokens and cost, and the clarification question when one is pending.",
    SessionIdArgs
  ),
  spec("get_report", "The report of a completed session, as markdown with numbered citations.", SessionIdArgs),
  spec("list_sessions", "Every session: id, status, question, created, cost.", NoArgs),
  spec(
    "answer_clarification",
    "Answer the clarification question of a session that awaits one; research continues in the background.",
    AnswerArgs
  ),
  spec("cancel_research", "Stop a running session. Its work so far stays saved.", SessionIdArgs),
  spec(
    "evaluate_report",
    "Judge a completed session's report on eight dimensions and check its citations.",
    SessionIdArgs
  )
]

// =============================================================================
// Server
// =============================================================================

type Content = { readonly isError?: boolean; readonly content: Array<{ type: "text"; text: string }> }

const text = (value: string): Content => ({ content: [{ type: "text", text: value }] })
const json = (value: unknown): Content => text(JSON.stringify(value, null, 2))
const failure = (message: string): Content => ({ isError: true, content: [{ type: "text", text: message }] })

const decodeArgs = <A, I>(schema: Schema.Schema<A, I>, args: unknown): Either.Either<A, string> =>
  Either.mapLeft(Schema.decodeUnknownEither(schema, { onExcessProperty: "error" })(args ?? {}), (error) =>
    ParseResult.TreeFormatter.formatErrorSync(error)
  )

/** Runs the MCP server over a transport until it closes. */
export const serve = (resolved: CliConfig.Resolved, transport: Transport) =>
  Effect.gen(function* () {
    // One runtime for the server's life: every session shares the resilience state, the store and the event stream.
    // Its log lines go to stderr, since stdout carries the protocol.
    // With --max-sessions, runs beyond the limit wait for a slot (get_status says queued until theirs starts).
    const limit =
      resolved.maxSessions === undefined ? Layer.empty : Layer.orDie(SessionLimit.layer(resolved.maxSessions))
    const runtime = ManagedRuntime.make(Layer.mergeAll(Wiring.layer(resolved), Logging.stderrLogger, limit))
    yield* Effect.addFinalizer(() => runtime.disposeEffect)
    // Built before serving, so that a configuration the providers refuse fails the command instead of every call.
    yield* runtime.runtimeEffect
    // The runs of this server still going, with the question of each it started (a queued run has no stored session).
    const runs = new Map<
      string,
      {
        readonly fiber: Fiber.RuntimeFiber<Session.Session, unknown>
        readonly question: { readonly query: string; readonly at: number } | undefined
      }
    >()
    const wouldWait = Effect.flatMap(Effect.serviceOption(SessionLimit.SessionLimit), (limit) =>
      Option.isNone(limit) ? Effect.succeed(false) : limit.value.wouldWait
    )
    const progress = new Map<string, Progress.State>()

    // A progress view per session, kept from the shared event stream for as long as the server runs.
    const watcher = runtime.runFork(
      Effect.scoped(
        Effect.gen(function* () {
          const events = yield* ResearchEvents.ResearchEvents
          const queue = yield* events.subscribe
          return yield* Queue.take(queue).pipe(
            Effect.tap((event) =>
              Effect.sync(() => {
                if (event.sessionId === undefined) return
                progress.set(event.sessionId, Progress.reduce(progress.get(event.sessionId) ?? Progress.initial, event))
              })
            ),
            Effect.forever
          )
        })
      )
    )
    yield* Effect.addFinalizer(() => Fiber.interrupt(watcher))

    const background = (
      sessionId: string,
      effect: Effect.Effect<Session.Session, unknown, Wiring.Services>,
      question?: string
    ) => {
      const fiber = runtime.runFork(effect)
      runs.set(sessionId, { fiber, question: question === undefined ? undefined : { query: question, at: Date.now() } })
      fiber.addObserver(() => {
        if (runs.get(sessionId)?.fiber === fiber) runs.delete(sessionId)
      })
    }

    const withStore = <A, E>(f: (store: SessionStore.Service) => Effect.Effect<A, E>) =>
      runtime.runPromiseExit(Effect.flatMap(SessionStore.SessionStore, f))

    const fromExit = <A>(exit: Exit.Exit<A, unknown>, onSuccess: (a: A) => Content): Content =>
      Exit.match(exit, {
        onSuccess,
        onFailure: (cause) => {
          const error = Cause.squash(cause)
          return failure(error instanceof Error ? error.message : String(error))
        }
      })

    const handlers: Record<string, (args: unknown) => Promise<Content>> = {
      start_research: async (args) => {
        const decoded = decodeArgs(StartArgs, args)
        if (Either.isLeft(decoded)) return failure(`Invalid arguments:\n${decoded.left}`)
        const a = decoded.right
        const config = Schema.decodeUnknownEither(ResearchConfig.ResearchConfig)({
          ...Schema.encodeSync(ResearchConfig.ResearchConfig)(resolved.research),
          ...(a.maxRounds !== undefined ? { maxSupervisionRounds: a.maxRounds } : {}),
          ...(a.concurrency !== undefined ? { maxConcurrentResearchUnits: a.concurrency } : {}),
          ...(a.maxToolCalls !== undefined ? { researcherMaxToolCalls: a.maxToolCalls } : {}),
          ...(a.allowClarification !== undefined ? { allowClarification: a.allowClarification } : {}),
          budget: {
            ...Schema.encodeSync(ResearchConfig.Budget)(resolved.research.budget),
            ...(a.budgetTokens !== undefined ? { maxTokens: a.budgetTokens } : {}),
            ...(a.budgetUsd !== undefined ? { maxUsd: a.budgetUsd } : {})
          }
        })
        if (Either.isLeft(config)) return failure(ParseResult.TreeFormatter.formatErrorSync(config.left))
        const sessionId = await runtime.runPromise(Pipeline.newSessionId)
        const queued = await runtime.runPromise(wouldWait)
        background(
          sessionId,
          Pipeline.research(a.question, {
            config: config.right,
            sessionId,
            clarification: resolved.askClarification ? "await" : "proceed"
          }),
          a.question
        )
        return json({ sessionId, status: queued ? "queued" : "running" })
      },
      get_status: async (args) => {
        const decoded = decodeArgs(SessionIdArgs, args)
        if (Either.isLeft(decoded)) return failure(`Invalid arguments:\n${decoded.left}`)
        const { sessionId } = decoded.right
        const exit = await withStore((store) => Effect.option(store.load(sessionId)))
        const stored = Exit.isSuccess(exit) && exit.value._tag === "Some" ? exit.value.value : undefined
        const live = progress.get(sessionId)
        const running = runs.has(sessionId)
        if (stored === undefined && live === undefined && !running) return failure(`No session with id ${sessionId}`)
        return json({
          sessionId,
          // While the run's fiber lives the stored status may still be the previous one (an answered question).
          status: running
            ? resolved.maxSessions !== undefined && live === undefined && stored === undefined
              ? "queued"
              : "running"
            : (stored?.status ?? "running"),
          running,
          phase: live?.phase ?? "starting",
          round: live?.round ?? stored?.rounds.length ?? 0,
          researchers: live === undefined ? [] : [...live.researchers.entries()].map(([id, r]) => ({ id, ...r })),
          sources: stored?.sources.length ?? live?.sources ?? 0,
          tokens: live?.tokens ?? stored?.usage.reduce((n, r) => n + r.inputTokens + r.outputTokens, 0) ?? 0,
          costUsd: live?.costUsd ?? stored?.usage.reduce((n, r) => n + r.costUsd, 0) ?? 0,
          clarificationQuestion:
            !running && stored?.status === "awaiting_clarification"
              ? stored.clarification?.decision.question
              : undefined,
          error: stored?.error?.message,
          reportReady: stored?.report !== undefined
        })
      },
      get_report: async (args) => {
        const decoded = decodeArgs(SessionIdArgs, args)
        if (Either.isLeft(decoded)) return failure(`Invalid arguments:\n${decoded.left}`)
        const exit = await withStore((store) => store.load(decoded.right.sessionId))
        return fromExit(exit, (session) =>
          session.report === undefined
            ? failure(`The session ${session.id} has no report yet (status ${session.status}).`)
            : text(session.report.markdown)
        )
      },
      list_sessions: async () =>
        fromExit(await withStore((store) => store.list), (list) => {
          // Runs still waiting for a slot have no stored session yet; they are listed as queued.
          const stored = new Set(list.map((summary) => summary.id))
          const queued = [...runs.entries()].flatMap(([id, run]) =>
            run.question === undefined || stored.has(id)
              ? []
              : [{ id, status: "queued", query: run.question.query, createdAt: run.question.at, costUsd: 0 }]
          )
          return json([...queued, ...list])
        }),
      answer_clarification: async (args) => {
        const decoded = decodeArgs(AnswerArgs, args)
        if (Either.isLeft(decoded)) return failure(`Invalid arguments:\n${decoded.left}`)
        const { answer, sessionId } = decoded.right
        if (runs.has(sessionId)) return failure(`The session ${sessionId} is still running.`)
        const exit = await withStore((store) => store.load(sessionId))
        if (Exit.isFailure(exit)) return fromExit(exit, () => text(""))
        if (exit.value.status !== "awaiting_clarification") {
          return failure(`The session ${sessionId} is not waiting for an answer (status ${exit.value.status}).`)
        }
        const queued = await runtime.runPromise(wouldWait)
        background(sessionId, Pipeline.resume(sessionId, { answer }))
        return json({ sessionId, status: queued ? "queued" : "running" })
      },
      cancel_research: async (args) => {
        const decoded = decodeArgs(SessionIdArgs, args)
        if (Either.isLeft(decoded)) return failure(`Invalid arguments:\n${decoded.left}`)
        const { sessionId } = decoded.right
        const run = runs.get(sessionId)
        if (run === undefined) return failure(`The session ${sessionId} is not running.`)
        // The run saves itself as cancelled when interrupted; its work so far stays in the store, resumable.
        await runtime.runPromise(Fiber.interrupt(run.fiber))
        const exit = await withStore((store) => store.load(sessionId))
        return fromExit(exit, (session) => json({ sessionId, status: session.status }))
      },
      evaluate_report: async (args) => {
        const decoded = decodeArgs(SessionIdArgs, args)
        if (Either.isLeft(decoded)) return failure(`Invalid arguments:\n${decoded.left}`)
        const exit = await runtime.runPromiseExit(
          Evaluation.evaluateStored(Store.sessionsDirectory(resolved), decoded.right.sessionId)
        )
        return fromExit(exit, ({ evaluation, file }) =>
          text(
            [
              Evaluation.format(evaluation),
              "",
              `Stored in ${file}`,
              "",
              JSON.stringify(Schema.encodeSync(EvaluationResult.Evaluation)(evaluation))
            ].join("\n")
          )
        )
      }
    }

    const server = new Server({ name: "deep-research", version }, { capabilities: { tools: {} } })
    server.setRequestHandler(ListToolsRequestSchema, async () => ({
      tools: tools.map((t) => ({
        name: t.name,
        description: t.description,
        inputSchema: { type: "object" as const, ...t.inputSchema }
      }))
    }))
    server.setRequestHandler(CallToolRequestSchema, async (request) => {
      const handler = handlers[request.params.name]
      if (handler === undefined) return failure(`Unknown tool ${request.params.name}`)
      try {
        return await handler(request.params.arguments)
      } catch (error) {
        return failure(error instanceof Error ? error.message : String(error))
      }
    })
    const closed = yield* Effect.async<void>((resume) => {
      transport.onclose = () => resume(Effect.void)
    }).pipe(Effect.fork)
    yield* Effect.promise(() => server.connect(transport))
    yield* Fiber.join(closed)
    for (const run of runs.values()) yield* Fiber.interrupt(run.fiber)
  }).pipe(Effect.scoped)

/** The MCP server on this process's stdin and stdout, until the client closes stdin. */
export const serveStdio = (resolved: CliConfig.Resolved) =>
  Effect.suspend(() => {
    const transport = new StdioServerTransport()
    // The SDK's transport does not notice the end of its input; a client that goes away closes stdin.
    const onEnd = () => void transport.close()
    return Effect.acquireUseRelease(
      Effect.sync(() => process.stdin.once("end", onEnd)),
      () => serve(resolved, transport),
      () => Effect.sync(() => process.stdin.off("end", onEnd))
    )
  })
