/**
 * The `deep-research` commands: run (the default), resume, list, show, delete, evaluate, mcp and serve.
 */
import { Args, type CliApp, Command, Options } from "@effect/cli"
import { Pipeline, ResearchEvents, Session, SessionStore, Usage, UserInput } from "@deep-research/core"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import * as Cause from "effect/Cause"
import * as Console from "effect/Console"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as Variables from "@deep-research/providers/Environment"
import * as CliConfig from "./CliConfig.js"
import * as Progress from "./Progress.js"
import * as Logging from "./internal/logging.js"
import * as OptionTable from "./internal/optionTable.js"
import * as ParserOptions from "./internal/parserOptions.js"
import * as Terminal from "./internal/terminal.js"
import { version } from "./version.js"
import { printable, printableLine } from "./internal/printable.js"
import * as ServerModels from "./internal/serverModels.js"
import * as Store from "./Store.js"

// The research wiring (every provider's SDK), evaluation and the MCP server are loaded by the commands that use
// them: listing, showing or deleting sessions needs none of them, and starts in about half the time.
const loadWiring = Effect.promise(() => import("./Wiring.js"))
const loadEvaluation = Effect.promise(() =>
  Promise.all([import("./Evaluation.js"), import("@deep-research/evaluation")])
)
const loadMcp = Effect.promise(() => import("./Mcp.js"))
const loadServe = Effect.promise(() => import("./Serve.js"))

// =============================================================================
// Outcomes
// =============================================================================

/** How a command ended, as the process exit code says it. */
export class Exited extends Data.TaggedError("Exited")<{ readonly code: number; readonly message: string }> {}

const usageError = (message: string) => new Exited({ code: 2, message })

// =============================================================================
// Options shared by research commands
// =============================================================================

const researchOptions = ParserOptions.withRoleModels(OptionTable.research)

/** The options each command accepts, by name, to name a mistyped one before parsing. */
export const optionNames: Readonly<Record<string, ReadonlyArray<string>>> = Object.fromEntries(
  OptionTable.commandNames.map((command) => [command, OptionTable.namesOf(command)])
)

type OptionValue<T> = T extends Options.Options<infer A> ? A : never

type ResearchFlags = {
  readonly [K in keyof typeof researchOptions]: OptionValue<(typeof researchOptions)[K]>
}

const toFlags = (flags: ResearchFlags): CliConfig.Flags => {
  const modelRoles: Partial<Record<Usage.Role, string>> = {}
  for (const role of Usage.roles) {
    const spec = flags.roleModels[role]
    if (Option.isSome(spec)) modelRoles[role] = spec.value
  }
  return {
    model: Option.getOrUndefined(flags.model),
    modelRoles,
    search: Option.getOrUndefined(flags.search),
    corpus: Option.getOrUndefined(flags.corpus),
    maxRounds: Option.getOrUndefined(flags.maxRounds),
    concurrency: Option.getOrUndefined(flags.concurrency),
    maxToolCalls: Option.getOrUndefined(flags.maxToolCalls),
    budgetTokens: Option.getOrUndefined(flags.budgetTokens),
    budgetUsd: Option.getOrUndefined(flags.budgetUsd),
    noClarify: flags.noClarify,
    out: Option.getOrUndefined(flags.out),
    store: Option.getOrUndefined(flags.store),
    database: Option.getOrUndefined(flags.database),
    json: flags.json,
    simulate: flags.simulate
  }
}

// =============================================================================
// Configuration loading
// =============================================================================

/** Reads the first config file that exists. */
const loadConfigFile = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  for (const candidate of CliConfig.configFileCandidates(process.cwd(), process.env)) {
    const exists = yield* fs.exists(candidate).pipe(Effect.orElseSucceed(() => false))
    if (!exists) continue
    const text = yield* fs
      .readFileString(candidate)
      .pipe(Effect.mapError((error) => usageError(`Cannot read ${candidate}: ${error.message}`)))
    return yield* Either.match(CliConfig.decodeFileConfig(text, candidate), {
      onLeft: (error) => Effect.fail(usageError(error.message)),
      onRight: Effect.succeed
    })
  }
  return undefined
})

