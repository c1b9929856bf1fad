/**
 * The researcher: a ReAct agent for one directive. Each turn is one call to the `researcher` model, which may ask for
 * several tools at once: `webSearch`, `extractContent`, `think` and `researchComplete`. Thinking is carried out
 * before the other calls of its turn; searches and extractions spend a budget that the model sees every turn. Results
 * are deduplicated against everything the session already holds, summarised at fetch time and shown numbered, with
 * a novelty tag. The loop stops on `researchComplete`, on a turn without tool calls, when the budget or the turn limit
 * is reached, or when the run asks it to stop; a failing model call ends it with what was gathered so far.
 *
 * The loop below runs over an explicit `State`; the steps of a turn live in `internal/research/researcherTurn.ts`
 * and the numbered sources in `internal/research/sourceLedger.ts`.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import * as ContentExtractor from "../ContentExtractor.js"
import * as ContextRecovery from "../ContextRecovery.js"
import { dateOf } from "../internal/text/calendar.js"
import * as Turn from "../internal/research/researcherTurn.js"
import * as Ledger from "../internal/research/sourceLedger.js"
import * as LanguageModel from "../LanguageModel.js"
import { ModelRouter } from "../ModelRouter.js"
import * as Novelty from "../Novelty.js"
import * as Prompt from "../prompts/researcher.js"
import type { StopReason } from "../Research.js"
import type { ResearchConfig } from "../ResearchConfig.js"
import * as ResearchEvents from "../ResearchEvents.js"
import * as SearchProvider from "../SearchProvider.js"
import type { Source } from "../Source.js"
import * as Summarizer from "../Summarizer.js"
import * as Tool from "../Tool.js"
import * as Usage from "../Usage.js"
import * as ActionProtocol from "./ActionProtocol.js"
import type { Input as UnitInput } from "../internal/research/unitInput.js"

// =============================================================================
// Tools
// =============================================================================

const Url = Schema.String.pipe(Schema.pattern(/^https?:\/\/\S+$/i, { message: () => "an http(s) URL" })).annotations({
  description: "An http or https URL"
})

const Query = Schema.String.pipe(Schema.minLength(1, { message: () => "a non-empty search query" }))

/**
 * The researcher's tools, sized by the configuration. Made once for each pair of sizes and shared: making them (their
 * Schemas and JSON schemas) for every research unit made the same ones again and again. Treat them as read-only.
 */
export const makeTools = (config: Pick<ResearchConfig, "maxQueriesPerSearch" | "maxUrlsPerExtract">): Tools => {
  const key = `${config.maxQueriesPerSearch}:${config.maxUrlsPerExtract}`
  const known = toolsBySize.get(key)
  if (known !== undefined) return known
  const made = buildTools(config)
  // A process sees few configurations; a bound keeps one that sees many (a sweep of settings) from growing.
  if (toolsBySize.size >= 64) toolsBySize.clear()
  toolsBySize.set(key, made)
  return made
}

const toolsBySize = new Map<string, Tools>()

const buildTools = (config: Pick<ResearchConfig, "maxQueriesPerSearch" | "maxUrlsPerExtract">): Tools => ({
  webSearch: Tool.make("webSearch", {
    description:
      `Searches the web for 1 to ${config.maxQueriesPerSearch} queries at once. Results come back summarised, ` +
      "numbered [n] and tagged NEW, RELATED or DUPLICATE. Counts as one call of your budget.",
    schema: Schema.Struct({
      queries: Schema.Array(Query)
        .pipe(
          Schema.minItems(1, { message: () => "give at least 1 query" }),
          Schema.maxItems(config.maxQueriesPerSearch, {
            message: () => `give at most ${config.maxQueriesPerSearch} queries in one call`
          })
        )
        .annotations({ description: "Distinct, specific search queries" })
    })
  }),
  extractContent: Tool.make("extractContent", {
    description:
      `Reads 1 to ${config.maxUrlsPerExtract} web pages in full and returns their summaries. Counts as one call ` +
      "of your budget.",
    schema: Schema.Struct({
      urls: Schema.Array(Url)
        .pipe(
          Schema.minItems(1, { message: () => "give at least 1 URL" }),
          Schema.maxItems(config.maxUrlsPerExtract, {
            message: () => `give at most ${config.maxUrlsPerExtract} URLs in one call`
          })
        )
        .annotations({ description: "URLs of pages to read" })
    })
  }),
  think: Tool.make("think", {
    description:
      "Records a reflection: what you learned, what is missing, what to do next. Free, and carried out before " +
      "your other calls of the same turn.",
    schema: Schema.Struct({ reflection: Schema.String.annotations({ description: "Your reflection" }) })
  }),
  researchComplete: Tool.make("researchComplete", {
    description:
      "Ends your research. Free. The summary states your findings with [n] citations. May go in the same turn as " +
      "your last webSearch or extractContent: what they return still goes into your findings.",
    schema: Schema.Struct({
      summary: Schema.String.annotations({ description: "Your findings, citing sources as [n]" })
    })
  })
})

