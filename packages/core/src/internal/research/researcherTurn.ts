/**
 * The steps of one researcher turn, each alone: planning the turn's calls (decoding them, thinking first, spending
 * the budget), fetching what they ask for, placing the results in the ledger, summarising what is new, and the tool
 * results the model reads next.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import type * as ContentExtractor from "../../ContentExtractor.js"
import * as LanguageModel from "../../LanguageModel.js"
import type { ResearchConfig } from "../../ResearchConfig.js"
import type * as SearchProvider from "../../SearchProvider.js"
import type { ExtractResult, SearchResult } from "../../Source.js"
import type * as Summarizer from "../../Summarizer.js"
import * as Telemetry from "../../Telemetry.js"
import * as Tool from "../../Tool.js"
import * as ActionProtocol from "../../phases/ActionProtocol.js"
import { formatSummary, type Ledger, type Line, type Pending, type Summarised } from "./sourceLedger.js"

/** The researcher's tools, sized by the configuration. */
export interface Tools {
  readonly webSearch: Tool.Tool<{ readonly queries: ReadonlyArray<string> }>
  readonly extractContent: Tool.Tool<{ readonly urls: ReadonlyArray<string> }>
  readonly think: Tool.Tool<{ readonly reflection: string }>
  readonly researchComplete: Tool.Tool<{ readonly summary: string }>
}

/** What one call of the turn comes to. */
export type Planned =
  | {
      readonly _tag: "Answer"
      readonly call: LanguageModel.ToolCall
      readonly content: string
      readonly isError: boolean
    }
  | { readonly _tag: "Search"; readonly call: LanguageModel.ToolCall; readonly queries: ReadonlyArray<string> }
  | { readonly _tag: "Extract"; readonly call: LanguageModel.ToolCall; readonly urls: ReadonlyArray<string> }

/** Something the turn did that watchers are told, in the order it happened. */
export type Notice =
  | { readonly _tag: "Called"; readonly tool: string; readonly detail: string }
  | { readonly _tag: "Rejected"; readonly tool: string; readonly error: string }

/** A turn's calls, planned. */
export interface Plan {
  readonly plans: ReadonlyArray<Planned>
  readonly notices: ReadonlyArray<Notice>
  readonly reflections: ReadonlyArray<string>
  /** The summary of a `researchComplete` call. */
  readonly summary: string | undefined
  readonly completed: boolean
  /** Budgeted calls (searches and extractions) this turn spends. */
  readonly spent: number
}

const InvalidActions = Schema.Struct({ error: Schema.String })

/**
 * Plans a turn's calls: thinking first, then the rest in order. A call that does not decode, names no tool or finds
 * the budget spent is answered with the reason; searches and extractions spend the budget (`used` of `max` so far).
 */
export const plan = (
  calls: ReadonlyArray<LanguageModel.ToolCall>,
  tools: Tools,
  budget: { readonly used: number; readonly max: number }
): Plan => {
  const ordered = [...calls.filter((c) => c.name === "think"), ...calls.filter((c) => c.name !== "think")]
  const plans: Array<Planned> = []
  const notices: Array<Notice> = []
  const reflections: Array<string> = []
  let summary: string | undefined
  let completed = false
  let spent = 0
  for (const call of ordered) {
    const answer = (content: string, isError = false) => plans.push({ _tag: "Answer", call, content, isError })
    const reject = (error: string) => {
      answer(error, true)
      notices.push({ _tag: "Rejected", tool: call.name, error })
    }
    switch (call.name) {
      case "think": {
        const args = Tool.decodeArguments(tools.think, call.arguments)
        if (Either.isLeft(args)) {
          reject(args.left)
          break
        }
        reflections.push(args.right.reflection)
        notices.push({ _tag: "Called", tool: "think", detail: args.right.reflection })
        answer("Reflection recorded.")
        break
      }
      case "researchComplete": {
        const args = Tool.decodeArguments(tools.researchComplete, call.arguments)
        if (Either.isLeft(args)) {
          reject(args.left)
          break
        }
        summary = args.right.summary
        completed = true
        notices.push({ _tag: "Called", tool: "researchComplete", detail: args.right.summary })
        answer("Research marked complete.")
        break
      }
      case "webSearch":
      case "extractContent": {
        const args =
          call.name === "webSearch"
            ? Either.map(Tool.decodeArguments(tools.webSearch, call.arguments), (a) => a.queries)
            : Either.map(Tool.decodeArguments(tools.extractContent, call.arguments), (a) => a.urls)
        if (Either.isLeft(args)) {
          reject(args.left)
          break
        }
        if (budget.used + spent >= budget.max) {
          answer(
            `Not run: no webSearch/extractContent calls are left (all ${budget.max} spent). ` +
              "Call researchComplete with what you have.",
            true
          )
          break
        }
        spent++
        notices.push({ _tag: "Called", tool: call.name, detail: args.right.join(" | ") })
        plans.push(
          call.name === "webSearch"
            ? { _tag: "Search", call, queries: args.right }
            : { _tag: "Extract", call, urls: args.right }
        )
        break
      }
      case ActionProtocol.invalidActionsTool: {
        const args = Schema.decodeUnknownEither(InvalidActions)(call.arguments)
        reject(Either.isRight(args) ? args.right.error : "Your answer could not be read as actions.")
        break
      }
      default:
        reject(`Unknown tool "${call.name}". The tools are: webSearch, extractContent, think, researchComplete.`)
    }
  }
  return { plans, notices, reflections, summary, completed, spent }
}