/**
 * With OPENAI_BASE_URL (an OpenAI-compatible server) and no model named anywhere, the server is asked which model it
 * serves: the one it serves is used and said, several or none make a usage error naming them.
 */
const withServerModel = (flags: CliConfig.Flags, file: CliConfig.FileConfig | undefined) =>
  Effect.gen(function* () {
    const credentials = CliConfig.credentialsFrom(process.env)
    const named = flags.model ?? process.env["DEEP_RESEARCH_MODEL"] ?? file?.model
    if (named !== undefined || flags.simulate === true || credentials.openaiBaseUrl === undefined) return flags
    if (credentials.anthropicApiKey !== undefined) return flags
    const found = yield* ServerModels.discover(credentials.openaiBaseUrl, credentials.openaiApiKey)
    if (found._tag === "Unclear") return yield* usageError(found.message)
    yield* Effect.sync(() =>
      process.stderr.write(`Using ${found.model}, the one model the server at ${credentials.openaiBaseUrl} serves.\n`)
    )
    return { ...flags, model: `openai:${found.model}` }
  })

/** Flags, environment and config file, resolved; a problem is a usage error (exit 2). */
export const resolveConfig = (flags: CliConfig.Flags, purpose: CliConfig.Purpose = "research") =>
  Effect.flatMap(loadConfigFile, (file) =>
    Effect.flatMap(purpose === "research" ? withServerModel(flags, file) : Effect.succeed(flags), (resolved) =>
      Effect.mapError(CliConfig.resolveEffect(resolved, process.env, file, purpose), (error) =>
        usageError(error.message)
      )
    )
  )

// =============================================================================
// Running research
// =============================================================================

const progressMode = (resolved: CliConfig.Resolved): Progress.Mode =>
  resolved.json ? "json" : process.stderr.isTTY ? "live" : "plain"

const sink: Progress.Sink = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
  width: () => process.stderr.columns ?? 100
}

const say = (resolved: CliConfig.Resolved, text: string): Effect.Effect<void> =>
  Effect.sync(() => (resolved.json ? process.stderr : process.stdout).write(`${printable(text)}\n`))

const reportPath = (resolved: CliConfig.Resolved, sessionId: string, path: Path.Path): string =>
  path.resolve(resolved.out ?? `deep-research-${sessionId}.md`)

/** During a run, log lines (warnings from the providers or the store) go through the renderer, above the view. */
const rendererLogger = (renderer: Progress.Renderer): Layer.Layer<never> =>
  Logger.replace(Logging.stderrLines, Logging.lineLogger(renderer.log))

