/**
 * Supervision: rounds of think -> delegate -> run -> assess. The supervisor model delegates directives with tools;
 * a round's directives run as parallel research units (at most `maxConcurrentResearchUnits` at once, at most
 * `maxDirectivesPerRound`, higher priority first); after each round the supervisor reads every topic's summary and an
 * evidence inventory. It stops on `researchComplete` (after running directives given in the same turn), on a turn
 * without tool calls (a first turn in prose gets one reminder of the tools), at the round limit, at the wall-clock
 * limit or when the budget runs low. A failing research unit is recorded and the others go on.
 *
 * The supervisor's conversation is rebuilt from the session's rounds before every call, so a resumed run continues
 * where the checkpoint left it; an interrupted round re-runs only its unfinished directives. The loop runs over a
 * `State` (the turns since the last round), one named step per kind of turn; the tools and the reading of a turn are
 * in `internal/research/supervisorTurn.ts`; a continuation (`Continuation.ts`) counts its own rounds and time.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type * as Budget from "../Budget.js"
import * as ContextRecovery from "../ContextRecovery.js"
import * as Continuation from "./Continuation.js"
import { mergeUnitSources } from "../internal/research/sessionSources.js"
import { history } from "../internal/research/supervisorHistory.js"
import * as Turn from "../internal/research/supervisorTurn.js"
import { endsRun, ModelMalformedOutput, type ProviderError } from "../Errors.js"
import * as LanguageModel from "../LanguageModel.js"
import * as ModelRouter from "../ModelRouter.js"
import * as Prompt from "../prompts/supervisor.js"
import { type IssuedDirective, SupervisionRound } from "../Research.js"
import * as ResearchEvents from "../ResearchEvents.js"
import type { Session } from "../Session.js"
import type { Task } from "../Task.js"
import * as Telemetry from "../Telemetry.js"
import * as ActionProtocol from "./ActionProtocol.js"
import { type Handle, patch } from "./Checkpoint.js"
import type { Output as UnitOutput, Runner as UnitRunner } from "./ResearchUnit.js"
import { today } from "../internal/text/calendar.js"

// =============================================================================
// Tools and a turn's calls
// =============================================================================

/** The supervisor's reflection tool. */
export const think = Turn.think

/** Delegates one research directive to one researcher. */
export const conductResearch = Turn.conductResearch

/** Ends research: the evidence is enough. */
export const researchComplete = Turn.researchComplete

/** What the supervisor's calls of one turn come to. */
export type Reading = Turn.Reading

/** Decodes a turn's calls; what does not decode is answered with the reason, never run. */
export const read = Turn.read

/**
 * A new round of the directives read: higher priority first (the sort is stable, so the model's order breaks ties),
 * at most `maxDirectivesPerRound`; the rest waits for a later round.
 */
export const newRound = Turn.newRound

// =============================================================================
// Outcome
// =============================================================================

/** Why supervision stopped. */
export type StopReason =
  | "research_complete"
  | "no_tool_call"
  | "no_directives"
  | "max_rounds"
  | "time_limit"
  | "budget"
  | "supervisor_failed"
  /** The first round's directives are saved, not run: the plan waits for its review (`holdFirstRound`). */
  | "held_for_review"

/** How supervision ended (the pipeline records the reason with the phase's completion). */
export interface Outcome {
  readonly reason: StopReason
  /** The supervisor model's error, or its directives that could not be read, when it failed. */
  readonly error?: ProviderError | ModelMalformedOutput | undefined
}

/** Turns in a row, before any research ran, whose every directive was rejected, after which supervision fails. */
export const maxRejectedTurns = 2

/** What supervision needs beside the task. */
export interface Options<R> {
  readonly session: Handle
  readonly budget: Budget.Service
  readonly runUnit: UnitRunner<R>
  /** Save the first round's directives without running them, and stop: the plan is to be reviewed first. */
  readonly holdFirstRound?: boolean | undefined
}

/** Think-only turns in a row after which the supervisor is taken to have nothing to delegate. */
export const maxTurnsWithoutDelegation = 3

/** How long running units may overrun the wall-clock limit before they are interrupted. */
export const overrunGrace = Duration.minutes(1)

