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
import { domainOf } from "../internal/sourceQuality.js"
import type { ProviderError } from "../Errors.js"
import * as LanguageModel from "../LanguageModel.js"
import * as ModelRouter from "../ModelRouter.js"
import * as Prompt from "../prompts/supervisor.js"
import { type Brief, Directive, IssuedDirective, SupervisionRound, type TopicResult } from "../Research.js"
import type { ResearchConfig } from "../ResearchConfig.js"
import * as ResearchEvents from "../ResearchEvents.js"
import type { Session } from "../Session.js"
import type { Source } from "../Source.js"
import * as Tokens from "../Tokens.js"
import * as Tool from "../Tool.js"
import * as ActionProtocol from "./ActionProtocol.js"
import { type Handle, patch } from "./Checkpoint.js"
import { today } from "./Clarify.js"

// =============================================================================
// Research units
// =============================================================================

/** What a research unit is given (the contract of `ResearchUnit.run`). */
export interface UnitInput {
  /** The directive, with its id and round. */
  readonly directive: IssuedDirective
  /** The user's question. */
  readonly query: string
  readonly brief: Brief | undefined
  readonly config: ResearchConfig
  /** Sources of earlier rounds: compared against for novelty and dedup, never added again. */
  readonly knownSources: ReadonlyArray<Source>
  /** Checked before each model call; true stops the unit cleanly (stopReason "run_budget"). */
  readonly shouldStop: Effect.Effect<boolean>
}

/** What a research unit returns. */
export interface UnitOutput {
  readonly result: TopicResult
  readonly sources: ReadonlyArray<Source>
}

/** Runs one research unit; never fails (a failure is a `TopicResult` with status "failed"). */
export type UnitRunner<R> = (input: UnitInput) => Effect.Effect<UnitOutput, never, R>

// =============================================================================
// Tools
// =============================================================================

/** The supervisor's reflection tool. */
export const think = Tool.make("think", {
  description:
    "Think before delegating and after each round: what is known, what is missing, what the next directives " +
    "should settle. Has no other effect.",
  schema: Schema.Struct({ reflection: Schema.String })
})

