/**
 * The `deep-research` command line: run (the default), resume, list, show, delete, evaluate, mcp, serve, worker and bench,
 * and the configuration they resolve. A session's run in the terminal is `internal/runSession`; the commands over the
 * session store are `internal/storeCommands`.
 */
import { Args, type CliApp, Command, Options } from "@effect/cli"
import { Session, Usage } from "@deep-research/core"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Variables from "@deep-research/providers/Environment"
import * as CliConfig from "./CliConfig.js"
import { loadConfigFile } from "./internal/configFile.js"
import { Exited, usageError } from "./internal/exited.js"
import { describeError } from "./internal/logging.js"
import * as OptionTable from "./internal/optionTable.js"
import * as ParserOptions from "./internal/parserOptions.js"
import { resumeCommand, runSession } from "./internal/runSession.js"
import * as ServerModels from "./internal/serverModels.js"
import * as StoreCommands from "./internal/storeCommands.js"
import { version } from "./version.js"
import * as Store from "./Store.js"

// Imported from here by the entry point and the tests, wherever they are defined.
export { Exited, resumeCommand }

// The research wiring (every provider's SDK), evaluation and the MCP server are loaded by the commands that use
// them: listing, showing or deleting sessions needs none of them, and starts in about half the time.
const loadWiring = Effect.promise(() => import("./Wiring.js"))
const loadEvaluation = Effect.promise(() =>
  Promise.all([import("./StoredEvaluation.js"), import("@deep-research/evaluation")])
)
const loadMcp = Effect.promise(() => import("./Mcp.js"))
const loadServe = Effect.promise(() => import("./Serve.js"))

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
    requireSources: flags.requireSources,
    noVerify: flags.noVerify,
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
// Commands
// =============================================================================

const question = Args.text({ name: "question" }).pipe(Args.withDescription("What to research, in any language"))

/** The cluster's side of the CLI, loaded by the commands that use a database. */
const loadCluster = Effect.promise(() => Promise.all([import("./ClusterRun.js"), import("./Worker.js")]))

/**
 * With a database, research is sent to the cluster's workers, which bring the models and search: none is needed here
 * (`serve` and `mcp` judge reports with a model when one is given).
 */
const purposeOf = (flags: CliConfig.Flags): CliConfig.Purpose =>
  flags.database !== undefined || CliConfig.credentialsFrom(process.env).databaseUrl !== undefined
    ? "submission"
    : "research"

const refused = (refusal: { readonly code: number; readonly message: string }) => new Exited(refusal)

const runCommand = Command.make(
  "run",
  { question, ...ParserOptions.withRoleModels(OptionTable.commands.run) },
  ({ detach, question, ...options }) =>
    Effect.gen(function* () {
      if (question.trim() === "") return yield* usageError("The question is empty.")
      const flags = toFlags(options)
      const resolved = yield* resolveConfig(flags, purposeOf(flags))
      if (resolved.credentials.databaseUrl !== undefined) {
        const [ClusterRun] = yield* loadCluster
        return yield* Effect.mapError(ClusterRun.submit(resolved, question, { detach }), refused)
      }
      yield* runSession(resolved, flags, { question })
    })
).pipe(Command.withDescription("Research a question and write a cited report (the default command)"))

const resume = Command.make(
  "resume",
  { id: StoreCommands.sessionIdArg, ...ParserOptions.withRoleModels(OptionTable.commands.resume) },
  ({ answer, id, ...given }) =>
    Effect.gen(function* () {
      // A bad id is the real problem whatever else is missing: it is said first.
      yield* Effect.mapError(Session.validateId(id), (error) => usageError(error.message))
      const options = yield* StoreCommands.rememberSimulated(id, given, "resumed")
      const flags = toFlags(options)
      const resolved = yield* resolveConfig(flags, purposeOf(flags))
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

const evaluationOptions = ParserOptions.withRoleModels(OptionTable.commands.evaluate)

const evaluate = Command.make(
  "evaluate",
  { id: StoreCommands.sessionIdArg, ...evaluationOptions },
  ({ id, ...given }) =>
    Effect.gen(function* () {
      const options = yield* StoreCommands.rememberSimulated(id, given, "evaluated")
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
          requireSources: false,
          noVerify: false,
          out: Option.none()
        }),
        "evaluation"
      )
      const [StoredEvaluation, { Evaluation }] = yield* loadEvaluation
      const Wiring = yield* loadWiring
      yield* Effect.mapError(
        Store.checkDatabase(resolved.credentials),
        (error) => new Exited({ code: 2, message: error.message })
      )
      const place = Store.artefactPlace(Store.sessionsDirectory(resolved), resolved.credentials)
      const result = yield* StoredEvaluation.evaluateStored(id, place).pipe(
        Effect.provide(Wiring.evaluationLayer(resolved)),
        Effect.mapError(
          (error) =>
            new Exited({
              code:
                error._tag === "InvalidInput" ||
                error._tag === "SessionNotFound" ||
                error._tag === "SessionCorrupt" ||
                error._tag === "RunConflict"
                  ? 2
                  : 1,
              // A session that cannot be evaluated yet is said as it is: nothing failed.
              message: error._tag === "RunConflict" ? error.message : `Evaluation failed: ${error.message}`
            })
        )
      )
      if (options.json) {
        return yield* Console.log(JSON.stringify(Schema.encodeSync(Evaluation.Evaluation)(result.evaluation)))
      }
      if (resolved.simulate) yield* Console.log("[simulated] judged by the built-in emulator, not by a real model")
      yield* Console.log(StoredEvaluation.format(result.evaluation))
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
    const flags = { ...toFlags(options), json: false, maxSessions: Option.getOrUndefined(options.maxSessions) }
    const resolved = yield* resolveConfig(flags, purposeOf(flags))
    const Mcp = yield* loadMcp
    yield* Mcp.serveStdio(resolved).pipe(
      Effect.mapError(
        (error) => new Exited({ code: 2, message: `The MCP server cannot start: ${describeError(error)}` })
      )
    )
  })
).pipe(
  Command.withDescription(
    "Serve MCP on stdio: start_research, get_status, get_report, list_sessions, answer_clarification, " +
      "cancel_research and evaluate_report, over the same session store as the CLI"
  )
)