/** What every step and round of a supervision uses. */
interface Environment<R> {
  readonly task: Task
  readonly options: Options<R>
  readonly model: LanguageModel.Service
  readonly system: string
  readonly remainingMillis: Effect.Effect<number>
  readonly timeUp: Effect.Effect<boolean>
  /** Checked by every researcher before each of its calls: research stops cleanly, keeping what it found. */
  readonly shouldStop: Effect.Effect<boolean>
}

// =============================================================================
// Rounds
// =============================================================================

const roundCompleted = (saved: Session, round: number): boolean =>
  saved.rounds.some((r) => r.round === round && r.completed)

/** Saves a unit's result as it arrives; the round's last result completes the round in the same checkpoint. */
const recordResult = (session: Handle, round: number, output: UnitOutput) => {
  const label = `research unit ${output.result.directiveId} ${output.result.status}`
  return session.update(
    (saved) => (roundCompleted(saved, round) ? `${label}, round ${round} completed` : label),
    (s) => {
      // A page another unit of the session found already is kept once, and this result points at it.
      const merged = mergeUnitSources(s.sources, output.sources, output.result)
      return patch(s, {
        rounds: s.rounds.map((r) => {
          if (r.round !== round) return r
          const results = [...r.results.filter((x) => x.directiveId !== output.result.directiveId), merged.result]
          const completed = r.directives.every((d) => results.some((x) => x.directiveId === d.id))
          // A saved round's parts and a unit's result: not validated again.
          return new SupervisionRound({ ...r, results, completed }, true)
        }),
        sources: merged.sources
      })
    }
  )
}

/** Marks a round completed when units stopped at the time limit left it without all its results. */
const completeRound = (session: Handle, round: number) =>
  Effect.flatMap(session.get, (saved) =>
    roundCompleted(saved, round)
      ? Effect.succeed(saved)
      : session.update(`round ${round} completed`, (s) =>
          patch(s, {
            rounds: s.rounds.map((r) => (r.round === round ? new SupervisionRound({ ...r, completed: true }, true) : r))
          })
        )
  )

/**
 * Runs a round's unfinished directives as parallel units. Researchers stop by themselves at the time limit (they
 * check `shouldStop`); units still running a grace period later are interrupted, and what the others found is kept.
 */
const runRound = <R>(env: Environment<R>, round: SupervisionRound) =>
  Effect.gen(function* () {
    const { session } = env.options
    const { config } = env.task
    const current = yield* session.get
    const finished = new Set(round.results.map((r) => r.directiveId))
    const pending = round.directives.filter((d) => !finished.has(d.id))
    const earlier = new Set(
      current.rounds.filter((r) => r.round < round.round).flatMap((r) => r.directives.map((d) => d.id))
    )
    const knownSources = current.sources.filter((s) => s.directiveId !== undefined && earlier.has(s.directiveId))
    const unit = (directive: IssuedDirective) =>
      env.options
        .runUnit({
          task: env.task,
          directive,
          knownSources,
          shouldStop: env.shouldStop
        })
        // The unit publishes its own completion or failure; the supervisor keeps the result.
        .pipe(Effect.flatMap((output) => recordResult(session, round.round, output)))
    const remaining = yield* env.remainingMillis
    const inTime = yield* Effect.forEach(pending, unit, {
      concurrency: config.maxConcurrentResearchUnits,
      discard: true
    }).pipe(Effect.timeoutOption(Duration.sum(Duration.millis(Math.max(0, remaining)), overrunGrace)))
    if (Option.isNone(inTime)) {
      yield* Effect.logWarning(`round ${round.round}: research units overran the time limit and were stopped`)
    }
    const done = yield* completeRound(session, round.round)
    const results = done.rounds.find((r) => r.round === round.round)?.results ?? []
    yield* ResearchEvents.publish({
      _tag: "RoundCompleted",
      round: round.round,
      completed: results.filter((r) => r.status === "completed").length,
      failed: results.filter((r) => r.status === "failed").length
    })
  }).pipe(Effect.withSpan(`round ${round.round}`, { attributes: { [Telemetry.attributes.round]: round.round } }))