// =============================================================================
// Fetching
// =============================================================================

/** What a search or an extraction brought back. */
export type Fetched =
  | {
      readonly _tag: "Search"
      readonly queries: ReadonlyArray<{
        readonly query: string
        readonly results: Either.Either<ReadonlyArray<SearchResult>, string>
      }>
    }
  | { readonly _tag: "Extract"; readonly results: Either.Either<ReadonlyArray<ExtractResult>, string> }

/** A failure as the model reads it. */
export const errorMessage = (error: unknown): string =>
  error instanceof Error ? error.message : typeof error === "string" ? error : JSON.stringify(error)

/**
 * Runs an effect for each item, all at once, the results in item order. One item runs in the caller's fiber: Effect's
 * unbounded `forEach` forks a fiber even for a single item, and most turns fetch one call and search one query.
 */
export const forEachAtOnce = <A, B, E, R>(
  items: ReadonlyArray<A>,
  f: (item: A) => Effect.Effect<B, E, R>
): Effect.Effect<ReadonlyArray<B>, E, R> => {
  if (items.length === 0) return Effect.succeed([])
  const [only] = items
  return items.length === 1 && only !== undefined
    ? Effect.map(f(only), (result) => [result])
    : Effect.forEach(items, f, { concurrency: "unbounded" })
}

/** Fetches what a planned call asks for; failures come back as messages, never as errors. */
export const fetch = (
  planned: Planned,
  services: { readonly search: SearchProvider.Service; readonly extractor: ContentExtractor.Service },
  config: ResearchConfig
): Effect.Effect<Fetched | undefined> => {
  switch (planned._tag) {
    case "Search":
      return Effect.map(
        forEachAtOnce(planned.queries, (query) =>
          Telemetry.providerCall(
            "search",
            services.search.name,
            { query },
            services.search.search(query, { maxResults: config.searchResultsPerQuery, includeRawContent: true })
          ).pipe(
            Effect.match({
              onFailure: (error) => ({ query, results: Either.left(errorMessage(error)) }),
              onSuccess: (results) => ({ query, results: Either.right(results) })
            })
          )
        ),
        (queries): Fetched => ({ _tag: "Search", queries })
      ).pipe(Telemetry.toolCall(planned.call))
    case "Extract":
      return Effect.match(
        Telemetry.providerCall(
          "extract",
          services.extractor.name,
          { urls: planned.urls },
          services.extractor.extract(planned.urls)
        ),
        {
          onFailure: (error): Fetched => ({ _tag: "Extract", results: Either.left(errorMessage(error)) }),
          onSuccess: (results): Fetched => ({ _tag: "Extract", results: Either.right(results) })
        }
      ).pipe(Telemetry.toolCall(planned.call))
    case "Answer":
      return Effect.succeed(undefined)
  }
}

/** Fetches what a turn's calls ask for, all at once; `undefined` for the calls answered without fetching. */
export const fetchAll = (
  plans: ReadonlyArray<Planned>,
  services: { readonly search: SearchProvider.Service; readonly extractor: ContentExtractor.Service },
  config: ResearchConfig
): Effect.Effect<ReadonlyArray<Fetched | undefined>> =>
  Effect.map(
    forEachAtOnce(
      plans.filter((planned) => planned._tag !== "Answer"),
      (planned) => fetch(planned, services, config)
    ),
    (fetched) => {
      let next = 0
      return plans.map((planned) => (planned._tag === "Answer" ? undefined : fetched[next++]))
    }
  )

// =============================================================================
// Placing
// =============================================================================

/** The lines of one call's result, and whether the call failed as a whole. */
export interface Placed {
  readonly lines: ReadonlyArray<Line>
  readonly failed: boolean
}

const placeSearch = (fetched: Extract<Fetched, { _tag: "Search" }>, ledger: Ledger, pending: Array<Pending>) => {
  const lines: Array<Line> = []
  for (const { query, results } of fetched.queries) {
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
      const candidate = {
        url: result.url,
        title: result.title,
        raw,
        provider: result.provider,
        publishedDate: result.publishedDate,
        work: result.work
      }
      lines.push(ledger.place(candidate, "search", pending))
    }
  }
  return { lines, failed: fetched.queries.every((q) => Either.isLeft(q.results)) }
}

