/**
 * Supervision: rounds of think -> delegate -> run -> assess. The supervisor model delegates directives with tools;
 * a round's directives run as parallel research units (at most `maxConcurrentResearchUnits` at once, at most
 * `maxDirectivesPerRound`, higher priority first); after each round the supervisor reads every topic's summary and an
 * evidence inventory. It stops on `researchComplete` (after running directives given in the same turn), on a turn
 * without tool calls (a first turn in prose gets one reminder of the tools), at the round limit, at the wall-clock
 * limit or when the budget runs low. A failing research unit is recorded and the others go on.
 *
 * The supervisor's conversation is rebuilt from the session's rounds before every call, so a resumed run continues
 * exactly where the checkpoint left it; a round interrupted midway re-runs only its unfinished directives.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type * as Budget from "../Budget.js"
import * as ContextRecovery from "../ContextRecovery.js"
import { history, toolNames } from "../internal/research/supervisorHistory.js"
import { MalformedOutput, type ProviderError } from "../Errors.js"
import * as LanguageModel from "../LanguageModel.js"
import * as ModelRouter from "../ModelRouter.js"
import * as Prompt from "../prompts/supervisor.js"
import { Directive, IssuedDirective, SupervisionRound } from "../Research.js"
import * as ResearchEvents from "../ResearchEvents.js"
import type { Session } from "../Session.js"
import type { Task } from "../Task.js"
import * as Telemetry from "../Telemetry.js"
import * as Tool from "../Tool.js"
import * as ActionProtocol from "./ActionProtocol.js"
import { type Handle, patch } from "./Checkpoint.js"
import type { Output as UnitOutput, Runner as UnitRunner } from "./ResearchUnit.js"
import { today } from "../internal/text/calendar.js"

// =============================================================================
// Tools
// =============================================================================

/** The supervisor's reflection tool. */
export const think = Tool.make(toolNames.think, {
  description:
    "Think before delegating and after each round: what is known, what is missing, what the next directives " +
    "should settle. Has no other effect.",
  schema: Schema.Struct({ reflection: Schema.String })
})

/** Delegates one research directive to one researcher. */
export const conductResearch = Tool.make(toolNames.conductResearch, {
  description:
    "Delegate one research directive to a researcher. Directives of the same turn run in parallel. The topic is a " +
    "standalone paragraph: the researcher sees nothing else of the team's work.",
  schema: Directive
})

/** Ends research: the evidence is enough. */
export const researchComplete = Tool.make("researchComplete", {
  description: "Call when the evidence gathered answers the request; research ends and the report is written.",
  schema: Schema.Struct({})
})

const tools = [think.definition, conductResearch.definition, researchComplete.definition]

// What the action protocol reports when a tool-less model's answer could not be read as actions.
const invalidActions = Tool.make(ActionProtocol.invalidActionsTool, {
  description: "An answer that could not be read as actions",
  schema: Schema.Struct({ error: Schema.String })
})

// =============================================================================
// Outcome
// =============================================================================

/** Why supervision stopped. */
export type StopReason =
  "research_complete" | "no_tool_call" | "no_directives" | "max_rounds" | "time_limit" | "budget" | "supervisor_failed"

/** How supervision ended (the pipeline records the reason with the phase's completion). */
export interface Outcome {
  readonly reason: StopReason
  /** The supervisor model's error, or its directives that could not be read, when it failed. */
  readonly error?: ProviderError | MalformedOutput | undefined
}

/** Turns in a row, before any research ran, whose every directive was rejected, after which supervision fails. */
export const maxRejectedTurns = 2

/** What supervision needs beside the task. */
export interface Options<R> {
  readonly session: Handle
  readonly budget: Budget.Service
  readonly runUnit: UnitRunner<R>
}

/** Think-only turns in a row after which the supervisor is taken to have nothing to delegate. */
export const maxTurnsWithoutDelegation = 3

/** How long running units may overrun the wall-clock limit before they are interrupted. */
export const overrunGrace = Duration.minutes(1)

// =============================================================================
// A turn's calls
// =============================================================================

/** What the supervisor's calls of one turn come to. */
export interface Reading {
  /** An answer for every call but the directives that run (their results come from the round). */
  readonly results: ReadonlyArray<LanguageModel.ToolResultMessage>
  readonly directives: ReadonlyArray<Directive>
  /** The decode errors of the directives that could not be read. */
  readonly rejectedDirectives: ReadonlyArray<string>
  /** Calls that could not be used, for the event stream. */
  readonly rejected: ReadonlyArray<{ readonly tool: string; readonly error: string }>
  readonly reflections: ReadonlyArray<string>
  readonly completes: boolean
}