/** Saves a new round, announces it and its directives, and runs it. */
const delegate = <R>(env: Environment<R>, round: SupervisionRound) =>
  Effect.gen(function* () {
    yield* env.options.session.update(`round ${round.round} delegated`, (s) =>
      patch(s, { rounds: [...s.rounds, round] })
    )
    yield* ResearchEvents.publish({ _tag: "RoundStarted", round: round.round })
    for (const d of round.directives) {
      yield* ResearchEvents.publish({
        _tag: "DirectiveIssued",
        round: round.round,
        directiveId: d.id,
        topic: d.directive.topic,
        priority: d.directive.priority
      })
    }
    yield* runRound(env, round)
  })

// =============================================================================
// State
// =============================================================================

/** Where supervision stands between turns: the turns since the last round, and whether it is over. */
export interface State {
  /** The turns since the last round, as they go back to the model after the conversation rebuilt from the rounds. */
  readonly live: ReadonlyArray<LanguageModel.Message>
  /** Reflections held over for the next round. */
  readonly reflections: ReadonlyArray<string>
  readonly turnsWithoutDelegation: number
  /** Turns in a row, before any research ran, whose every directive was rejected. */
  readonly rejectedTurns: number
  /** Set when supervision is over. */
  readonly outcome: Outcome | undefined
}

/** The state after a round, and before the first turn: nothing held over. */
export const initial: State = {
  live: [],
  reflections: [],
  turnsWithoutDelegation: 0,
  rejectedTurns: 0,
  outcome: undefined
}

const stopped = (state: State, reason: StopReason, error?: ProviderError | ModelMalformedOutput): State => ({
  ...state,
  outcome: { reason, error }
})

/**
 * After a turn in prose: a model that answers so before any research was delegated (weak tool callers do) is reminded
 * once of its tools; after research has run, a turn without tools means it is done.
 */
export const afterProse = (state: State, rounds: number, text: string): State =>
  rounds > 0 || state.turnsWithoutDelegation > 0
    ? stopped(state, "no_tool_call")
    : {
        ...state,
        turnsWithoutDelegation: state.turnsWithoutDelegation + 1,
        live: [...state.live, LanguageModel.assistant(text, []), LanguageModel.user(Prompt.nudge)]
      }

/** After a turn that delegated nothing: its calls go back to the model, unless supervision is over. */
export const afterNoDirectives = (
  state: State,
  rounds: number,
  reading: Reading,
  turn: { readonly text: string; readonly toolCalls: ReadonlyArray<LanguageModel.ToolCall> }
): State => {
  const back: State = {
    ...state,
    reflections: [...state.reflections, ...reading.reflections],
    turnsWithoutDelegation: state.turnsWithoutDelegation + 1,
    live: [...state.live, LanguageModel.assistant(turn.text, turn.toolCalls), ...reading.results]
  }
  // Directives the supervisor means but cannot write in a readable form, turn after turn, before anything was
  // researched: a report on nothing would read as a success, so supervision fails and says why.
  if (reading.rejectedDirectives.length > 0 && rounds === 0) {
    const rejectedTurns = state.rejectedTurns + 1
    if (rejectedTurns < maxRejectedTurns) return { ...back, rejectedTurns }
    const reason =
      `every conductResearch call of the supervisor's first ${rejectedTurns} turns was rejected; ` +
      `the last: ${reading.rejectedDirectives.at(-1) ?? ""}`
    const raw = JSON.stringify(turn.toolCalls).slice(0, 4_000)
    return stopped(state, "supervisor_failed", new ModelMalformedOutput({ reason, raw }))
  }
  if (reading.completes) return stopped(state, "research_complete")
  if (back.turnsWithoutDelegation >= maxTurnsWithoutDelegation) return stopped(state, "no_directives")
  return back
}

// =============================================================================
// Steps
// =============================================================================

/** Why supervision must stop before another turn, if it must: the round limit, the time limit or the budget. */
const limitReached = <R>(env: Environment<R>, current: Session) =>
  Effect.gen(function* () {
    if (Continuation.roundsSpent(current, env.task.config.maxSupervisionRounds)) return "max_rounds" as const
    if (yield* env.timeUp) return "time_limit" as const
    if (yield* env.options.budget.researchExhausted) return "budget" as const
    return undefined
  })

