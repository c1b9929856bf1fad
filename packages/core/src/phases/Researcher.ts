/**
 * The researcher: a ReAct agent for one directive. Each turn is one call to the `researcher` model, which may ask for
 * several tools at once: `webSearch`, `extractContent`, `think` and `researchComplete`. Thinking is carried out
 * before the other calls of its turn; searches and extractions spend a budget that the model sees every turn. Results
 * are deduplicated against everything the session already holds, summarised at fetch time and shown numbered, with
 * a novelty tag. The loop stops on `researchComplete`, on a turn without tool calls, when the budget or the turn limit
 * is reached, or when the run asks it to stop; a failing model call ends it with what was gathered so far.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { ContentExtractor } from "../ContentExtractor.js"
import * as ContextRecovery from "../ContextRecovery.js"
import { qualityOfUrl } from "../internal/sourceQuality.js"
import * as LanguageModel from "../LanguageModel.js"
import { ModelRouter } from "../ModelRouter.js"
import * as Novelty from "../Novelty.js"
import * as Prompt from "../prompts/researcher.js"
import * as Untrusted from "../prompts/untrusted.js"
import type { StopReason } from "../Research.js"
import type { ResearchConfig } from "../ResearchConfig.js"
import * as ResearchEvents from "../ResearchEvents.js"
import { SearchProvider } from "../SearchProvider.js"
import type { ExtractResult, Novelty as NoveltyTag, SearchResult } from "../Source.js"
import { Source, SourceSummary } from "../Source.js"
import { Summarizer } from "../Summarizer.js"
import * as Tool from "../Tool.js"
import * as Usage from "../Usage.js"
import * as ActionProtocol from "./ActionProtocol.js"
import type { UnitInput } from "./Supervisor.js"

// =============================================================================
// Tools
// =============================================================================

const Url = Schema.String.pipe(Schema.pattern(/^https?:\/\/\S+$/i, { message: () => "an http(s) URL" })).annotations({
  description: "An http or https URL"
})

const Query = Schema.String.pipe(Schema.minLength(1, { message: () => "a non-empty search query" }))

/** The researcher's tools, sized by the configuration (made once per size: their JSON schemas and decoders with them). */
export const makeTools = (config: ResearchConfig): Tools => {
  const key = `${config.maxQueriesPerSearch}/${config.maxUrlsPerExtract}`
  let tools = toolsBySize.get(key)
  if (tools === undefined) {
    tools = buildTools(config)
    toolsBySize.set(key, tools)
  }
  return tools
}

/** The researcher's tools. */
export type Tools = ReturnType<typeof buildTools>

const toolsBySize = new Map<string, Tools>()

const buildTools = (config: Pick<ResearchConfig, "maxQueriesPerSearch" | "maxUrlsPerExtract">) => ({
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
    description: "Ends your research. Free. The summary states your findings with [n] citations.",
    schema: Schema.Struct({
      summary: Schema.String.annotations({ description: "Your findings, citing sources as [n]" })
    })
  })
})

// =============================================================================
// Input and output
// =============================================================================

/** What a researcher works from: its unit's input. */
export type Input = UnitInput

/** A source as the researcher saw it, under its number. */
export interface SeenSource {
  /** The citation number the researcher was shown, from 1. */
  readonly number: number
  /** The source: a new one of this unit, or a known one found again. */
  readonly source: Source
  readonly isNew: boolean
  readonly novelty: NoveltyTag
  /** What the researcher last read of it (a full page it extracted can replace a known source's summary). */
  readonly content: string
}