/** Decodes a turn's calls; what does not decode is answered with the reason, never run. */
export const read = (calls: ReadonlyArray<LanguageModel.ToolCall>): Reading => {
  const results: Array<LanguageModel.ToolResultMessage> = []
  const directives: Array<Directive> = []
  const rejectedDirectives: Array<string> = []
  const rejected: Array<{ readonly tool: string; readonly error: string }> = []
  const reflections: Array<string> = []
  const reject = (call: LanguageModel.ToolCall, error: string) => {
    results.push(LanguageModel.toolResult(call, error, true))
    rejected.push({ tool: call.name, error })
  }
  for (const call of calls) {
    if (call.name === think.name) {
      const decoded = Tool.decodeArguments(think, call.arguments)
      if (Either.isLeft(decoded)) reject(call, decoded.left)
      else {
        reflections.push(decoded.right.reflection)
        results.push(LanguageModel.toolResult(call, Prompt.thought))
      }
    } else if (call.name === conductResearch.name) {
      const decoded = Tool.decodeArguments(conductResearch, call.arguments)
      if (Either.isRight(decoded)) directives.push(decoded.right)
      else {
        rejectedDirectives.push(decoded.left)
        reject(call, Prompt.directiveInvalid(decoded.left))
      }
    } else if (call.name === ActionProtocol.invalidActionsTool) {
      const error = Tool.decodeArguments(invalidActions, call.arguments)
      reject(call, Either.isRight(error) ? error.right.error : "Unreadable actions.")
    } else if (call.name === researchComplete.name) {
      // Every call of a turn is answered; this one matters only when the turn goes back to the model.
      results.push(LanguageModel.toolResult(call, Prompt.completeDeferred))
    } else {
      reject(call, `There is no tool named ${call.name}. Use think, conductResearch or researchComplete.`)
    }
  }
  const completes = calls.some((c) => c.name === researchComplete.name)
  return { results, directives, rejectedDirectives, rejected, reflections, completes }
}

const byPriority = (a: Directive, b: Directive) => a.priority - b.priority

/**
 * A new round of the directives read: higher priority first (the sort is stable, so the model's order breaks ties),
 * at most `maxDirectivesPerRound`; the rest waits for a later round.
 */