/** The researcher's tools. */
export type Tools = Turn.Tools

// =============================================================================
// Input and output
// =============================================================================

/** What a researcher works from: its unit's input. */
export type Input = UnitInput

/** A source as the researcher saw it, under its number. */
export type SeenSource = Ledger.SeenSource

/** What a researcher produced. */
export interface Output {
  readonly stopReason: StopReason
  readonly turns: number
  /** Search and extract calls made (the budgeted ones). */
  readonly toolCalls: number
  /** Of those, the calls that failed as a whole. */
  readonly failedToolCalls: number
  /** Every source the researcher was shown, in number order. */
  readonly seen: ReadonlyArray<SeenSource>
  /** The sources this unit found for the first time in the session. */
  readonly newSources: ReadonlyArray<Source>
  /** The summary given with `researchComplete`. */
  readonly summary: string | undefined
  /** The model's text when it stopped without a tool call. */
  readonly closingText: string | undefined
  readonly reflections: ReadonlyArray<string>
  readonly usage: Usage.Usage
  /** Why the loop failed, when it did; what was gathered before is kept. */
  readonly error: string | undefined
}

// =============================================================================
// State
// =============================================================================

/** Where a researcher stands between turns. */
export interface State {
  readonly messages: ReadonlyArray<LanguageModel.Message>
  readonly turns: number
  /** Budgeted calls made so far. */
  readonly used: number
  /** Of those, the calls that failed as a whole. */
  readonly failed: number
  readonly usage: Usage.Usage
  readonly reflections: ReadonlyArray<string>
  readonly summary: string | undefined
  readonly closingText: string | undefined
  readonly error: string | undefined
  /** Set when the loop is over. */
  readonly stopReason: StopReason | undefined
}

/** What every turn of a unit uses. */
interface Environment {
  readonly input: Input
  readonly model: LanguageModel.Service
  readonly tools: Tools
  readonly definitions: ReadonlyArray<Tool.ToolDefinition>
  readonly system: string
  readonly ledger: Ledger.Ledger
  readonly search: SearchProvider.Service
  readonly extractor: ContentExtractor.Service
  readonly summarizer: Summarizer.Service
}

/** The state before the first turn: the task alone. */
export const initial = (task: string): State => ({
  messages: [LanguageModel.user(task)],
  turns: 0,
  used: 0,
  failed: 0,
  usage: Usage.empty,
  reflections: [],
  summary: undefined,
  closingText: undefined,
  error: undefined,
  stopReason: undefined
})

/** Why the loop must stop before another turn, if it must: the turn limit or the budget. */
export const limitReached = (state: State, config: ResearchConfig): StopReason | undefined =>
  state.turns >= config.researcherMaxTurns
    ? "max_turns"
    : state.used >= config.researcherMaxToolCalls
      ? "budget"
      : undefined

/**
 * The conversation as the model sees it this turn: the budget note joined to a trailing user message, so that turns
 * keep alternating for vendors that require it.
 */
export const withStatus = (state: State, config: ResearchConfig): ReadonlyArray<LanguageModel.Message> => {
  const note = Prompt.status({
    turn: state.turns,
    remaining: config.researcherMaxToolCalls - state.used,
    total: config.researcherMaxToolCalls
  })
  const last = state.messages[state.messages.length - 1]
  return last !== undefined && last._tag === "user"
    ? [...state.messages.slice(0, -1), LanguageModel.user(`${last.content}\n\n${note}`)]
    : [...state.messages, LanguageModel.user(note)]
}

// =============================================================================
// A turn
// =============================================================================

const publishNotice = (directiveId: string, notice: Turn.Notice) =>
  notice._tag === "Called"
    ? ResearchEvents.publish({
        _tag: "ToolCalled",
        directiveId,
        tool: notice.tool,
        detail: notice.detail.slice(0, 500)
      })
    : ResearchEvents.publish({
        _tag: "ToolCallRejected",
        unit: directiveId,
        tool: notice.tool,
        error: notice.error.slice(0, 2_000)
      })

/** Carries out one turn's calls: plan, fetch, place, summarise what is new, and answer every call. */
const execute = Effect.fnUntraced(function* (
  env: Environment,
  calls: ReadonlyArray<LanguageModel.ToolCall>,
  used: number
) {
  const { directive } = env.input
  const { config } = env.input.task
  const planned = Turn.plan(calls, env.tools, { used, max: config.researcherMaxToolCalls })
  for (const notice of planned.notices) yield* publishNotice(directive.id, notice)
  const fetched = yield* Turn.fetchAll(planned.plans, { search: env.search, extractor: env.extractor }, config)
  env.ledger.fetchedAt(yield* Clock.currentTimeMillis)
  const { pending, placed } = Turn.place(planned.plans, fetched, env.ledger, env.extractor.name)
  // Summaries are model calls too: when the run is out of budget the raw texts stand instead.
  const stopping = pending.length > 0 && (yield* env.input.shouldStop)
  const summaries: ReadonlyArray<Ledger.Summarised> = stopping
    ? pending.map((item) => ({ content: item.raw.slice(0, config.summarizationInputCap), summary: undefined }))
    : yield* Turn.summarizeAll(pending, env.summarizer, config)
  for (const entry of env.ledger.settle(pending, summaries)) {
    yield* ResearchEvents.publish({
      _tag: "SourceFound",
      directiveId: directive.id,
      sourceId: entry.id,
      url: entry.url,
      title: entry.title,
      novelty: entry.novelty
    })
  }
  const failed = placed.filter((call, i) => call.failed && planned.plans[i]?._tag !== "Answer").length
  return { planned, failed, results: Turn.results(planned.plans, placed, env.ledger) }
})