/** A turn that delegated: its directives run as a new round, and what was held over is spent. */
const delegateTurn = <R>(env: Environment<R>, state: State, rounds: number, reading: Reading) =>
  Effect.gen(function* () {
    const reflections = [...state.reflections, ...reading.reflections]
    const round = newRound(rounds + 1, reading.directives, reflections, env.task.config.maxDirectivesPerRound)
    if (rounds === 0 && env.options.holdFirstRound === true) {
      yield* env.options.session.update("round 1 planned", (s) => patch(s, { rounds: [...s.rounds, round] }))
      return stopped(initial, "held_for_review")
    }
    yield* delegate(env, round)
    // Directives given together with researchComplete are run first: the model asked for them.
    return reading.completes ? stopped(initial, "research_complete") : initial
  })

/** One turn: a model call over the rebuilt conversation, then what its calls come to; the state after it. */
const step = <R>(env: Environment<R>, state: State) =>
  Effect.gen(function* () {
    const current = yield* env.options.session.get
    const limit = yield* limitReached(env, current)
    if (limit !== undefined) return stopped(state, limit)
    const request: LanguageModel.GenerateRequest = {
      system: env.system,
      messages: [...history(current, env.task, env.task.config.maxSupervisionRounds), ...state.live],
      tools: Turn.tools,
      toolChoice: "auto"
    }
    // The call is reserved against the budget before it is sent; one the budget cannot cover ends research.
    const completion = yield* Effect.either(ContextRecovery.generateConversation(env.model, request))
    if (Either.isLeft(completion) && completion.left._tag === "ResearchBudgetExhausted") return stopped(state, "budget")
    // A refused key, no quota or an open breaker: no report could be written either, so the run fails here.
    if (Either.isLeft(completion) && endsRun(completion.left)) return yield* Effect.fail(completion.left)
    if (Either.isLeft(completion)) {
      yield* Effect.logWarning("the supervisor model failed; research stops with what it has", completion.left)
      return stopped(state, "supervisor_failed", completion.left)
    }
    const { text, toolCalls } = completion.right
    const rounds = current.rounds.length
    if (toolCalls.length === 0) return afterProse(state, rounds, text)
    const reading = read(toolCalls)
    for (const { error, tool } of reading.rejected) {
      yield* ResearchEvents.publish({
        _tag: "ToolCallRejected",
        unit: "supervisor",
        tool,
        error: error.slice(0, 2_000)
      })
    }
    return reading.directives.length === 0
      ? afterNoDirectives(state, rounds, reading, { text, toolCalls })
      : yield* delegateTurn(env, state, rounds, reading)
  })

// =============================================================================
// Supervision
// =============================================================================

const environment = <R>(task: Task, options: Options<R>) =>
  Effect.gen(function* () {
    const { config } = task
    const limitMillis = Duration.toMillis(config.maxResearchDuration)
    const since = Continuation.supervisionMillisBefore(yield* options.session.get)
    const remainingMillis = Effect.map(options.session.elapsedIn("supervision"), (t) => limitMillis - t + since)
    const timeUp = Effect.map(remainingMillis, (remaining) => remaining <= 0)
    const env: Environment<R> = {
      task,
      options,
      // A model without native tool calling gets the same tools through the JSON action protocol.
      model: ActionProtocol.wrap(yield* ModelRouter.forRole("supervisor")),
      system: Prompt.system(yield* today, {
        maxRounds: config.maxSupervisionRounds,
        maxDirectivesPerRound: config.maxDirectivesPerRound,
        maxConcurrentResearchUnits: config.maxConcurrentResearchUnits
      }),
      remainingMillis,
      timeUp,
      shouldStop: Effect.flatMap(options.budget.researchExhausted, (exhausted) =>
        exhausted ? Effect.succeed(true) : timeUp
      )
    }
    return env
  })

/** Runs supervision from wherever the session stands. */
export const run = <R>(task: Task, options: Options<R>) =>
  Effect.gen(function* () {
    const env = yield* environment(task, options)
    // A round interrupted midway (a crash, a kill) finishes first, re-running only its unfinished directives.
    const interrupted = (yield* options.session.get).rounds.find((r) => !r.completed)
    if (interrupted !== undefined) yield* runRound(env, interrupted)
    let state = initial
    while (state.outcome === undefined) state = yield* step(env, state)
    if (state.outcome.reason === "held_for_review") return state.outcome
    const rounds = (yield* options.session.get).rounds.length
    yield* ResearchEvents.publish({ _tag: "SupervisionStopped", reason: state.outcome.reason, rounds })
    return state.outcome
  }).pipe(Effect.withSpan("Supervisor.run"))