export const newRound = (
  number: number,
  directives: ReadonlyArray<Directive>,
  reflections: ReadonlyArray<string>,
  maxDirectivesPerRound: number
): SupervisionRound => {
  const ordered = [...directives].sort(byPriority)
  const reflection = reflections.join("\n\n").trim()
  // Not validated again: the directives were decoded from the model's calls and the round number is a count.
  return new SupervisionRound(
    {
      round: number,
      ...(reflection !== "" ? { reflection } : {}),
      directives: ordered
        .slice(0, maxDirectivesPerRound)
        .map((directive, i) => new IssuedDirective({ id: `r${number}-d${i + 1}`, round: number, directive }, true)),
      results: [],
      deferred: ordered.slice(maxDirectivesPerRound),
      completed: false
    },
    true
  )
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
      const known = new Set(s.sources.map((source) => source.id))
      return patch(s, {
        rounds: s.rounds.map((r) => {
          if (r.round !== round) return r
          const results = [...r.results.filter((x) => x.directiveId !== output.result.directiveId), output.result]
          const completed = r.directives.every((d) => results.some((x) => x.directiveId === d.id))
          // A saved round's parts and a unit's result: not validated again.
          return new SupervisionRound({ ...r, results, completed }, true)
        }),
        sources: [...s.sources, ...output.sources.filter((source) => !known.has(source.id))]
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

/** What every round of a supervision uses. */
interface Environment<R> {
  readonly task: Task
  readonly options: Options<R>
  readonly remainingMillis: Effect.Effect<number>
  /** Checked by every researcher before each of its calls: research stops cleanly, keeping what it found. */
  readonly shouldStop: Effect.Effect<boolean>
}

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
// Supervision
// =============================================================================

/** The turns since the last round: what goes back to the model, and what was held over. */
interface Between {
  readonly live: ReadonlyArray<LanguageModel.Message>
  readonly reflections: ReadonlyArray<string>
  readonly turnsWithoutDelegation: number
  readonly rejectedTurns: number
}

const fresh: Between = { live: [], reflections: [], turnsWithoutDelegation: 0, rejectedTurns: 0 }

/** Runs supervision from wherever the session stands. */
export const run = <R>(task: Task, options: Options<R>) =>
  Effect.gen(function* () {
    const { budget, session } = options
    const { config } = task
    const maxRounds = config.maxSupervisionRounds
    const limitMillis = Duration.toMillis(config.maxResearchDuration)
    // A model without native tool calling gets the same tools through the JSON action protocol.
    const model = ActionProtocol.wrap(yield* ModelRouter.forRole("supervisor"))
    const system = Prompt.system(yield* today, {
      maxRounds,
      maxDirectivesPerRound: config.maxDirectivesPerRound,
      maxConcurrentResearchUnits: config.maxConcurrentResearchUnits
    })
    const remainingMillis = Effect.map(session.elapsedIn("supervision"), (elapsed) => limitMillis - elapsed)
    const timeUp = Effect.map(remainingMillis, (remaining) => remaining <= 0)
    const env: Environment<R> = {
      task,
      options,
      remainingMillis,
      shouldStop: Effect.flatMap(budget.researchExhausted, (exhausted) => (exhausted ? Effect.succeed(true) : timeUp))
    }
    const stop = (reason: StopReason, error?: ProviderError | MalformedOutput) =>
      Effect.gen(function* () {
        const rounds = (yield* session.get).rounds.length
        yield* ResearchEvents.publish({ _tag: "SupervisionStopped", reason, rounds })
        return { reason, error } satisfies Outcome
      })

    // A round interrupted midway (a crash, a kill) finishes first, re-running only its unfinished directives.
    const interrupted = (yield* session.get).rounds.find((r) => !r.completed)
    if (interrupted !== undefined) yield* runRound(env, interrupted)

    let between = fresh
    while (true) {
      const current = yield* session.get
      if (current.rounds.length >= maxRounds) return yield* stop("max_rounds")
      if (yield* timeUp) return yield* stop("time_limit")
      const request: LanguageModel.GenerateRequest = {
        system,
        messages: [...history(current, task, maxRounds), ...between.live],
        tools,
        toolChoice: "auto"
      }
      if (yield* budget.researchExhausted) return yield* stop("budget")

      // The call is reserved against the budget before it is sent; one the budget cannot cover ends research.
      const completion = yield* Effect.either(ContextRecovery.generateConversation(model, request))
      if (Either.isLeft(completion) && completion.left._tag === "BudgetExhausted") return yield* stop("budget")
      if (Either.isLeft(completion)) {
        yield* Effect.logWarning("the supervisor model failed; research stops with what it has", completion.left)
        return yield* stop("supervisor_failed", completion.left)
      }
      const { text, toolCalls } = completion.right
      if (toolCalls.length === 0) {
        // A model that answers in prose before any research was delegated (weak tool callers do) is reminded once
        // of its tools; after research has run, a turn without tools means it is done.
        if (current.rounds.length > 0 || between.turnsWithoutDelegation > 0) return yield* stop("no_tool_call")
        between = {
          ...between,
          turnsWithoutDelegation: between.turnsWithoutDelegation + 1,
          live: [...between.live, LanguageModel.assistant(text, []), LanguageModel.user(Prompt.nudge)]
        }
        continue
      }

      const reading = read(toolCalls)
      for (const { tool, error } of reading.rejected) {
        yield* ResearchEvents.publish({
          _tag: "ToolCallRejected",
          unit: "supervisor",
          tool,
          error: error.slice(0, 2_000)
        })
      }
      const back = {
        ...between,
        reflections: [...between.reflections, ...reading.reflections],
        turnsWithoutDelegation: between.turnsWithoutDelegation + 1,
        live: [...between.live, LanguageModel.assistant(text, toolCalls), ...reading.results]
      }
      if (reading.directives.length === 0) {
        // Directives the supervisor means but cannot write in a readable form, turn after turn, before anything was
        // researched: a report on nothing would read as a success, so supervision fails and says why.
        if (reading.rejectedDirectives.length > 0 && current.rounds.length === 0) {
          const rejectedTurns = between.rejectedTurns + 1
          if (rejectedTurns >= maxRejectedTurns) {
            const reason =
              `every conductResearch call of the supervisor's first ${rejectedTurns} turns was rejected; ` +
              `the last: ${reading.rejectedDirectives.at(-1) ?? ""}`
            const raw = JSON.stringify(toolCalls).slice(0, 4_000)
            return yield* stop("supervisor_failed", new MalformedOutput({ reason, raw }))
          }
          between = { ...back, rejectedTurns }
          continue
        }
        if (reading.completes) return yield* stop("research_complete")
        if (back.turnsWithoutDelegation >= maxTurnsWithoutDelegation) return yield* stop("no_directives")
        between = back
        continue
      }

      const reflections = [...between.reflections, ...reading.reflections]
      yield* delegate(
        env,
        newRound(current.rounds.length + 1, reading.directives, reflections, config.maxDirectivesPerRound)
      )
      between = fresh
      // Directives given together with researchComplete are run first: the model asked for them.
      if (reading.completes) return yield* stop("research_complete")
    }
  }).pipe(Effect.withSpan("Supervisor.run"))
