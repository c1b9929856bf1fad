/**
 * The research library: every source any session stored, split into passages and searchable across sessions by full
 * text. A store keeps it (the SQL store indexes a session's sources when it saves the session, and drops them with the
 * session); `search` ranks the passages that match. A run with the `library` setting starts from the passages that
 * match its brief (`phases/Library.ts`). Where sessions have owners (a server's callers), a search can be kept to the
 * sessions its caller reaches (`reaches`), and a run's to those its session's owner reaches (`RunReach`).
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { ResearchInvalidInput } from "./Errors.js"

/** One passage of a stored source that matched a search, best first. */
export class Passage extends Schema.Class<Passage>("@deep-research/core/LibraryPassage")({
  /** The session that stored the source. */
  sessionId: Schema.String,
  /** The source's id in that session. */
  sourceId: Schema.String,
  url: Schema.String,
  title: Schema.String,
  /** The passage's place in the source's stored text, from 0. */
  position: Schema.Int,
  /** The passage's text. */
  text: Schema.String,
  /** The words around the matches, the matched words in `**`. */
  snippet: Schema.String,
  /** How well it matched: higher is better (comparable within one search only). */
  score: Schema.Number
}) {}

/** How a search matches its terms. */
export interface SearchOptions {
  /** Passages at most (10 by default; at most `maxResults`). */
  readonly limit?: number | undefined
  /** `all` (the default): every term must occur; `any`: one is enough, more rank higher (a brief's words). */
  readonly match?: "all" | "any" | undefined
  /** Leaves out the passages of this session (a run searching the library leaves out its own). */
  readonly excludeSession?: string | undefined
  /**
   * Only the passages of the sessions this holds for (those a caller may reach). The library applies it while ranking,
   * so that up to `limit` passages come back however many of other sessions outrank them; it is asked once a session
   * a search. Without it, every session's.
   */
  readonly reaches?: ((sessionId: string) => Effect.Effect<boolean>) | undefined
}

/** The passages a search gives at most. */
export const maxResults = 200

/** The library. */
export interface Service {
  /** The passages matching `terms`, best first; `ResearchInvalidInput` when the terms hold no word to search for. */
  readonly search: (
    terms: string,
    options?: SearchOptions
  ) => Effect.Effect<ReadonlyArray<Passage>, ResearchInvalidInput>
}

/** The library in context. */
export class SourceLibrary extends Context.Tag("@deep-research/core/SourceLibrary")<SourceLibrary, Service>() {}

/** Which sessions a run may take from the library, where sessions have owners. */
export interface RunReachService {
  /** For the session a run researches, the test its library search applies (`SearchOptions.reaches`). */
  readonly forSession: (sessionId: string) => Effect.Effect<(sessionId: string) => Effect.Effect<boolean>>
}

/**
 * The sessions a run may take from the library (the `library` setting), in context where sessions have owners: the CLI's
 * runs take only those of their session's owner and no one's. A program that provides none lets a run take from every
 * session of the store.
 */
export class RunReach extends Context.Tag("@deep-research/core/SourceLibrary/RunReach")<RunReach, RunReachService>() {}

// =============================================================================
// Terms
// =============================================================================

/** Words too common to say anything about a passage (English, the language of most stored pages and briefs). */
const stopWords: ReadonlySet<string> = new Set(
  (
    "a an and are as at be been but by can do does for from had has have how i if in into is it its itself more most " +
    "no not of on or our over should so such than that the their them then there these they this those through to " +
    "under up was we were what when where which while who whom why will with would you your about also any each other " +
    "only own same some very just may might must shall"
  ).split(" ")
)

/** Search words at most: a brief's paragraph is cut to its first distinct words. */
export const maxTerms = 32

/**
 * The words of a search: letters and digits (any script), lower-cased, without common English words, each once, at
 * most `maxTerms`. What the stores put into their query languages, so that no syntax of either reaches them.
 */
export const termsOf = (text: string): ReadonlyArray<string> => {
  const words = new Set<string>()
  for (const match of text.toLowerCase().matchAll(/[\p{L}\p{N}]+/gu)) {
    const word = match[0]
    if (word.length < 2 || stopWords.has(word) || words.has(word)) continue
    words.add(word)
    if (words.size >= maxTerms) break
  }
  return [...words]
}
