/**
 * Running a research session in the terminal: a new one or a resumed one, with the live progress view, the question
 * of a clarification asked on the terminal, the report written to its file, and what to type to resume it when it is
 * interrupted or fails.
 */
import {
  Budget,
  Errors,
  FollowUp,
  Pipeline,
  ResearchEvents,
  type Session,
  SessionStore,
  Usage,
  UserInput
} from "@deep-research/core"
import * as Keyless from "@deep-research/providers/Keyless"
import * as Path from "@effect/platform/Path"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import type * as CliConfig from "../../CliConfig.js"
import * as Progress from "../../Progress.js"
import { conflict } from "../../RunSchema.js"
import * as Store from "../../Store.js"
import { Exited } from "../commandLine/exited.js"
import { stoppedRun } from "../commandLine/failures.js"
import * as Logging from "../telemetry/logging.js"
import * as OptionTable from "../commandLine/optionTable.js"
import { printable } from "./printable.js"
import { reportFile, reportSummary, unwrittenReport, writeReport } from "./reportSummary.js"
import * as Terminal from "./userInput.js"

// The research wiring loads every provider's SDK: it is loaded when a session runs, not with the command line.
const loadWiring = Effect.promise(() => import("../../Wiring.js"))

const progressMode = (resolved: CliConfig.Resolved): Progress.Mode =>
  resolved.json ? "json" : process.stderr.isTTY ? "live" : "plain"

const sink: Progress.Sink = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
  width: () => process.stderr.columns ?? 100
}

const say = (resolved: CliConfig.Resolved, text: string): Effect.Effect<void> =>
  Effect.sync(() => (resolved.json ? process.stderr : process.stdout).write(`${printable(text)}\n`))

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

/** What a run in the terminal starts from: a new question, or a stored session (with the answer to its question). */
type Start =
  | { readonly question: string }
  | {
      readonly resumeId: string
      readonly answer?: string | undefined
      /** A new budget from the command line: it replaces the stored one (`Pipeline.ResumeOptions.budget`). */
      readonly budget?: Pipeline.ResumeOptions["budget"]
      /** A direction to research further: the finished session is reopened in it (`FollowUp.extend`). */
      readonly direction?: string | undefined
      readonly rounds?: number | undefined
    }

/** A run in the terminal: what its steps share. */
interface TerminalRun {
  readonly resolved: CliConfig.Resolved
  readonly start: Start
  readonly sessionId: string
  readonly sessionDir: string
  /** The command that resumes the session. */
  readonly resume: string
  readonly renderer: Progress.Renderer
  /** Whether a clarifying question is asked on the terminal. */
  readonly interactive: boolean
  /**
   * Whether the store holds the session: a resumed one does; a new one once its start is announced (right after its
   * first checkpoint), which the renderer sees before an interrupted run is reported.
   */
  readonly stored: { saved: boolean }
}

const render = (run: TerminalRun, event: ResearchEvents.ResearchEvent) => {
  if (event._tag === "SessionStarted") run.stored.saved = true
  run.renderer.onEvent(event)
}

const interrupted = (run: TerminalRun) =>
  run.stored.saved
    ? `Interrupted. The session is saved in ${run.sessionDir}\nResume it with: ${run.resume}`
    : "Interrupted before the session started; nothing was saved."

/** Researches the question, or resumes the session, rendering every event the run publishes. */
const research = (run: TerminalRun) =>
  Effect.gen(function* () {
    const { resolved, sessionId, start } = run
    const events = yield* ResearchEvents.ResearchEvents
    const queue = yield* events.subscribe
    // Waiting for an event can be interrupted; an event once taken is always rendered, so none is lost when the
    // pump stops. The rest of the queue is drained after it has stopped, in order.
    const pump = yield* Effect.uninterruptibleMask((restore) =>
      Effect.flatMap(restore(Queue.take(queue)), (event) => Effect.sync(() => render(run, event)))
    ).pipe(Effect.forever, Effect.forkScoped)
    const drain = Effect.zipRight(
      Fiber.interrupt(pump),
      Effect.flatMap(Queue.takeAll(queue), (rest) =>
        Effect.sync(() => {
          for (const event of rest) render(run, event)
          run.renderer.finish()
        })
      )
    )
    return yield* (
      "question" in start
        ? Pipeline.research(start.question, {
            config: resolved.research,
            sessionId,
            clarification: run.interactive && resolved.askClarification ? "ask" : "proceed"
          })
        : // Loaded first, so that a mistyped id, or an answer to a session that asks nothing, is refused before
          // anything is written for it.
          Effect.zipRight(
            Effect.flatMap(SessionStore.SessionStore, (sessions) => sessions.load(start.resumeId)).pipe(
              Effect.filterOrFail(
                (stored) => start.answer === undefined || stored.status === "awaiting_clarification",
                (stored) => conflict(stored.id, stored.status, "cannot take an answer")
              )
            ),
            start.direction === undefined
              ? Pipeline.resume(start.resumeId, { answer: start.answer, budget: start.budget })
              : FollowUp.extend(start.resumeId, start.direction, { rounds: start.rounds, budget: start.budget })
          )
    ).pipe(Effect.onExit(() => drain))
  }).pipe(Effect.scoped)