const quote = (arg: string): string => (/^[A-Za-z0-9_./:=,@%+-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`)

/**
 * The exact command that resumes a session: the flags that choose models, search and the store are given again,
 * since the session keeps the research settings but never the wiring.
 */
export const resumeCommand = (sessionId: string, flags: CliConfig.Flags): string => {
  const args = ["deep-research", "resume", sessionId]
  const add = (option: OptionTable.Spec, value: string | number | undefined) => {
    if (value !== undefined) args.push(OptionTable.flagOf(option), quote(String(value)))
  }
  const options = OptionTable.research
  add(options.model, flags.model)
  for (const role of Usage.roles) add(OptionTable.roleModel(role), flags.modelRoles?.[role])
  add(options.search, flags.search)
  add(options.corpus, flags.corpus)
  add(options.store, flags.store)
  // The resumed run writes its report where this one would have.
  add(options.out, flags.out)
  if (flags.json === true) args.push(OptionTable.flagOf(options.json))
  if (flags.simulate === true) args.push(OptionTable.flagOf(options.simulate))
  return args.join(" ")
}

/** Runs or resumes a session with live progress, writes the report, and says where everything is. */
const runSession = (
  resolved: CliConfig.Resolved,
  flags: CliConfig.Flags,
  start: { readonly question: string } | { readonly resumeId: string; readonly answer?: string | undefined }
) =>
  Effect.gen(function* () {
    const path = yield* Path.Path
    const fs = yield* FileSystem.FileSystem
    const Wiring = yield* loadWiring
    const sessionId = "resumeId" in start ? start.resumeId : yield* Pipeline.newSessionId
    const renderer = Progress.makeRenderer(progressMode(resolved), sink)
    const resume = resumeCommand(sessionId, flags)
    const interactive =
      resolved.askClarification && !resolved.json && process.stdin.isTTY === true && process.stderr.isTTY === true
    const sessionDir = path.join(Store.sessionsDirectory(resolved), sessionId)
    // Whether the store holds the session: a resumed one does; a new one once its start is announced (right after
    // its first checkpoint), which the renderer sees before an interrupted run is reported.
    const stored = { saved: "resumeId" in start }
    const render = (event: ResearchEvents.ResearchEvent) => {
      if (event._tag === "SessionStarted") stored.saved = true
      renderer.onEvent(event)
    }
    const interrupted = () =>
      stored.saved
        ? `Interrupted. The session is saved at ${sessionDir}\nResume it with: ${resume}`
        : "Interrupted before the session started; nothing was saved."

    if (resolved.simulate) {
      renderer.log("[simulated] an offline run against the built-in emulator: no real model or web is used")
    }

    const program = Effect.gen(function* () {
      const events = yield* ResearchEvents.ResearchEvents
      const queue = yield* events.subscribe
      // Waiting for an event can be interrupted; an event once taken is always rendered, so none is lost when the
      // pump stops. The rest of the queue is drained after it has stopped, in order.
      const pump = yield* Effect.uninterruptibleMask((restore) =>
        Effect.flatMap(restore(Queue.take(queue)), (event) => Effect.sync(() => render(event)))
      ).pipe(Effect.forever, Effect.forkScoped)
      const drain = Effect.zipRight(
        Fiber.interrupt(pump),
        Effect.flatMap(Queue.takeAll(queue), (rest) =>
          Effect.sync(() => {
            for (const event of rest) render(event)
            renderer.finish()
          })
        )
      )
      return yield* (
        "question" in start
          ? Pipeline.research(start.question, {
              config: resolved.research,
              sessionId,
              clarification: interactive ? "ask" : "proceed"
            })
          : // Loaded first, so that a mistyped id is refused before anything is written for it.
            Effect.zipRight(
              Effect.flatMap(SessionStore.SessionStore, (sessions) => sessions.load(start.resumeId)),
              Pipeline.resume(start.resumeId, { answer: start.answer })
            )
      ).pipe(Effect.onExit(() => drain))
    }).pipe(Effect.scoped)

    // The question is asked with the live view off the screen, so the two do not draw over each other.
    const userInput = interactive
      ? Layer.succeed(UserInput.UserInput, {
          ask: (question) =>
            Effect.acquireUseRelease(
              Effect.sync(renderer.pause),
              () => Terminal.userInput.ask(question),
              () => Effect.sync(renderer.resume)
            )
        })
      : Layer.empty
    const exit = yield* program.pipe(
      Effect.provide(Layer.mergeAll(Wiring.layer(resolved), userInput, rendererLogger(renderer))),
      Effect.onInterrupt(() =>
        Effect.sync(() => {
          process.stderr.write(`\n${interrupted()}\n`)
          process.exitCode = 130
        })
      ),
      Effect.exit
    )
    if (Exit.isFailure(exit)) {
      if (Cause.isInterruptedOnly(exit.cause)) return yield* new Exited({ code: 130, message: interrupted() })
      const failure = Cause.failureOption(exit.cause)
      if (Option.isNone(failure)) return yield* Effect.failCause(exit.cause)
      const error = failure.value
      if (error._tag === "InvalidInput" || error._tag === "SessionNotFound") {
        return yield* new Exited({ code: 2, message: error.message })
      }
      return yield* new Exited({
        code: 1,
        message:
          `Research failed: ${error.message}\nThe session is saved at ${sessionDir}\n` +
          `Once the cause is fixed, resume it with: ${resume}`
      })
    }
    const session = exit.value
    if (session.status === "awaiting_clarification") {
      const question = session.clarification?.decision.question ?? ""
      yield* say(resolved, `The question needs clarification: ${question}\nAnswer it with: ${resume} --answer "..."`)
      return
    }
    const report = session.report
    if (report === undefined) {
      return yield* new Exited({ code: 1, message: `The session ${sessionId} ended without a report (${sessionDir}).` })
    }
    const out = reportPath(resolved, sessionId, path)
    const markdown = resolved.simulate ? Store.markSimulated(report.markdown) : report.markdown
    yield* fs.writeFileString(out, markdown).pipe(
      Effect.mapError(
        (error) =>
          new Exited({
            code: 1,
            message: `Cannot write the report to ${out}: ${error.message}\nIt is also in ${sessionDir}/report.md`
          })
      )
    )
    const cost = session.usage.reduce((n, r) => n + r.costUsd, 0)
    const tokens = session.usage.reduce((n, r) => n + r.inputTokens + r.outputTokens, 0)
    yield* say(
      resolved,
      [
        `${resolved.simulate ? "[simulated] " : ""}Report: ${out}`,
        `Session: ${sessionId} (${sessionDir})`,
        `Sources: ${session.sources.length}, citations: ${report.citations.length}, tokens: ${tokens}, cost: $${cost.toFixed(4)}${resolved.simulate ? " (simulated: no real model or web was used)" : ""}`
      ].join("\n")
    )
  })

// =============================================================================
// Commands
// =============================================================================

const question = Args.text({ name: "question" }).pipe(Args.withDescription("What to research, in any language"))
const sessionIdArg = Args.text({ name: "id" }).pipe(Args.withDescription("A session id (see `deep-research list`)"))

/** The cluster's side of the CLI, loaded by the commands that use a database. */
const loadCluster = Effect.promise(() => Promise.all([import("./ClusterRun.js"), import("./Worker.js")]))

const refused = (refusal: { readonly code: number; readonly message: string }) => new Exited(refusal)

const runCommand = Command.make(
  "run",
  { question, ...ParserOptions.withRoleModels(OptionTable.commands.run) },
  ({ detach, question, ...options }) =>
    Effect.gen(function* () {
      if (question.trim() === "") return yield* usageError("The question is empty.")
      const flags = toFlags(options)
      const resolved = yield* resolveConfig(flags)
      if (resolved.credentials.databaseUrl !== undefined) {
        const [ClusterRun] = yield* loadCluster
        return yield* Effect.mapError(ClusterRun.submit(resolved, question, { detach }), refused)
      }
      yield* runSession(resolved, flags, { question })
    })
).pipe(Command.withDescription("Research a question and write a cited report (the default command)"))

const resume = Command.make(
  "resume",
  { id: sessionIdArg, ...ParserOptions.withRoleModels(OptionTable.commands.resume) },
  ({ answer, id, ...given }) =>
    Effect.gen(function* () {
      // A bad id is the real problem whatever else is missing: it is said first.
      yield* Effect.mapError(Session.validateId(id), (error) => usageError(error.message))
      const options = yield* rememberSimulated(id, given)
      const flags = toFlags(options)
      const resolved = yield* resolveConfig(flags)
      if (resolved.credentials.databaseUrl !== undefined) {
        const [ClusterRun] = yield* loadCluster
        return yield* Effect.mapError(ClusterRun.resume(resolved, id, Option.getOrUndefined(answer)), refused)
      }
      yield* runSession(resolved, flags, { resumeId: id, answer: Option.getOrUndefined(answer) })
    })
).pipe(
  Command.withDescription(
    "Continue a session from its last checkpoint; finished researchers are not redone. Give the model and search " +
      "options again (the session keeps its research settings, never the wiring)."
  )
)

const storeOption = ParserOptions.optionsOf(OptionTable.commands.list)

/**
 * A session made with --simulate is resumed and evaluated simulated, without --simulate given again (it would
 * otherwise ask for a key): the store keeps a mark beside the session.
 */
const rememberSimulated = <F extends { readonly simulate: boolean }>(
  id: string,
  options: F & { readonly store: Option.Option<string>; readonly database: Option.Option<string> }
) =>
  options.simulate
    ? Effect.succeed(options)
    : withStore(options, (sessions) => sessions.artefact(id, "simulated.json")).pipe(
        Effect.map((mark) => Option.isSome(mark)),
        Effect.orElseSucceed(() => false),
        Effect.tap((simulated) =>
          simulated
            ? Effect.sync(() => process.stderr.write(`Session ${id} was simulated: it goes on simulated.\n`))
            : Effect.void
        ),
        Effect.map((simulated) => ({ ...options, simulate: simulated }))
      )

const withStore = <A, E>(
  options: { readonly store: Option.Option<string>; readonly database: Option.Option<string> },
  f: (sessions: SessionStore.Service, credentials: CliConfig.Credentials) => Effect.Effect<A, E>
) =>
  Effect.gen(function* () {
    const file = yield* loadConfigFile
    const directory = Store.sessionsDirectory({
      storeDir: CliConfig.storeDirOf(Option.getOrUndefined(options.store), process.env, file)
    })
    const fromEnv = CliConfig.credentialsFrom(process.env)
    const credentials = Option.match(options.database, {
      onNone: () => fromEnv,
      onSome: (url) => ({ ...fromEnv, databaseUrl: Redacted.make(url) })
    })
    const layer = Store.storeLayerOrFail(directory, credentials).pipe(
      Layer.mapError((error) => new Exited({ code: 2, message: error.message }))
    )
    return yield* Effect.flatMap(SessionStore.SessionStore, (sessions) => f(sessions, credentials)).pipe(
      Effect.provide(layer)
    )
  })

const storeError = (error: { readonly _tag: string; readonly message: string }) =>
  new Exited({ code: error._tag === "SessionCorrupt" || error._tag === "SessionBusy" ? 1 : 2, message: error.message })

const formatDate = (millis: number) => new Date(millis).toISOString().replace("T", " ").slice(0, 16)

const list = Command.make("list", storeOption, ({ json, ...where }) =>
  withStore(where, (sessions) =>
    Effect.gen(function* () {
      const summaries = yield* sessions.list
      if (json) {
        for (const summary of summaries) {
          yield* Console.log(JSON.stringify(Schema.encodeSync(Session.SessionSummary)(summary)))
        }
        return
      }
      if (summaries.length === 0) return yield* Console.log("No sessions yet.")
      for (const s of summaries) {
        yield* Console.log(
          `${s.id}  ${s.status.padEnd(22)}  ${formatDate(s.createdAt)}  $${s.costUsd.toFixed(4)}  ${printableLine(
            s.error !== undefined && s.query === "" ? s.error : s.query
          )
            .replace(/\s+/g, " ")
            .slice(0, 80)}`
        )
      }
    })
  )
).pipe(Command.withDescription("List sessions: id, status, created, cost, question"))

const show = Command.make("show", { id: sessionIdArg, ...storeOption }, ({ id, json, ...where }) =>
  withStore(where, (sessions) =>
    Effect.gen(function* () {
      const session = yield* Effect.mapError(sessions.load(id), storeError)
      if (json) return yield* Console.log(JSON.stringify(Schema.encodeSync(Session.Session)(session)))
      yield* Console.log(`Session ${session.id} · ${session.status} · ${formatDate(session.createdAt)}`)
      yield* Console.log(`Question: ${printableLine(session.query)}`)
      if (session.brief !== undefined) yield* Console.log(`Brief: ${printable(session.brief.brief)}`)
      yield* Console.log(`Rounds: ${session.rounds.length}, sources: ${session.sources.length}`)
      if (session.error !== undefined) yield* Console.log(`Error: ${printableLine(session.error.message)}`)
      if (session.status === "awaiting_clarification" && session.clarification !== undefined) {
        yield* Console.log(`Waiting for an answer to: ${printableLine(session.clarification.decision.question)}`)
      }
      if (session.report !== undefined) yield* Console.log(`\n${printable(session.report.markdown)}`)
    })
  )
).pipe(Command.withDescription("Show a session and its report (--json: the whole session)"))

const remove = Command.make("delete", { id: sessionIdArg, ...storeOption }, ({ id, json: _json, ...where }) =>
  withStore(where, (sessions, credentials) =>
    Effect.gen(function* () {
      yield* Effect.mapError(sessions.delete(id), storeError)
      // A session of a cluster's database leaves its messages there too (its `Run` holds the question).
      if (credentials.databaseUrl !== undefined) {
        const Cluster = yield* Effect.promise(() => import("./Cluster.js"))
        yield* Cluster.forgetStored(credentials.databaseUrl, id).pipe(
          Effect.catchAllCause((cause) =>
            Effect.logWarning(`the cluster's messages of deleted session ${id} were kept`, cause)
          )
        )
      }
      yield* Console.log(`Deleted session ${id}.`)
    })
  )
).pipe(Command.withDescription("Delete a session and its files"))