const serveOptions = ParserOptions.withRoleModels(OptionTable.commands.serve)

const serve = Command.make("serve", serveOptions, ({ cors, host: givenHost, port: givenPort, ...options }) =>
  Effect.gen(function* () {
    // What is wrong with the server's own options is said before anything about models and keys.
    const port = Option.getOrElse(givenPort, () => OptionTable.defaults.servePort)
    if (port < 0 || port > 65535) return yield* usageError(`--port must be between 0 and 65535, got ${port}`)
    const host = Option.getOrElse(givenHost, () => OptionTable.defaults.serveHost)
    const token = CliConfig.apiTokenFrom(process.env)
    const Serve = yield* loadServe
    const refused = Serve.refusal({ host, token })
    if (refused !== undefined) return yield* usageError(refused)
    const given = Option.match(cors, {
      onNone: () => [],
      onSome: (list) =>
        list
          .split(",")
          .map((origin) => origin.trim())
          .filter((origin) => origin !== "")
    })
    // A browser sends its page's origin exactly (`https://app.example`): anything else would never match, silently.
    const corsOrigins: Array<string> = []
    for (const text of given) {
      const origin = Serve.originOf(text)
      if (origin === undefined) {
        return yield* usageError(
          `--cors takes origins such as https://app.example, separated by commas; "${text}" is not one`
        )
      }
      corsOrigins.push(origin)
    }
    const flags = { ...toFlags(options), json: false, maxSessions: Option.getOrUndefined(options.maxSessions) }
    const resolved = yield* resolveConfig(flags, purposeOf(flags))
    yield* Serve.serve(resolved, {
      ...Serve.defaults,
      host,
      port,
      token,
      corsOrigins,
      database: resolved.credentials.databaseUrl
    }).pipe(
      // The listener's own error is under the platform's (a port in use: "listen EADDRINUSE ...").
      Effect.mapError(
        (error) => new Exited({ code: 2, message: `deep-research serve cannot start: ${describeError(error)}` })
      )
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
      // Without a database there is no cluster to work for: said before anything about models and keys.
      if (Option.isNone(options.database) && (process.env[Variables.databaseUrl] ?? "").trim() === "") {
        return yield* usageError(
          `deep-research worker needs the cluster's database: --database URL or ${Variables.databaseUrl}`
        )
      }
      for (const [name, value] of [
        ["--port", port],
        ["--health-port", healthPort]
      ] as const) {
        if (Option.isSome(value) && (value.value < 0 || value.value > 65535)) {
          return yield* usageError(`${name} must be between 0 and 65535, got ${value.value}`)
        }
      }
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

const loadBench = Effect.promise(() => import("./Bench.js"))

const bench = Command.make(
  "bench",
  ParserOptions.withRoleModels(OptionTable.commands.bench),
  ({ ids, language, limit, out, parallel, tasks, topic, ...options }) =>
    Effect.gen(function* () {
      const tasksAtOnce = Option.getOrElse(parallel, () => 2)
      if (!Number.isInteger(tasksAtOnce) || tasksAtOnce < 1 || tasksAtOnce > 20) {
        return yield* usageError(`--parallel takes a whole number from 1 to 20, got ${tasksAtOnce}`)
      }
      const Bench = yield* loadBench
      const filter = Bench.filterOf({
        ids: Option.getOrUndefined(ids),
        language: Option.getOrUndefined(language),
        topic: Option.getOrUndefined(topic),
        limit: Option.getOrUndefined(limit)
      })
      if (filter._tag === "Left") return yield* usageError(filter.left)
      // A benchmark task never waits for an answer: the model's understanding of the question stands.
      const flags = toFlags({
        ...options,
        out: Option.none(),
        database: Option.none(),
        noClarify: true,
        json: false,
        requireSources: false,
        noVerify: false
      })
      const resolved = yield* resolveConfig(flags)
      yield* Bench.run(resolved, {
        tasksFile: Option.getOrUndefined(tasks),
        outputDir: Option.getOrElse(out, () => "deep-research-bench"),
        filter: filter.right,
        parallel: tasksAtOnce
      })
    })
).pipe(
  Command.withDescription(
    "Run DeepResearch Bench: research its tasks into the official scorer's {id, prompt, article} lines and a table " +
      "of time and cost per task; a run stopped anywhere goes on where it stopped"
  )
)

/** The command line as the parser knows it. */
export const root = Command.make("deep-research", {}).pipe(
  Command.withDescription("Turns a question into a cited research report."),
  Command.withSubcommands([
    runCommand,
    resume,
    StoreCommands.list,
    StoreCommands.show,
    StoreCommands.remove,
    evaluate,
    mcp,
    serve,
    worker,
    bench
  ])
)

/** Parses the arguments (with the program's name and script first, as in `process.argv`) and runs the command. */
export const run: (args: ReadonlyArray<string>) => Effect.Effect<void, unknown, CliApp.CliApp.Environment> =
  Command.run(root, { name: "deep-research", version })

/** The names the CLI treats as subcommands; anything else in first position is a question. */
export const subcommands: ReadonlyArray<string> = OptionTable.commandNames