/** The question is asked with the live view off the screen, so the two do not draw over each other. */
const userInput = (run: TerminalRun) =>
  run.interactive
    ? Layer.succeed(UserInput.UserInput, {
        ask: (question) =>
          Effect.acquireUseRelease(
            Effect.sync(run.renderer.pause),
            () => Terminal.userInput.ask(question),
            () => Effect.sync(run.renderer.resume)
          )
      })
    : Layer.empty

/**
 * Runs the research on the wiring, and says how it ended and whether the run took its session's lock: a failure of
 * the store before that is the store's configuration (exit 2), one after it stops a run whose session is kept (exit 1).
 */
const execute = (run: TerminalRun, Wiring: Effect.Effect.Success<typeof loadWiring>) =>
  Effect.gen(function* () {
    const held = { session: false }
    const exit = yield* research(run).pipe(
      Effect.updateService(SessionStore.SessionStore, (store) => ({
        ...store,
        lock: (id: string) => Effect.tap(store.lock(id), () => Effect.sync(() => void (held.session = true)))
      })),
      Effect.provide(Layer.mergeAll(Wiring.layer(run.resolved), userInput(run), rendererLogger(run.renderer))),
      Effect.onInterrupt(() =>
        Effect.sync(() => {
          process.stderr.write(`\n${interrupted(run)}\n`)
          process.exitCode = 130
        })
      ),
      Effect.exit
    )
    return { exit, held: held.session }
  })

/** How a run that ended without its session ends the command: the exit code and what to do next. */
const failed = <E extends { readonly _tag: string; readonly message: string }>(
  run: TerminalRun,
  cause: Cause.Cause<E>,
  held: boolean
) =>
  Effect.gen(function* () {
    const { resume, sessionDir } = run
    if (Cause.isInterruptedOnly(cause)) return yield* new Exited({ code: 130, message: interrupted(run) })
    const failure = Cause.failureOption(cause)
    if (Option.isNone(failure)) {
      if (held) return yield* new Exited(stoppedRun(cause, { kept: sessionDir, resume }))
      return yield* Effect.failCause(cause)
    }
    const error = failure.value
    if (
      error._tag === "ResearchInvalidInput" ||
      error._tag === "ResearchSessionNotFound" ||
      error._tag === "RunConflict"
    ) {
      return yield* new Exited({ code: 2, message: error.message })
    }
    // Nothing failed: another process runs the session.
    if (error._tag === "ResearchSessionBusy") return yield* new Exited({ code: 1, message: error.message })
    return yield* new Exited({
      code: 1,
      message:
        `Research failed: ${error.message}\nThe session is saved at ${sessionDir}\n` +
        (byBudget(error)
          ? `${budgetNumbers(run.resolved)}The budget stopped it: resume it with a larger one, as in: ${resume} ${largerBudget(run.resolved)}`
          : `Once the cause is fixed, resume it with: ${resume}`)
    })
  })

/** Whether a run failed for want of budget: a report that rests on no source because none could be paid for. */
const byBudget = (error: { readonly _tag: string }): boolean =>
  error._tag === "ResearchBudgetExhausted" || (error instanceof Errors.Ungrounded && error.reason === "budget")

/** The budget flag a failed run's advice gives: twice the run's budget (tokens, or else USD). */
const largerBudget = (resolved: CliConfig.Resolved): string => {
  const { maxTokens, maxUsd } = resolved.research.budget
  if (maxTokens === undefined && maxUsd !== undefined)
    return `${OptionTable.flagOf(OptionTable.research.budgetUsd)} ${maxUsd * 2}`
  return `${OptionTable.flagOf(OptionTable.research.budgetTokens)} ${Math.max(2 * (maxTokens ?? 0), 20_000)}`
}