const evaluationOptions = ParserOptions.withRoleModels(OptionTable.commands.evaluate)

const evaluate = Command.make("evaluate", { id: sessionIdArg, ...evaluationOptions }, ({ id, ...given }) =>
  Effect.gen(function* () {
    const options = yield* rememberSimulated(id, given)
    const resolved = yield* resolveConfig(
      toFlags({
        ...options,
        search: Option.none(),
        corpus: Option.none(),
        maxRounds: Option.none(),
        concurrency: Option.none(),
        maxToolCalls: Option.none(),
        budgetTokens: Option.none(),
        budgetUsd: Option.none(),
        noClarify: false,
        out: Option.none()
      }),
      "evaluation"
    )
    const [Evaluation, { Evaluation: EvaluationResult }] = yield* loadEvaluation
    const Wiring = yield* loadWiring
    yield* Effect.mapError(
      Store.checkDatabase(resolved.credentials),
      (error) => new Exited({ code: 2, message: error.message })
    )
    const place = Store.artefactPlace(Store.sessionsDirectory(resolved), resolved.credentials)
    const result = yield* Evaluation.evaluateStored(id, place).pipe(
      Effect.provide(Wiring.evaluationLayer(resolved)),
      Effect.mapError(
        (error) =>
          new Exited({
            code:
              error._tag === "InvalidInput" || error._tag === "SessionNotFound" || error._tag === "SessionCorrupt"
                ? 2
                : 1,
            message: `Evaluation failed: ${error.message}`
          })
      )
    )
    if (options.json) {
      return yield* Console.log(JSON.stringify(Schema.encodeSync(EvaluationResult.Evaluation)(result.evaluation)))
    }
    if (resolved.simulate) yield* Console.log("[simulated] judged by the built-in emulator, not by a real model")
    yield* Console.log(Evaluation.format(result.evaluation))
    yield* Console.log(`\nStored in ${result.file}`)
  })
).pipe(
  Command.withDescription(
    "Judge a session's report on eight dimensions (the evaluation role's model) and check its citations; the " +
      "result is kept beside the session as evaluation.json (--json: printed as one JSON line)"
  )
)