const placeExtract = (
  fetched: Extract<Fetched, { _tag: "Extract" }>,
  ledger: Ledger,
  pending: Array<Pending>,
  extractorName: string
): Placed => {
  if (Either.isLeft(fetched.results)) {
    return { lines: [{ _tag: "Note", text: `Extraction failed: ${fetched.results.left}` }], failed: true }
  }
  const lines: Array<Line> = []
  for (const result of fetched.results.right) {
    if (result._tag === "ExtractFailure") {
      lines.push({ _tag: "Note", text: `Could not read ${result.url}: ${result.reason}` })
      continue
    }
    const candidate = {
      url: result.url,
      title: result.title,
      raw: result.content,
      provider: extractorName,
      publishedDate: undefined
    }
    lines.push(ledger.place(candidate, "extract", pending))
  }
  const all = fetched.results.right
  return { lines, failed: all.length > 0 && all.every((r) => r._tag === "ExtractFailure") }
}

/**
 * Places every fetched text in the ledger, in call order, so that numbering and dedup do not depend on which fetch
 * finished first. Returns each call's lines and the texts to summarise.
 */
export const place = (
  plans: ReadonlyArray<Planned>,
  fetched: ReadonlyArray<Fetched | undefined>,
  ledger: Ledger,
  extractorName: string
): { readonly placed: ReadonlyArray<Placed>; readonly pending: ReadonlyArray<Pending> } => {
  const pending: Array<Pending> = []
  const placed = plans.map((planned, i): Placed => {
    const outcome = fetched[i]
    if (planned._tag === "Answer" || outcome === undefined) return { lines: [], failed: false }
    return outcome._tag === "Search"
      ? placeSearch(outcome, ledger, pending)
      : placeExtract(outcome, ledger, pending, extractorName)
  })
  return { placed, pending }
}

// =============================================================================
// Summarising and answering
// =============================================================================

/**
 * The fetch-time summaries of a turn's texts, summarised at once, in their order. A text shorter than the minimum, or
 * whose summary fails or is not back within the timeout, stands as its raw text (capped). The texts all start
 * together, so one timeout serves them all, as one for each would: those not answered when it fires are stopped and
 * keep their raw text, each with its warning. (A timeout forks two fibers; one for each text cost two a text.)
 */
export const summarizeAll = (
  items: ReadonlyArray<Pending>,
  summarizer: Summarizer.Service,
  config: ResearchConfig
): Effect.Effect<ReadonlyArray<Summarised>> => {
  const rawOf = (item: Pending): Summarised => ({
    content: item.raw.slice(0, config.summarizationInputCap),
    summary: undefined
  })
  const asked = items.flatMap((item, index) => (item.raw.length < config.minSummarizeLength ? [] : [{ item, index }]))
  if (asked.length === 0) return Effect.succeed(items.map(rawOf))
  return Effect.suspend(() => {
    const results = items.map(rawOf)
    const settled = new Set<number>()
    const summarizeOne = ({ index, item }: { readonly item: Pending; readonly index: number }): Effect.Effect<void> =>
      Effect.matchEffect(summarizer.summarize({ url: item.url, title: item.title, content: rawOf(item).content }), {
        onSuccess: (summary) => {
          settled.add(index)
          results[index] = { content: formatSummary(summary), summary }
          return Effect.void
        },
        onFailure: (error) => {
          settled.add(index)
          return Effect.logWarning(`Summarising ${item.url} failed (${errorMessage(error)}); the raw text is kept`)
        }
      })
    const late = () =>
      Effect.forEach(
        asked.filter(({ index }) => !settled.has(index)),
        ({ item }) => Effect.logWarning(`Summarising ${item.url} timed out; the raw text is kept`),
        { discard: true }
      )
    return forEachAtOnce(asked, summarizeOne).pipe(
      Effect.timeoutOption(config.summarizationTimeout),
      Effect.flatMap(() => (settled.size === asked.length ? Effect.void : late())),
      Effect.as(results)
    )
  })
}

/** The tool results of a turn, in the order of its plans. */
export const results = (
  plans: ReadonlyArray<Planned>,
  placed: ReadonlyArray<Placed>,
  ledger: Ledger
): ReadonlyArray<LanguageModel.ToolResultMessage> =>
  plans.map((planned, i) => {
    if (planned._tag === "Answer") return LanguageModel.toolResult(planned.call, planned.content, planned.isError)
    const { failed, lines } = placed[i] ?? { lines: [], failed: true }
    const text = ledger.render(lines)
    return LanguageModel.toolResult(planned.call, text === "" ? "Nothing came back." : text, failed)
  })