/** What a researcher produced. */
export interface Output {
  readonly stopReason: StopReason
  readonly turns: number
  /** Search and extract calls made (the budgeted ones). */
  readonly toolCalls: number
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
// Internal state
// =============================================================================

interface Entry {
  readonly number: number
  readonly id: string
  readonly isNew: boolean
  readonly known: Source | undefined
  readonly url: string
  title: string
  provider: string
  publishedDate: string | undefined
  content: string
  summary: SourceSummary | undefined
  rawLength: number
  readonly novelty: NoveltyTag
  readonly relatedTo: number | undefined
  readonly retrievedAt: number
}

/** A fetch-time summary, or the raw text when there is none. */
interface Summarised {
  readonly content: string
  readonly summary: SourceSummary | undefined
}

/** A raw text waiting for its fetch-time summary. */
interface Pending {
  readonly entry: Entry
  readonly url: string
  readonly title: string
  readonly raw: string
}

type Line =
  | { readonly _tag: "Source"; readonly number: number; readonly origin: "new" | "known" | "page" }
  | { readonly _tag: "Duplicate"; readonly number: number; readonly reason: Novelty.DuplicateReason }
  | { readonly _tag: "Note"; readonly text: string }

interface Candidate {
  readonly url: string
  readonly title: string
  readonly raw: string
  readonly provider: string
  readonly publishedDate: string | undefined
}

type Fetched =
  | {
      readonly _tag: "Search"
      readonly queries: ReadonlyArray<{
        readonly query: string
        readonly results: Either.Either<ReadonlyArray<SearchResult>, string>
      }>
    }
  | { readonly _tag: "Extract"; readonly results: Either.Either<ReadonlyArray<ExtractResult>, string> }

type Planned =
  | {
      readonly _tag: "Answer"
      readonly call: LanguageModel.ToolCall
      readonly content: string
      readonly isError: boolean
    }
  | { readonly _tag: "Search"; readonly call: LanguageModel.ToolCall; readonly queries: ReadonlyArray<string> }
  | { readonly _tag: "Extract"; readonly call: LanguageModel.ToolCall; readonly urls: ReadonlyArray<string> }

const errorMessage = (error: unknown): string =>
  error instanceof Error ? error.message : typeof error === "string" ? error : JSON.stringify(error)

const InvalidActions = Schema.Struct({ error: Schema.String })

const formatSummary = (summary: SourceSummary): string =>
  summary.excerpts.length === 0
    ? summary.summary
    : `${summary.summary}\n\nKey excerpts:\n${summary.excerpts.map((excerpt) => `- "${excerpt}"`).join("\n")}`

const tagOf = (entry: Entry): string =>
  entry.novelty === "new"
    ? "NEW"
    : entry.novelty === "related"
      ? `RELATED${entry.relatedTo === undefined ? "" : ` to [${entry.relatedTo}]`}`
      : `DUPLICATE${entry.relatedTo === undefined ? "" : ` of [${entry.relatedTo}]`}`

// =============================================================================
// The loop
// =============================================================================

/** Runs a researcher on its directive. Never fails: a failure ends the loop with `stopReason` "failed". */
export const run = Effect.fn("Researcher.run")(function* (input: Input) {
  const { config, directive } = input
  const router = yield* ModelRouter
  const search = yield* SearchProvider
  const extractor = yield* ContentExtractor
  const summarizer = yield* Summarizer
  const model = ActionProtocol.wrap(router.forRole("researcher"))
  const tools = makeTools(config)
  const definitions = [tools.webSearch, tools.extractContent, tools.think, tools.researchComplete].map(
    (tool) => tool.definition
  )
  const now = yield* Clock.currentTimeMillis
  const context: Prompt.Context = {
    directive: directive.directive,
    query: input.query,
    brief: input.brief,
    date: new Date(now).toISOString().slice(0, 10),
    maxToolCalls: config.researcherMaxToolCalls,
    maxQueriesPerSearch: config.maxQueriesPerSearch,
    maxUrlsPerExtract: config.maxUrlsPerExtract
  }
  const system = Prompt.system(context)

  const index = Novelty.make(Novelty.optionsFromConfig(config))
  const knownById = new Map<string, Source>()
  for (const source of input.knownSources) {
    knownById.set(source.id, source)
    index.add({ id: source.id, url: source.url, title: source.title, text: source.content })
  }
  const entries: Array<Entry> = []
  const entryById = new Map<string, Entry>()
  const entryByUrl = new Map<string, Entry>()
  const reflections: Array<string> = []
  let newCount = 0
  let used = 0
  let turns = 0
  let usage = Usage.empty
  let summary: string | undefined = undefined
  let closingText: string | undefined = undefined
  let error: string | undefined = undefined
  let stopReason: StopReason | undefined = undefined
  // When the current turn's results came back: the retrieval time of the sources it adds.
  let fetchedAt = now

  const publishTool = (tool: string, detail: string) =>
    ResearchEvents.publish({ _tag: "ToolCalled", directiveId: directive.id, tool, detail: detail.slice(0, 500) })

  const addEntry = (
    fields: Omit<Entry, "number" | "retrievedAt"> & { readonly retrievedAt?: number | undefined }
  ): Entry => {
    const entry: Entry = { ...fields, number: entries.length + 1, retrievedAt: fields.retrievedAt ?? fetchedAt }
    entries.push(entry)
    entryById.set(entry.id, entry)
    entryByUrl.set(Novelty.normalizeUrl(entry.url), entry)
    return entry
  }

  const entryOfKnown = (source: Source): Entry =>
    entryById.get(source.id) ??
    addEntry({
      id: source.id,
      isNew: false,
      known: source,
      url: source.url,
      title: source.title,
      provider: source.provider,
      publishedDate: source.publishedDate,
      content: source.content,
      summary: source.summary,
      rawLength: source.rawLength,
      novelty: "duplicate",
      relatedTo: undefined,
      retrievedAt: source.retrievedAt
    })

  /** Places one fetched text: a duplicate line, a known source shown again, a better page, or a new source. */
  const place = (candidate: Candidate, kind: "search" | "extract", pending: Array<Pending>): Line => {
    const seen = entryByUrl.get(Novelty.normalizeUrl(candidate.url))
    if (seen !== undefined) {
      if (kind === "extract" && candidate.raw.length > seen.rawLength) {
        pending.push({ entry: seen, url: candidate.url, title: candidate.title || seen.title, raw: candidate.raw })
        return { _tag: "Source", number: seen.number, origin: "page" }
      }
      return { _tag: "Duplicate", number: seen.number, reason: "url" }
    }
    const id = `${directive.id}-s${newCount + 1}`
    const verdict = index.insert({ id, url: candidate.url, title: candidate.title, text: candidate.raw })
    if (verdict._tag === "Duplicate") {
      // Own sources are found by URL above, so here they can only match by title or text.
      const own = entryById.get(verdict.of)
      if (own !== undefined) return { _tag: "Duplicate", number: own.number, reason: verdict.reason }
      const known = knownById.get(verdict.of)
      if (known === undefined) return { _tag: "Note", text: `A duplicate of a source already held: ${candidate.url}` }
      const entry = entryOfKnown(known)
      if (kind === "extract" && verdict.reason === "url" && candidate.raw.length > entry.rawLength) {
        pending.push({ entry, url: candidate.url, title: candidate.title || entry.title, raw: candidate.raw })
        return { _tag: "Source", number: entry.number, origin: "page" }
      }
      return { _tag: "Source", number: entry.number, origin: "known" }
    }
    newCount++
    const nearest = verdict.nearest === undefined ? undefined : entryById.get(verdict.nearest)
    const entry = addEntry({
      id,
      isNew: true,
      known: undefined,
      url: candidate.url,
      title: candidate.title,
      provider: candidate.provider,
      publishedDate: candidate.publishedDate,
      content: candidate.raw,
      summary: undefined,
      rawLength: candidate.raw.length,
      novelty: verdict.novelty,
      relatedTo: nearest?.number
    })
    pending.push({ entry, url: candidate.url, title: candidate.title, raw: candidate.raw })
    return { _tag: "Source", number: entry.number, origin: "new" }
  }

  /** The fetch-time summary of one text; the raw text (capped) stands when it is short, times out or fails. */
  const summarize = (item: Pending) => {
    const capped = item.raw.slice(0, config.summarizationInputCap)
    const raw: Summarised = { content: capped, summary: undefined }
    if (item.raw.length < config.minSummarizeLength) return Effect.succeed(raw)
    return summarizer.summarize({ url: item.url, title: item.title, content: capped }).pipe(
      Effect.timeoutOption(config.summarizationTimeout),
      Effect.flatMap((summary): Effect.Effect<Summarised> =>
        Option.isSome(summary)
          ? Effect.succeed({ content: formatSummary(summary.value), summary: summary.value })
          : Effect.as(Effect.logWarning(`Summarising ${item.url} timed out; the raw text is kept`), raw)
      ),
      Effect.catchAll((cause) =>
        Effect.as(
          Effect.logWarning(`Summarising ${item.url} failed (${errorMessage(cause)}); the raw text is kept`),
          raw
        )
      )
    )
  }

  // A page's title is web text too: it appears only inside the block's attributes, never in our own lines.
  const renderEntry = (entry: Entry, origin: "new" | "known" | "page"): string => {
    const heading =
      origin === "known"
        ? `[${entry.number}] DUPLICATE (known from earlier research)`
        : origin === "page"
          ? `[${entry.number}] FULL PAGE`
          : `[${entry.number}] ${tagOf(entry)}`
    return `${heading}\n${Untrusted.wrap(
      {
        kind: entry.summary === undefined ? "page text" : "page summary",
        label: `[${entry.number}]`,
        url: entry.url,
        title: entry.title
      },
      entry.content
    )}`
  }

  const renderLines = (lines: ReadonlyArray<Line>): string =>
    lines
      .map((line) => {
        switch (line._tag) {
          case "Note":
            return line.text
          case "Duplicate":
            return `[${line.number}] already shown; the same ${
              line.reason === "content" ? "text" : line.reason === "title" ? "title" : "page"
            } came back again.`
          case "Source": {
            const entry = entries[line.number - 1]
            return entry === undefined ? "" : renderEntry(entry, line.origin)
          }
        }
      })
      .filter((text) => text !== "")
      .join("\n\n")

  const fetch = (planned: Planned): Effect.Effect<Fetched | undefined> => {
    switch (planned._tag) {
      case "Search":
        return Effect.map(
          Effect.forEach(
            planned.queries,
            (query) =>
              search.search(query, { maxResults: config.searchResultsPerQuery, includeRawContent: true }).pipe(
                Effect.mapError(errorMessage),
                Effect.either,
                Effect.map((results) => ({ query, results }))
              ),
            { concurrency: "unbounded" }
          ),
          (queries): Fetched => ({ _tag: "Search", queries })
        )
      case "Extract":
        return Effect.map(
          Effect.either(Effect.mapError(extractor.extract(planned.urls), errorMessage)),
          (results): Fetched => ({ _tag: "Extract", results })
        )
      case "Answer":
        return Effect.succeed(undefined)
    }
  }

  /** Carries out one turn's calls: thinking first, then the rest in order. Returns the results in that order. */
  const execute = Effect.fnUntraced(function* (calls: ReadonlyArray<LanguageModel.ToolCall>) {
    const ordered = [...calls.filter((c) => c.name === "think"), ...calls.filter((c) => c.name !== "think")]
    const plans: Array<Planned> = []
    let completed = false
    for (const call of ordered) {
      const answer = (content: string, isError = false) => plans.push({ _tag: "Answer", call, content, isError })
      switch (call.name) {
        case "think": {
          const args = Tool.decodeArguments(tools.think, call.arguments)
          if (Either.isLeft(args)) {
            answer(args.left, true)
            break
          }
          reflections.push(args.right.reflection)
          yield* publishTool("think", args.right.reflection)
          answer("Reflection recorded.")
          break
        }
        case "researchComplete": {
          const args = Tool.decodeArguments(tools.researchComplete, call.arguments)
          if (Either.isLeft(args)) {
            answer(args.left, true)
            break
          }
          summary = args.right.summary
          completed = true
          yield* publishTool("researchComplete", args.right.summary)
          answer("Research marked complete.")
          break
        }
        case "webSearch":
        case "extractContent": {
          const args: Either.Either<{ readonly search: boolean; readonly values: ReadonlyArray<string> }, string> =
            call.name === "webSearch"
              ? Either.map(Tool.decodeArguments(tools.webSearch, call.arguments), (a) => ({
                  search: true,
                  values: a.queries
                }))
              : Either.map(Tool.decodeArguments(tools.extractContent, call.arguments), (a) => ({
                  search: false,
                  values: a.urls
                }))
          if (Either.isLeft(args)) {
            answer(args.left, true)
            break
          }
          if (used >= config.researcherMaxToolCalls) {
            answer(
              `Not run: no webSearch/extractContent calls are left (all ${config.researcherMaxToolCalls} spent). ` +
                "Call researchComplete with what you have.",
              true
            )
            break
          }
          used++
          yield* publishTool(call.name, args.right.values.join(" | "))
          plans.push(
            args.right.search
              ? { _tag: "Search", call, queries: args.right.values }
              : { _tag: "Extract", call, urls: args.right.values }
          )
          break
        }
        case ActionProtocol.invalidActionsTool: {
          const args = Schema.decodeUnknownEither(InvalidActions)(call.arguments)
          answer(Either.isRight(args) ? args.right.error : "Your answer could not be read as actions.", true)
          break
        }
        default:
          answer(
            `Unknown tool "${call.name}". The tools are: webSearch, extractContent, think, researchComplete.`,
            true
          )
      }
    }

    const fetched = yield* Effect.forEach(plans, fetch, { concurrency: "unbounded" })
    fetchedAt = yield* Clock.currentTimeMillis

    // Placing is sequential, in call order, so numbering and dedup do not depend on which fetch finished first.
    const pending: Array<Pending> = []
    const placed = plans.map((plan, i): { readonly lines: ReadonlyArray<Line>; readonly failed: boolean } => {
      const outcome = fetched[i]
      if (plan._tag === "Answer" || outcome === undefined) return { lines: [], failed: false }
      if (outcome._tag === "Search") {
        const lines: Array<Line> = []
        for (const { query, results } of outcome.queries) {
          if (Either.isLeft(results)) {
            lines.push({ _tag: "Note", text: `Search "${query}" failed: ${results.left}` })
            continue
          }
          lines.push({
            _tag: "Note",
            text: results.right.length === 0 ? `No results for "${query}".` : `Results for "${query}":`
          })
          for (const result of results.right) {
            const raw =
              result.rawContent !== undefined && result.rawContent.trim() !== "" ? result.rawContent : result.snippet
            lines.push(
              place(
                {
                  url: result.url,
                  title: result.title,
                  raw,
                  provider: result.provider,
                  publishedDate: result.publishedDate
                },
                "search",
                pending
              )
            )
          }
        }
        return { lines, failed: outcome.queries.every((q) => Either.isLeft(q.results)) }
      }
      if (Either.isLeft(outcome.results)) {
        return { lines: [{ _tag: "Note", text: `Extraction failed: ${outcome.results.left}` }], failed: true }
      }
      const lines: Array<Line> = []
      for (const result of outcome.results.right) {
        if (result._tag === "ExtractFailure") {
          lines.push({ _tag: "Note", text: `Could not read ${result.url}: ${result.reason}` })
          continue
        }
        lines.push(
          place(
            {
              url: result.url,
              title: result.title,
              raw: result.content,
              provider: extractor.name,
              publishedDate: undefined
            },
            "extract",
            pending
          )
        )
      }
      return {
        lines,
        failed: outcome.results.right.length > 0 && outcome.results.right.every((r) => r._tag === "ExtractFailure")
      }
    })

    // Summaries are model calls too: when the run is out of budget the raw texts stand instead.
    const stopping = pending.length > 0 && (yield* input.shouldStop)
    const summaries = yield* Effect.forEach(
      pending,
      (item): Effect.Effect<Summarised> =>
        stopping
          ? Effect.succeed({ content: item.raw.slice(0, config.summarizationInputCap), summary: undefined })
          : summarize(item),
      { concurrency: "unbounded" }
    )
    pending.forEach((item, i) => {
      const result = summaries[i]
      if (result === undefined) return
      item.entry.content = result.content
      item.entry.summary = result.summary
      item.entry.rawLength = item.raw.length
      if (item.title !== "") item.entry.title = item.title
    })
    for (const item of pending) {
      if (!item.entry.isNew || pending.find((p) => p.entry === item.entry) !== item) continue
      yield* ResearchEvents.publish({
        _tag: "SourceFound",
        directiveId: directive.id,
        sourceId: item.entry.id,
        url: item.entry.url,
        title: item.entry.title,
        novelty: item.entry.novelty
      })
    }

    const results = plans.map((plan, i) => {
      if (plan._tag === "Answer") return LanguageModel.toolResult(plan.call, plan.content, plan.isError)
      const { failed, lines } = placed[i] ?? { lines: [], failed: true }
      const text = renderLines(lines)
      return LanguageModel.toolResult(plan.call, text === "" ? "Nothing came back." : text, failed)
    })
    return { results, completed }
  })

  const messages: Array<LanguageModel.Message> = [LanguageModel.user(Prompt.task(context))]
  const withStatus = (): ReadonlyArray<LanguageModel.Message> => {
    const note = Prompt.status({
      turn: turns,
      remaining: config.researcherMaxToolCalls - used,
      total: config.researcherMaxToolCalls
    })
    const last = messages[messages.length - 1]
    // Joined to a trailing user message so that turns keep alternating for vendors that require it.
    return last !== undefined && last._tag === "user"
      ? [...messages.slice(0, -1), LanguageModel.user(`${last.content}\n\n${note}`)]
      : [...messages, LanguageModel.user(note)]
  }

  while (stopReason === undefined) {
    if (turns >= config.researcherMaxTurns) {
      stopReason = "max_turns"
      break
    }
    if (used >= config.researcherMaxToolCalls) {
      stopReason = "budget"
      break
    }
    if (yield* input.shouldStop) {
      stopReason = "run_budget"
      break
    }
    turns++
    const completion = yield* Effect.either(
      ContextRecovery.generateConversation(model, {
        system,
        messages: withStatus(),
        tools: definitions,
        toolChoice: "auto"
      })
    )
    if (Either.isLeft(completion)) {
      error = errorMessage(completion.left)
      stopReason = "failed"
      break
    }
    const { text, toolCalls } = completion.right
    usage = Usage.add(usage, completion.right.usage)
    messages.push(LanguageModel.assistant(text, toolCalls))
    if (toolCalls.length === 0) {
      closingText = text.trim() === "" ? undefined : text.trim()
      stopReason = "no_tool_call"
    } else {
      const turn = yield* execute(toolCalls)
      messages.push(...turn.results)
      if (turn.completed) stopReason = "complete"
    }
    yield* ResearchEvents.publish({
      _tag: "ResearcherTurn",
      directiveId: directive.id,
      turn: turns,
      toolCalls: toolCalls.map((call) => call.name),
      remainingToolCalls: config.researcherMaxToolCalls - used
    })
  }

  const seen: ReadonlyArray<SeenSource> = entries.map((entry) => ({
    number: entry.number,
    isNew: entry.isNew,
    novelty: entry.novelty,
    content: entry.content,
    source:
      entry.known ??
      new Source({
        id: entry.id,
        url: entry.url,
        title: entry.title,
        content: entry.content,
        ...(entry.summary !== undefined ? { summary: entry.summary } : {}),
        provider: entry.provider,
        quality: qualityOfUrl(entry.url),
        ...(entry.publishedDate !== undefined ? { publishedDate: entry.publishedDate } : {}),
        retrievedAt: entry.retrievedAt,
        directiveId: directive.id,
        rawLength: entry.rawLength
      })
  }))
  const output: Output = {
    stopReason: stopReason ?? "failed",
    turns,
    toolCalls: used,
    seen,
    newSources: seen.filter((s) => s.isNew).map((s) => s.source),
    summary,
    closingText,
    reflections,
    usage,
    error
  }
  return output
})