const mcpOptions = ParserOptions.withRoleModels(OptionTable.commands.mcp)

const mcp = Command.make("mcp", mcpOptions, (options) =>
  Effect.gen(function* () {
    const resolved = yield* resolveConfig({
      ...toFlags(options),
      json: false,
      maxSessions: Option.getOrUndefined(options.maxSessions)
    })
    const Mcp = yield* loadMcp
    yield* Mcp.serveStdio(resolved).pipe(
      Effect.mapError((error) => new Exited({ code: 2, message: `The MCP server cannot start: ${error.message}` }))
    )
  })
).pipe(
  Command.withDescription(
    "Serve MCP on stdio: start_research, get_status, get_report, list_sessions, answer_clarification, " +
      "cancel_research and evaluate_report, over the same session store as the CLI"
  )
)

const serveOptions = ParserOptions.withRoleModels(OptionTable.commands.serve)

const serve = Command.make("serve", serveOptions, ({ cors, host, port: givenPort, ...options }) =>
  Effect.gen(function* () {
    const resolved = yield* resolveConfig({
      ...toFlags(options),
      json: false,
      maxSessions: Option.getOrUndefined(options.maxSessions)
    })
    const port = Option.getOrElse(givenPort, () => OptionTable.defaults.servePort)
    if (port < 0 || port > 65535) return yield* usageError(`--port must be between 0 and 65535, got ${port}`)
    const Serve = yield* loadServe
    yield* Serve.serve(resolved, {
      ...Serve.defaults,
      host: Option.getOrElse(host, () => OptionTable.defaults.serveHost),
      port,
      token: CliConfig.apiTokenFrom(process.env),
      corsOrigins: Option.match(cors, {
        onNone: () => [],
        onSome: (list) =>
          list
            .split(",")
            .map((origin) => origin.trim())
            .filter((origin) => origin !== "")
      })
    }).pipe(
      Effect.mapError((error) => new Exited({ code: 2, message: `deep-research serve cannot start: ${error.message}` }))
    )
  })
).pipe(
  Command.withDescription(
    "Serve the HTTP API (OpenAPI at /openapi.json, docs at /docs), an OpenAI-compatible /v1/chat/completions and " +
      "a web page at /, over the same session store as the CLI"
  )
)

