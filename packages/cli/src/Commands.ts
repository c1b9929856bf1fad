/**
 * The `deep-research` commands: run (the default), resume, list, show, delete, evaluate and mcp.
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
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as CliConfig from "./CliConfig.js"
import * as Progress from "./Progress.js"
import * as Terminal from "./internal/terminal.js"
import { version } from "./version.js"
import * as Wiring from "./Wiring.js"

// =============================================================================
// Outcomes
// =============================================================================

/** How a command ended, as the process exit code says it. */
export class Exited extends Data.TaggedError("Exited")<{ readonly code: number; readonly message: string }> {}

const usageError = (message: string) => new Exited({ code: 2, message })

// =============================================================================
// Options shared by research commands
// =============================================================================

const optionalText = (name: string, description: string) =>
  Options.text(name).pipe(Options.withDescription(description), Options.optional)
const optionalInteger = (name: string, description: string) =>
  Options.integer(name).pipe(Options.withDescription(description), Options.optional)

const roleOptions = Object.fromEntries(
  Usage.roles.map((role) => [role, optionalText(`model-${role}`, `The model for the ${role} role (provider:name)`)])
) as { readonly [K in Usage.Role]: Options.Options<Option.Option<string>> }

const researchOptions = {
  model: optionalText(
    "model",
    "The default model, as provider:name (e.g. openai:gpt-4.1, anthropic:claude-sonnet-4-5)"
  ),
  roleModels: Options.all(roleOptions),
  search: optionalText(
    "search",
    "Search backends, comma-separated: tavily, exa, perplexity, semantic-scholar, openai-native, anthropic-native, local"
  ),
  corpus: optionalText("corpus", "A folder of local documents (.md, .txt, .html, .pdf) to research offline"),
  maxRounds: optionalInteger("max-rounds", "Supervision rounds at most (default 6)"),
  concurrency: optionalInteger("concurrency", "Researchers running at once at most (default 5)"),
  maxToolCalls: optionalInteger("max-tool-calls", "Search and extract calls per researcher (default 10)"),
  budgetTokens: optionalInteger("budget-tokens", "Stop research when this many tokens are spent"),
  budgetUsd: Options.float("budget-usd").pipe(
    Options.withDescription("Stop research at this cost in USD"),
    Options.optional
  ),
  noClarify: Options.boolean("no-clarify").pipe(Options.withDescription("Never ask a clarifying question")),
  out: optionalText("out", "Where to write the report (default ./deep-research-<id>.md)"),
  store: optionalText("store", "The folder that keeps sessions (default ~/.deep-research; also DEEP_RESEARCH_HOME)"),
  json: Options.boolean("json").pipe(Options.withDescription("Progress as JSON lines on stdout, nothing else there")),
  simulate: Options.boolean("simulate").pipe(
    Options.withDescription(
      "Run offline against the built-in emulator of the vendors; every output is marked simulated"
    )
  )
}

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