/** One turn: a model call, then its tool calls carried out; the state after it. */
const step = Effect.fnUntraced(function* (env: Environment, state: State) {
  const { directive } = env.input
  const { config } = env.input.task
  const limit = limitReached(state, config)
  if (limit !== undefined) return { ...state, stopReason: limit }
  if (yield* env.input.shouldStop) return { ...state, stopReason: "run_budget" as const }
  const turns = state.turns + 1
  const completion = yield* Effect.either(
    ContextRecovery.generateConversation(env.model, {
      system: env.system,
      messages: withStatus({ ...state, turns }, config),
      tools: env.definitions,
      toolChoice: "auto"
    })
  )
  // A turn the run's budget cannot cover ends the loop as the run's budget, with what was gathered.
  if (Either.isLeft(completion) && completion.left._tag === "ResearchBudgetExhausted") {
    return { ...state, stopReason: "run_budget" as const }
  }
  if (Either.isLeft(completion)) {
    return { ...state, turns, error: Turn.errorMessage(completion.left), stopReason: "failed" as const }
  }
  const { text, toolCalls } = completion.right
  const answered: State = {
    ...state,
    turns,
    usage: Usage.add(state.usage, completion.right.usage),
    messages: [...state.messages, LanguageModel.assistant(text, toolCalls)]
  }
  const next: State =
    toolCalls.length === 0
      ? { ...answered, closingText: text.trim() === "" ? undefined : text.trim(), stopReason: "no_tool_call" }
      : yield* Effect.map(execute(env, toolCalls, state.used), ({ failed, planned, results }) => ({
          ...answered,
          messages: [...answered.messages, ...results],
          used: state.used + planned.spent,
          failed: state.failed + failed,
          reflections: [...state.reflections, ...planned.reflections],
          summary: planned.summary ?? state.summary,
          stopReason: planned.completed ? ("complete" as const) : undefined
        }))
  yield* ResearchEvents.publish({
    _tag: "ResearcherTurn",
    directiveId: directive.id,
    turn: turns,
    toolCalls: toolCalls.map((call) => call.name),
    remainingToolCalls: config.researcherMaxToolCalls - next.used
  })
  return next
})

// =============================================================================
// The loop
// =============================================================================

const environment = Effect.fnUntraced(function* (input: Input, now: number) {
  const { directive, task } = input
  const { config } = task
  const tools = makeTools(config)
  const env: Environment = {
    input,
    // A model without native tool calling gets the same tools through the JSON action protocol.
    model: ActionProtocol.wrap((yield* ModelRouter).forRole("researcher")),
    tools,
    definitions: [tools.webSearch, tools.extractContent, tools.think, tools.researchComplete].map((t) => t.definition),
    system: Prompt.system(config, dateOf(now)),
    ledger: Ledger.make({
      directiveId: directive.id,
      knownSources: input.knownSources,
      novelty: Novelty.optionsFromConfig(config),
      now
    }),
    search: yield* SearchProvider.SearchProvider,
    extractor: yield* ContentExtractor.ContentExtractor,
    summarizer: yield* Summarizer.Summarizer
  }
  // The library's sources (a run with `library`) are numbered first and shown with the assignment, before any search.
  const library = env.ledger.preload(task.library)
  const assignment = Prompt.task(task, directive.directive)
  return { env, task: library.length === 0 ? assignment : Prompt.withLibrary(assignment, env.ledger.render(library)) }
})

/** Runs a researcher on its directive. Never fails: a failure ends the loop with `stopReason` "failed". */
export const run = Effect.fn("Researcher.run")(function* (input: Input) {
  const { env, task } = yield* environment(input, yield* Clock.currentTimeMillis)
  let state = initial(task)
  while (state.stopReason === undefined) state = yield* step(env, state)
  const seen = env.ledger.seen()
  const output: Output = {
    stopReason: state.stopReason,
    turns: state.turns,
    toolCalls: state.used,
    failedToolCalls: state.failed,
    seen,
    newSources: seen.filter((s) => s.isNew).map((s) => s.source),
    summary: state.summary,
    closingText: state.closingText,
    reflections: state.reflections,
    usage: state.usage,
    error: state.error
  }
  return output
})