/** The budget of a failed run in numbers: what research had, and what was kept for the report. */
const budgetNumbers = (resolved: CliConfig.Resolved): string => {
  const { maxTokens, synthesisReserve } = resolved.research.budget
  if (maxTokens === undefined) return ""
  // The report's reserve as the budget keeps it: its share, and never less than a report of useful length needs.
  const reserve = Math.round(Math.min(maxTokens, Math.max(maxTokens * synthesisReserve, Budget.minimumReportTokens)))
  return (
    `The budget of ${maxTokens} tokens gave research ${maxTokens - reserve} and kept ${reserve} for the report; each ` +
    "model call reserves its whole input and output limit before it is sent (a researcher's turn, a few thousand " +
    "tokens).\n"
  )
}

/** How a run that ended with its session ends: the question it asks, or its report written and where it is. */
const finished = (run: TerminalRun, session: Session.Session, path: Path.Path) =>
  Effect.gen(function* () {
    const { resolved, resume, sessionDir, sessionId } = run
    if (session.status === "awaiting_clarification") {
      const question = session.clarification?.decision.question ?? ""
      yield* say(resolved, `The question needs clarification: ${question}\nAnswer it with: ${resume} --answer "..."`)
      return
    }
    if (session.status === "awaiting_review" || (session.status === "cancelled" && session.review !== undefined)) {
      const waiting =
        session.status === "awaiting_review" ? "waits for its plan to be reviewed" : "was cancelled at review"
      yield* say(resolved, `The session ${sessionId} ${waiting}; its plan is kept. Review it with: ${resume}`)
      return
    }
    const report = session.report
    if (report === undefined) {
      return yield* new Exited({ code: 1, message: `The session ${sessionId} ended without a report (${sessionDir}).` })
    }
    const file = reportFile(resolved.out, sessionId)
    const markdown = resolved.simulate ? Store.markSimulated(report.markdown) : report.markdown
    const unwritten = yield* writeReport(file, markdown, resolved.credentials)
    // The research succeeded: a report its file cannot take is still in the store, said as a warning, not a failure.
    const out = Option.match(unwritten, {
      onNone: () => file,
      onSome: () => `${sessionDir} (deep-research show ${sessionId})`
    })
    if (Option.isSome(unwritten)) {
      const kept = `in the session's store, ${out}`
      yield* Effect.sync(() => process.stderr.write(`${printable(unwrittenReport(file, unwritten.value, kept))}\n`))
    }
    yield* say(resolved, reportSummary(session, { out, kept: sessionDir, simulate: resolved.simulate }))
  })

/** Runs or resumes a session with live progress, writes the report, and says where everything is. */
export const runSession = (resolved: CliConfig.Resolved, flags: CliConfig.Flags, start: Start) =>
  Effect.gen(function* () {
    const path = yield* Path.Path
    const Wiring = yield* loadWiring
    const sessionId = "resumeId" in start ? start.resumeId : yield* Pipeline.newSessionId
    const run: TerminalRun = {
      resolved,
      start,
      sessionId,
      sessionDir: Store.storePlace(resolved.storeDir, resolved.credentials),
      resume: resumeCommand(sessionId, flags),
      renderer: Progress.makeRenderer(progressMode(resolved), sink),
      // Someone can answer a clarifying question, or review the plan (`--review`), on a terminal.
      interactive:
        (resolved.askClarification || resolved.research.review === true) &&
        !resolved.json &&
        process.stdin.isTTY === true &&
        process.stderr.isTTY === true,
      stored: { saved: "resumeId" in start }
    }
    if (resolved.simulate) {
      run.renderer.log("[simulated] an offline run against the built-in emulator: no real model or web is used")
    }
    const keyless: ReadonlyArray<string> = Keyless.Backend.literals
    const keylessDefault = resolved.searchDefaulted && resolved.search.every((backend) => keyless.includes(backend))
    run.renderer.log(Progress.searchLine(resolved.search, keylessDefault))
    const { exit, held } = yield* execute(run, Wiring)
    if (Exit.isFailure(exit)) return yield* failed(run, exit.cause, held)
    yield* finished(run, exit.value, path)
  })