const worker = Command.make(
  "worker",
  ParserOptions.withRoleModels(OptionTable.commands.worker),
  ({ healthPort, host: givenHost, listen, port, ...options }) =>
    Effect.gen(function* () {
      const resolved = yield* resolveConfig(toFlags(options))
      const [, Worker] = yield* loadCluster
      const host = Option.getOrElse(givenHost, () => OptionTable.defaults.workerHost)
      yield* Effect.mapError(
        Worker.run(resolved, {
          host,
          port: Option.getOrElse(port, () => OptionTable.defaults.workerPort),
          listenHost: Option.getOrElse(listen, () => host),
          healthPort: Option.getOrUndefined(healthPort)
        }),
        refused
      )
    })
).pipe(
  Command.withDescription(
    `Run research sessions as a runner of the cluster whose database is --database (or ${Variables.databaseUrl})`
  )
)

/** The command line as the parser knows it. */
export const root = Command.make("deep-research", {}).pipe(
  Command.withDescription("Turns a question into a cited research report."),
  Command.withSubcommands([runCommand, resume, list, show, remove, evaluate, mcp, serve, worker])
)

/** Parses the arguments (with the program's name and script first, as in `process.argv`) and runs the command. */
export const run: (args: ReadonlyArray<string>) => Effect.Effect<void, unknown, CliApp.CliApp.Environment> =
  Command.run(root, { name: "deep-research", version })

/** The names the CLI treats as subcommands; anything else in first position is a question. */
export const subcommands: ReadonlyArray<string> = OptionTable.commandNames