/** Flags, environment and config file, resolved; a problem is a usage error (exit 2). */
export const resolveConfig = (flags: CliConfig.Flags) =>
  Effect.flatMap(loadConfigFile, (file) =>
    Effect.mapError(CliConfig.resolveEffect(flags, process.env, file), (error) => usageError(error.message))
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
  Effect.sync(() => (resolved.json ? process.stderr : process.stdout).write(`${text}\n`))

const reportPath = (resolved: CliConfig.Resolved, sessionId: string, path: Path.Path): string =>
  path.resolve(resolved.out ?? `deep-research-${sessionId}.md`)

const markSimulated = (resolved: CliConfig.Resolved, markdown: string): string =>
  resolved.simulate
    ? `> **Simulated run.** Every model answer, search result and source below was produced offline by the\n> deep-research emulator, not by a real model or the web.\n\n${markdown}`
    : markdown

/** Runs or resumes a session with live progress, writes the report, and says where everything is. */
const runSession = (
  resolved: CliConfig.Resolved,
  start: { readonly question: string } | { readonly resumeId: string; readonly answer?: string | undefined }
) =>
  Effect.gen(function* () {
    const path = yield* Path.Path
    const fs = yield* FileSystem.FileSystem
    const sessionId = "resumeId" in start ? start.resumeId : yield* Wiring.newSessionId
    const mode = progressMode(resolved)
    const renderer = Progress.makeRenderer(mode, sink)
    const resumeCommand = `deep-research resume ${sessionId}${resolved.simulate ? " --simulate" : ""}`
    const interactive = !resolved.json && process.stdin.isTTY === true && process.stderr.isTTY === true

    const program = Effect.gen(function* () {
      const events = yield* ResearchEvents.ResearchEvents
      const queue = yield* events.subscribe
      const pump = yield* Queue.take(queue).pipe(
        Effect.tap((event) => Effect.sync(() => renderer.onEvent(event))),
        Effect.forever,
        Effect.forkScoped
      )
      const drain = Effect.zipRight(
        Effect.flatMap(Queue.takeAll(queue), (rest) =>
          Effect.sync(() => {
            for (const event of rest) renderer.onEvent(event)
          })
        ),
        Effect.zipRight(Fiber.interrupt(pump), Effect.sync(renderer.finish))
      )
      const session = yield* (
        "question" in start
          ? Pipeline.research(start.question, {
              config: resolved.research,
              sessionId,
              clarification: interactive ? "ask" : "proceed"
            })
          : Pipeline.resume(start.resumeId, { answer: start.answer })
      ).pipe(Effect.onExit(() => drain))
      return session
    }).pipe(Effect.scoped)

    const userInput = interactive ? Layer.succeed(UserInput.UserInput, Terminal.userInput) : Layer.empty
    const sessionDir = path.join(Wiring.sessionsDirectory(resolved), sessionId)
    const exit = yield* program.pipe(
      Effect.provide(Layer.merge(Wiring.layer(resolved), userInput)),
      Effect.onInterrupt(() =>
        Effect.sync(() => {
          process.stderr.write(
            `\nInterrupted. The session is saved at ${sessionDir}.\nResume it with: ${resumeCommand}\n`
          )
          process.exitCode = 130
        })
      ),
      Effect.exit
    )
    if (Exit.isFailure(exit)) {
      if (Cause.isInterruptedOnly(exit.cause)) {
        return yield* new Exited({
          code: 130,
          message: `Interrupted. The session is saved at ${sessionDir}.\nResume it with: ${resumeCommand}`
        })
      }
      const failure = Cause.failureOption(exit.cause)
      if (Option.isSome(failure)) {
        const error = failure.value
        const code = error._tag === "InvalidInput" || error._tag === "SessionNotFound" ? 2 : 1
        return yield* new Exited({
          code,
          message: `Research failed: ${error.message}\nThe session is at ${sessionDir}${code === 1 ? `; once the cause is fixed, resume it with: ${resumeCommand}` : ""}`
        })
      }
      return yield* Effect.failCause(exit.cause)
    }
    const session = exit.value
    if (session.status === "awaiting_clarification") {
      const question = session.clarification?.decision.question ?? ""
      yield* say(
        resolved,
        `The question needs clarification: ${question}\nAnswer it with: deep-research resume ${sessionId} --answer "..."`
      )
      return
    }
    const report = session.report
    if (report === undefined) {
      return yield* new Exited({ code: 1, message: `The session ${sessionId} ended without a report (${sessionDir}).` })
    }
    const out = reportPath(resolved, sessionId, path)
    yield* fs
      .writeFileString(out, markSimulated(resolved, report.markdown))
      .pipe(
        Effect.mapError(
          (error) => new Exited({ code: 1, message: `Cannot write the report to ${out}: ${error.message}` })
        )
      )
    const cost = session.usage.reduce((n, r) => n + r.costUsd, 0)
    const tokens = session.usage.reduce((n, r) => n + r.inputTokens + r.outputTokens, 0)
    yield* say(
      resolved,
      [
        `${resolved.simulate ? "[simulated] " : ""}Report: ${out}`,
        `Session: ${sessionId} (${sessionDir})`,
        `Sources: ${session.sources.length}, citations: ${report.citations.length}, tokens: ${tokens}, cost: $${cost.toFixed(4)}`
      ].join("\n")
    )
  })

// =============================================================================
// Commands
// =============================================================================

const question = Args.text({ name: "question" }).pipe(Args.withDescription("What to research, in any language"))
const sessionIdArg = Args.text({ name: "id" }).pipe(Args.withDescription("A session id (see `deep-research list`)"))

const runCommand = Command.make("run", { question, ...researchOptions }, ({ question, ...flags }) =>
  Effect.gen(function* () {
    if (question.trim() === "") return yield* usageError("The question is empty.")
    const resolved = yield* resolveConfig(toFlags(flags))
    yield* runSession(resolved, { question })
  })
).pipe(Command.withDescription("Research a question and write a cited report (the default command)"))

const resume = Command.make(
  "resume",
  {
    id: sessionIdArg,
    answer: optionalText("answer", "The answer to a pending clarification question"),
    ...researchOptions
  },
  ({ answer, id, ...flags }) =>
    Effect.gen(function* () {
      const resolved = yield* resolveConfig(toFlags(flags))
      yield* runSession(resolved, { resumeId: id, answer: Option.getOrUndefined(answer) })
    })
).pipe(Command.withDescription("Continue a session from its last checkpoint"))

const storeOption = { store: researchOptions.store, json: researchOptions.json }

const withStore = <A, E>(store: Option.Option<string>, f: (sessions: SessionStore.Service) => Effect.Effect<A, E>) =>
  Effect.gen(function* () {
    const directory = Wiring.sessionsDirectoryFrom(Option.getOrUndefined(store))
    return yield* Effect.flatMap(SessionStore.SessionStore, f).pipe(Effect.provide(Wiring.storeLayer(directory)))
  })

const storeError = (error: { readonly _tag: string; readonly message: string }) =>
  new Exited({ code: error._tag === "SessionCorrupt" ? 1 : 2, message: error.message })

const formatDate = (millis: number) => new Date(millis).toISOString().replace("T", " ").slice(0, 16)

const list = Command.make("list", storeOption, ({ json, store }) =>
  withStore(store, (sessions) =>
    Effect.gen(function* () {
      const summaries = yield* sessions.list
      if (json) {
        for (const summary of summaries) yield* Console.log(JSON.stringify(summary))
        return
      }
      if (summaries.length === 0) return yield* Console.log("No sessions yet.")
      for (const s of summaries) {
        yield* Console.log(
          `${s.id}  ${s.status.padEnd(22)}  ${formatDate(s.createdAt)}  $${s.costUsd.toFixed(4)}  ${s.query.replace(/\s+/g, " ").slice(0, 80)}`
        )
      }
    })
  )
).pipe(Command.withDescription("List sessions: id, status, created, cost, question"))

const show = Command.make("show", { id: sessionIdArg, ...storeOption }, ({ id, json, store }) =>
  withStore(store, (sessions) =>
    Effect.gen(function* () {
      const session = yield* Effect.mapError(sessions.load(id), storeError)
      if (json) return yield* Console.log(JSON.stringify(Session.summarize(session)))
      yield* Console.log(`Session ${session.id} · ${session.status} · ${formatDate(session.createdAt)}`)
      yield* Console.log(`Question: ${session.query}`)
      if (session.brief !== undefined) yield* Console.log(`Brief: ${session.brief.brief}`)
      yield* Console.log(`Rounds: ${session.rounds.length}, sources: ${session.sources.length}`)
      if (session.report !== undefined) yield* Console.log(`\n${session.report.markdown}`)
    })
  )
).pipe(Command.withDescription("Show a session and its report"))

const remove = Command.make("delete", { id: sessionIdArg, ...storeOption }, ({ id, store }) =>
  withStore(store, (sessions) =>
    Effect.zipRight(Effect.mapError(sessions.delete(id), storeError), Console.log(`Deleted session ${id}.`))
  )
).pipe(Command.withDescription("Delete a session and its files"))

const root = Command.make("deep-research", {}).pipe(
  Command.withDescription("Turns a question into a cited research report."),
  Command.withSubcommands([runCommand, resume, list, show, remove])
)

/** Parses the arguments (with the program's name and script first, as in `process.argv`) and runs the command. */
export const run: (args: ReadonlyArray<string>) => Effect.Effect<void, unknown, CliApp.CliApp.Environment> =
  Command.run(root, { name: "deep-research", version })

/** The names the CLI treats as subcommands; anything else in first position is a question. */
export const subcommands: ReadonlyArray<string> = ["run", "resume", "list", "show", "delete", "evaluate", "mcp"]