/** Delegates one research directive to one researcher. */
export const conductResearch = Tool.make("conductResearch", {
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
  /** The supervisor model's error, when it failed. */
  readonly error?: ProviderError | undefined
}

/** What supervision needs. */
export interface Options<R> {
  readonly query: string
  readonly brief: Brief | undefined
  readonly constraints: string | undefined
  readonly config: ResearchConfig
  readonly session: Handle
  readonly budget: Budget.Service
  readonly runUnit: UnitRunner<R>
}

/** Think-only turns in a row after which the supervisor is taken to have nothing to delegate. */
export const maxTurnsWithoutDelegation = 3

/** How long running units may overrun the wall-clock limit before they are interrupted. */
export const overrunGrace = Duration.minutes(1)

// =============================================================================
// Evidence inventory and history
// =============================================================================

const qualityCounts = (sources: ReadonlyArray<Source>): string => {
  const count = (q: Source["quality"]) => sources.filter((s) => s.quality === q).length
  return `quality high ${count("high")}, medium ${count("medium")}, low ${count("low")}, unknown ${count("unknown")}`
}

const sourcesOf = (session: Session, directive: IssuedDirective, result: TopicResult | undefined) => {
  const found = session.sources.filter((s) => s.directiveId === directive.id)
  if (found.length > 0 || result === undefined) return found
  const ids = new Set(result.sourceIds)
  return session.sources.filter((s) => ids.has(s.id))
}

/** The evidence inventory over the rounds up to `uptoRound`: sources, domains and quality per topic and in total. */
export const inventory = (session: Session, uptoRound: number): string => {
  const lines: Array<string> = []
  const all: Array<Source> = []
  for (const round of session.rounds) {
    if (round.round > uptoRound) continue
    for (const directive of round.directives) {
      const result = round.results.find((r) => r.directiveId === directive.id)
      const topic = directive.directive.topic.replace(/\s+/g, " ").slice(0, 90)
      if (result === undefined) {
        lines.push(`- [${directive.id}] ${topic}: did not finish`)
        continue
      }
      if (result.status === "failed") {
        lines.push(`- [${directive.id}] ${topic}: failed, no evidence`)
        continue
      }
      const sources = sourcesOf(session, directive, result)
      all.push(...sources)
      const domains = [...new Set(sources.map((s) => domainOf(s.url)))]
      lines.push(
        `- [${directive.id}] ${topic}: ${sources.length} sources from ${domains.length} domains` +
          (domains.length > 0 ? ` (${domains.slice(0, 6).join(", ")}${domains.length > 6 ? ", …" : ""})` : "") +
          `; ${qualityCounts(sources)}; stopped: ${result.stopReason}`
      )
    }
  }
  const unique = [...new Map(all.map((s) => [s.id, s] as const)).values()]
  const domains = new Set(unique.map((s) => domainOf(s.url)))
  lines.push(`Total: ${unique.length} sources from ${domains.size} domains; ${qualityCounts(unique)}.`)
  return lines.join("\n")
}

const encodeDirective = Schema.encodeSync(Directive)

/** The supervisor's conversation, rebuilt from the session's rounds. */
export const history = (
  session: Session,
  task: Prompt.Task,
  maxRounds: number
): ReadonlyArray<LanguageModel.Message> => {
  const messages: Array<LanguageModel.Message> = [LanguageModel.user(Prompt.task(task))]
  for (const round of session.rounds) {
    const thinkCall =
      round.reflection === undefined
        ? []
        : [
            new LanguageModel.ToolCall({
              id: `r${round.round}-think`,
              name: think.name,
              arguments: { reflection: round.reflection }
            })
          ]
    const calls = round.directives.map(
      (d) =>
        new LanguageModel.ToolCall({ id: d.id, name: conductResearch.name, arguments: encodeDirective(d.directive) })
    )
    if (thinkCall.length + calls.length === 0) continue
    messages.push(LanguageModel.assistant("", [...thinkCall, ...calls]))
    for (const call of thinkCall) messages.push(LanguageModel.toolResult(call, "Reflection recorded."))
    for (const [i, d] of round.directives.entries()) {
      const call = calls[i]
      if (call === undefined) continue
      const result = round.results.find((r) => r.directiveId === d.id)
      const content =
        result === undefined
          ? Prompt.directiveUnfinished(d.directive)
          : result.status === "failed"
            ? Prompt.directiveFailed(d.directive)
            : Prompt.directiveReport(
                d.directive,
                result.supervisorSummary.trim() === "" ? result.findings.slice(0, 1_500) : result.supervisorSummary,
                sourcesOf(session, d, result).length
              )
      messages.push(LanguageModel.toolResult(call, content, result === undefined || result.status === "failed"))
    }
    messages.push(
      LanguageModel.user(
        Prompt.afterRound({
          round: round.round,
          maxRounds,
          inventory: inventory(session, round.round),
          deferred: round.deferred
        })
      )
    )
  }
  return messages
}

// =============================================================================
// Supervision
// =============================================================================

const byPriority = (a: Directive, b: Directive) => a.priority - b.priority

/** Runs supervision from wherever the session stands. */
export const run = <R>(options: Options<R>) =>
  Effect.gen(function* () {
    const { budget, config, session } = options
    const maxRounds = config.maxSupervisionRounds
    const limitMillis = Duration.toMillis(config.maxResearchDuration)
    const task: Prompt.Task = { query: options.query, brief: options.brief, constraints: options.constraints }
    // A model without native tool calling gets the same tools through the JSON action protocol.
    const model = ActionProtocol.wrap(yield* ModelRouter.forRole("supervisor"))
    const date = yield* today
    const system = Prompt.system(date, {
      maxRounds,
      maxDirectivesPerRound: config.maxDirectivesPerRound,
      maxConcurrentResearchUnits: config.maxConcurrentResearchUnits
    })

    const remainingMillis = Effect.map(session.elapsedIn("supervision"), (elapsed) => limitMillis - elapsed)
    const timeUp = Effect.map(remainingMillis, (remaining) => remaining <= 0)
    // Checked by every researcher before each of its calls: research stops cleanly, keeping what it found.
    const shouldStop = Effect.flatMap(budget.researchExhausted(), (exhausted) =>
      exhausted ? Effect.succeed(true) : timeUp
    )

    const roundCompleted = (saved: Session, round: number): boolean =>
      saved.rounds.some((r) => r.round === round && r.completed)

    // A unit's result is saved as it arrives; the round's last result completes the round in the same checkpoint.
    const recordResult = (round: number, output: UnitOutput) => {
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
              return new SupervisionRound({ ...r, results, completed })
            }),
            sources: [...s.sources, ...output.sources.filter((source) => !known.has(source.id))]
          })
        }
      )
    }

    const runRound = (round: SupervisionRound) =>
      Effect.gen(function* () {
        const current = yield* session.get
        const finished = new Set(round.results.map((r) => r.directiveId))
        const pending = round.directives.filter((d) => !finished.has(d.id))
        const earlier = new Set(
          current.rounds.filter((r) => r.round < round.round).flatMap((r) => r.directives.map((d) => d.id))
        )
        const knownSources = current.sources.filter((s) => s.directiveId !== undefined && earlier.has(s.directiveId))
        const units = Effect.forEach(
          pending,
          (directive) =>
            Effect.flatMap(
              options.runUnit({
                directive,
                query: options.query,
                brief: options.brief,
                config,
                knownSources,
                shouldStop
              }),
              // The unit publishes its own completion or failure; the supervisor keeps the result.
              (output) => recordResult(round.round, output)
            ),
          { concurrency: config.maxConcurrentResearchUnits, discard: true }
        )
        // Researchers stop by themselves at the limit (they check `shouldStop`); units still running a grace period
        // later are interrupted, and what the others found is kept.
        const remaining = yield* remainingMillis
        yield* units.pipe(
          Effect.timeoutOption(Duration.sum(Duration.millis(Math.max(0, remaining)), overrunGrace)),
          Effect.tap((finishedInTime) =>
            Option.isNone(finishedInTime)
              ? Effect.logWarning(`round ${round.round}: research units overran the time limit and were stopped`)
              : Effect.void
          )
        )
        // Units stopped at the time limit leave the round without all its results: it is completed here.
        const saved = yield* session.get
        const done = roundCompleted(saved, round.round)
          ? saved
          : yield* session.update(`round ${round.round} completed`, (s) =>
              patch(s, {
                rounds: s.rounds.map((r) =>
                  r.round === round.round ? new SupervisionRound({ ...r, completed: true }) : r
                )
              })
            )
        const results = done.rounds.find((r) => r.round === round.round)?.results ?? []
        yield* ResearchEvents.publish({
          _tag: "RoundCompleted",
          round: round.round,
          completed: results.filter((r) => r.status === "completed").length,
          failed: results.filter((r) => r.status === "failed").length
        })
      })

    const stop = (reason: StopReason, error?: ProviderError) =>
      Effect.gen(function* () {
        const rounds = (yield* session.get).rounds.length
        yield* ResearchEvents.publish({ _tag: "SupervisionStopped", reason, rounds })
        return { reason, error } satisfies Outcome
      })

    // A round interrupted midway (a crash, a kill) finishes first, re-running only its unfinished directives.
    const interrupted = (yield* session.get).rounds.find((r) => !r.completed)
    if (interrupted !== undefined) yield* runRound(interrupted)

    let live: Array<LanguageModel.Message> = []
    let reflections: Array<string> = []
    let turnsWithoutDelegation = 0
    while (true) {
      const current = yield* session.get
      if (current.rounds.length >= maxRounds) return yield* stop("max_rounds")
      if (yield* timeUp) return yield* stop("time_limit")
      const request: LanguageModel.GenerateRequest = {
        system,
        messages: [...history(current, task, maxRounds), ...live],
        tools,
        toolChoice: "auto"
      }
      const exhausted = yield* budget.researchExhausted({
        model: model.model,
        inputTokens: Tokens.estimateRequestTokens(request)
      })
      if (exhausted) return yield* stop("budget")

      const completion = yield* Effect.either(ContextRecovery.generateConversation(model, request))
      if (Either.isLeft(completion)) {
        yield* Effect.logWarning("the supervisor model failed; research stops with what it has", completion.left)
        return yield* stop("supervisor_failed", completion.left)
      }
      const calls = completion.right.toolCalls
      if (calls.length === 0) {
        // A model that answers in prose before any research was delegated (weak tool callers do) is reminded once
        // of its tools; after research has run, a turn without tools means it is done.
        if (current.rounds.length > 0 || turnsWithoutDelegation > 0) return yield* stop("no_tool_call")
        turnsWithoutDelegation++
        live = [...live, LanguageModel.assistant(completion.right.text, []), LanguageModel.user(Prompt.nudge)]
        continue
      }
      const completes = calls.some((c) => c.name === researchComplete.name)

      const results: Array<LanguageModel.ToolResultMessage> = []
      const directives: Array<Directive> = []
      for (const call of calls) {
        if (call.name === think.name) {
          const decoded = Tool.decodeArguments(think, call.arguments)
          if (Either.isRight(decoded)) reflections.push(decoded.right.reflection)
          results.push(LanguageModel.toolResult(call, Prompt.thought))
        } else if (call.name === conductResearch.name) {
          const decoded = Tool.decodeArguments(conductResearch, call.arguments)
          if (Either.isRight(decoded)) directives.push(decoded.right)
          else results.push(LanguageModel.toolResult(call, Prompt.directiveInvalid(decoded.left), true))
        } else if (call.name === ActionProtocol.invalidActionsTool) {
          const error = Tool.decodeArguments(invalidActions, call.arguments)
          results.push(
            LanguageModel.toolResult(call, Either.isRight(error) ? error.right.error : "Unreadable actions.", true)
          )
        } else {
          results.push(
            LanguageModel.toolResult(
              call,
              `There is no tool named ${call.name}. Use think, conductResearch or researchComplete.`,
              true
            )
          )
        }
      }

      if (directives.length === 0) {
        if (completes) return yield* stop("research_complete")
        turnsWithoutDelegation++
        if (turnsWithoutDelegation >= maxTurnsWithoutDelegation) return yield* stop("no_directives")
        live = [...live, LanguageModel.assistant(completion.right.text, calls), ...results]
        continue
      }

      // Higher priority first (the sort is stable, so the model's order breaks ties); the rest waits for a later round.
      const ordered = [...directives].sort(byPriority)
      const chosen = ordered.slice(0, config.maxDirectivesPerRound)
      const deferred = ordered.slice(config.maxDirectivesPerRound)
      const roundNumber = current.rounds.length + 1
      const issued = chosen.map(
        (directive, i) => new IssuedDirective({ id: `r${roundNumber}-d${i + 1}`, round: roundNumber, directive })
      )
      const reflection = reflections.join("\n\n").trim()
      const round = new SupervisionRound({
        round: roundNumber,
        ...(reflection !== "" ? { reflection } : {}),
        directives: issued,
        results: [],
        deferred,
        completed: false
      })
      yield* session.update(`round ${roundNumber} delegated`, (s) => patch(s, { rounds: [...s.rounds, round] }))
      yield* ResearchEvents.publish({ _tag: "RoundStarted", round: roundNumber })
      for (const d of issued) {
        yield* ResearchEvents.publish({
          _tag: "DirectiveIssued",
          round: roundNumber,
          directiveId: d.id,
          topic: d.directive.topic,
          priority: d.directive.priority
        })
      }
      live = []
      reflections = []
      turnsWithoutDelegation = 0
      yield* runRound(round)
      // Directives given together with researchComplete are run first: the model asked for them.
      if (completes) return yield* stop("research_complete")
    }
  }).pipe(Effect.withSpan("Supervisor.run"))
