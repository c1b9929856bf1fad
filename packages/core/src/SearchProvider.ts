/**
 * The search port. Several providers can be active: `SearchFanout` in the providers package makes them
 * one search provider, merging and deduplicating their results.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { ProviderError } from "./Errors.js"
import type { SearchResult } from "./Source.js"

/**
 * Options of one search. Providers ignore what they cannot do: the product checks every result against the run's
 * source policy whatever the backend did with its part of it (see `SourcePolicy`).
 */
export interface SearchOptions {
  readonly maxResults: number
  readonly depth?: "basic" | "advanced" | undefined
  readonly includeRawContent?: boolean | undefined
  readonly topic?: "general" | "news" | "finance" | undefined
  readonly timeRange?: "day" | "week" | "month" | "year" | undefined
  readonly includeDomains?: ReadonlyArray<string> | undefined
  readonly excludeDomains?: ReadonlyArray<string> | undefined
  /** Only what was published on or after this day (`YYYY-MM-DD`), where the backend can filter by date. */
  readonly since?: string | undefined
  /** Only what was published on or before this day (`YYYY-MM-DD`), where the backend can filter by date. */
  readonly until?: string | undefined
}

/** A search backend. */
export interface Service {
  /** A short name, recorded on every result (`tavily`, `exa`, `local`, ...). */
  readonly name: string
  readonly search: (query: string, options: SearchOptions) => Effect.Effect<ReadonlyArray<SearchResult>, ProviderError>
}

/** The search provider in context. */
export class SearchProvider extends Context.Tag("@deep-research/core/SearchProvider")<SearchProvider, Service>() {}

/**
 * The language of the question being researched (ISO 639-1, e.g. `de`), in context while its research runs: a provider
 * that has an edition or a setting per language (Wikipedia, SearXNG) searches in it unless told otherwise.
 */
export class QuestionLanguage extends Context.Tag("@deep-research/core/SearchProvider/QuestionLanguage")<
  QuestionLanguage,
  string
>() {}
