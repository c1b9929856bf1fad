/**
 * The research library of the SQL store (`SourceLibrary`): every source a session stores is split into passages
 * (`deep_research_passages`, a row each, the session's own) in the same transaction that saves the session, and a
 * session's deletion removes its rows, so that a page two sessions hold stays in the library through the other's.
 * Searched by full text: SQLite's FTS5 ranked by bm25, PostgreSQL's text search ranked by `ts_rank` (the one place the
 * dialects differ, with the tables of migration 3). Sessions stored before the library are indexed when a store first
 * opens after the migration (`backfill`).
 */
import * as Errors from "@deep-research/core/Errors"
import type * as Session from "@deep-research/core/Session"
import type * as Source from "@deep-research/core/Source"
import * as SourceLibrary from "@deep-research/core/SourceLibrary"
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { chunkText } from "../../corpus/chunkText.js"
import type { Scrubbed } from "../secretScrubber.js"
import { decodeRows, Integer, orDie, patiently, type Writer } from "./sqlDatabase.js"

/** What the library's functions use of the store. */
export interface Library {
  readonly sql: SqlClient.SqlClient
  readonly scrubbed: Scrubbed
  readonly write: Writer
  /** The sources of each session indexed so far, as this store last wrote them (read from the database at first). */
  readonly indexed: Map<string, ReadonlySet<string>>
}

/** A passage's size in characters, and what it repeats of the one before, so that a sentence cut in two is found. */
export const passageSizes = { size: 1_200, overlap: 150 } as const

/** Rows inserted by one statement at most (well under SQLite's limit of bound parameters). */
const insertBatch = 100

const SourceIdRow = Schema.Struct({ source_id: Schema.String })
/** A match as the ranking gives it: the passage, its session and its score. */
const RankedRow = Schema.Struct({ id: Integer, session_id: Schema.String, score: Integer })
const PassageRow = Schema.Struct({
  id: Integer,
  session_id: Schema.String,
  source_id: Schema.String,
  url: Schema.String,
  title: Schema.String,
  position: Integer,
  text: Schema.String
})

/** A source's stored text as passages: its title heads the first, so that a page's name is found with its text. */
export const passagesOf = (source: Source.Source): ReadonlyArray<string> =>
  chunkText(source.content, passageSizes)
    .map((chunk) => chunk.text.trim())
    .filter((text) => text !== "")

// =============================================================================
// Indexing
// =============================================================================

/**
 * Inside a save's transaction: the passages of the session's sources not indexed yet are added, those of sources it no
 * longer holds removed. Returns the sources indexed, for the store to remember once the transaction commits.
 */
export const index = (
  library: Library,
  session: Session.Session
): Effect.Effect<ReadonlySet<string> | undefined, SqlError> =>
  Effect.gen(function* () {
    const { sql } = library
    let indexed = library.indexed.get(session.id)
    // A session with no source yet (one just accepted) has nothing in the library: its acknowledgement asks nothing more.
    if (indexed === undefined && session.sources.length === 0) return undefined
    if (indexed === undefined) {
      const rows = yield* decodeRows(SourceIdRow)(
        sql`SELECT DISTINCT source_id FROM deep_research_passages WHERE session_id = ${session.id}`
      ).pipe(Effect.orDie)
      indexed = new Set(rows.map((row) => row.source_id))
      // Indexed here from now on: no longer waiting for the backfill.
      yield* sql`DELETE FROM deep_research_library_pending WHERE session_id = ${session.id}`
    }
    const held = new Set(session.sources.map((source) => source.id))
    const gone = [...indexed].filter((id) => !held.has(id))
    if (gone.length > 0) {
      yield* sql`DELETE FROM deep_research_passages WHERE session_id = ${session.id} AND ${sql.in("source_id", gone)}`
    }
    const rows: Array<Record<string, string | number>> = []
    for (const source of session.sources) {
      if (indexed.has(source.id)) continue
      for (const [position, passage] of passagesOf(source).entries()) {
        const text = yield* library.scrubbed(`a source of session ${session.id}`, passage)
        const title = yield* library.scrubbed(`a source of session ${session.id}`, source.title)
        rows.push({ session_id: session.id, source_id: source.id, position, url: source.url, title, text })
      }
    }
    for (let start = 0; start < rows.length; start += insertBatch) {
      yield* sql`INSERT INTO deep_research_passages ${sql.insert(rows.slice(start, start + insertBatch))}`
    }
    return held
  })

/** Inside a deletion's transaction: the session's passages go with it. */
export const remove = (sql: SqlClient.SqlClient, id: string) =>
  Effect.zipRight(
    sql`DELETE FROM deep_research_passages WHERE session_id = ${id}`,
    sql`DELETE FROM deep_research_library_pending WHERE session_id = ${id}`
  )

/**
 * Indexes the sessions stored before the library (listed by migration 3), a transaction each, so that an open that is
 * stopped halfway leaves the rest listed for the next. A session that cannot be read is left out. Returns how many.
 */
export const backfill = (
  library: Library,
  read: (id: string) => Effect.Effect<Session.Session | undefined, SqlError>
): Effect.Effect<number> =>
  Effect.gen(function* () {
    const { sql } = library
    let done = 0
    let said = false
    for (;;) {
      const waiting = yield* decodeRows(Schema.Struct({ session_id: Schema.String }))(
        sql`SELECT session_id FROM deep_research_library_pending LIMIT 50`
      ).pipe(patiently, orDie("cannot read the sessions waiting for the library"))
      if (waiting.length === 0) break
      // A large store takes a while, once: said when it starts, and every 500 sessions.
      if (!said || (done > 0 && done % 500 < 50)) {
        said = true
        yield* Effect.logInfo(
          `SqlSessionStore: indexing the sources of the sessions stored before the library (once): ${done} done`
        )
      }
      for (const { session_id: id } of waiting) {
        // One write (a transaction of its own, or of the commit it joins) a session.
        const indexed = yield* library
          .write(
            Effect.gen(function* () {
              const taken =
                yield* sql`DELETE FROM deep_research_library_pending WHERE session_id = ${id} RETURNING session_id`
              // Another process indexed it meanwhile.
              if (taken.length === 0) return undefined
              const session = yield* read(id)
              return session === undefined
                ? new Set<string>()
                : ((yield* index({ ...library, indexed: new Map() }, session)) ?? new Set<string>())
            })
          )
          .pipe(orDie(`cannot index the sources of session ${id} for the library`))
        if (indexed !== undefined) {
          library.indexed.set(id, indexed)
          done++
        }
      }
    }
    if (done > 0)
      yield* Effect.logInfo(`SqlSessionStore: indexed the sources of ${done} stored sessions for the library`)
    return done
  })

// =============================================================================
// Search
// =============================================================================

/** Words a snippet shows at most. */
const snippetWords = 30

/**
 * The words of a passage around its matches, the matched words in `**`: the window of `snippetWords` holding the most
 * of them. A word matches a term when it starts with the term less its last two letters (a rough stem, as the
 * search's stemmer finds `cells` for `cell`).
 */
export const snippetOf = (text: string, terms: ReadonlyArray<string>): string => {
  const words = text.split(/\s+/).filter((word) => word !== "")
  const stems = terms.map((term) => (term.length > 4 ? term.slice(0, term.length - 2) : term))
  const matches = words.map((word) => {
    const lower = word.toLowerCase().replace(/^[^\p{L}\p{N}]+/u, "")
    return stems.some((stem) => lower.startsWith(stem))
  })
  let best = 0
  let bestCount = -1
  for (let start = 0; start < Math.max(1, words.length - snippetWords + 1); start++) {
    let count = 0
    for (let i = start; i < Math.min(words.length, start + snippetWords); i++) if (matches[i]) count++
    if (count > bestCount) {
      best = start
      bestCount = count
    }
  }
  const end = Math.min(words.length, best + snippetWords)
  const shown = words.slice(best, end).map((word, i) => (matches[best + i] ? `**${word}**` : word))
  return `${best > 0 ? "… " : ""}${shown.join(" ")}${end < words.length ? " …" : ""}`
}

const noTerms = () =>
  new Errors.ResearchInvalidInput({
    reason: 'nothing to search for: give words to look for (letters or digits; common words such as "the" are left out)'
  })

/**
 * Matches a page of a search ranks at most. A search that passes over many (those of sessions it may not reach) reads
 * pages twice as large each time up to this, of ids and sessions only, so that it ranks the matches a few times at most
 * (figures: BENCHMARKS.md, the research library).
 */
const maxPage = 20_000

/** The ranked matches of `words` from the `offset`th on, `size` at most, in one query of the store's dialect. */
const rankedPage = (
  sql: SqlClient.SqlClient,
  words: ReadonlyArray<string>,
  any: boolean,
  excluded: string,
  offset: number,
  size: number
) =>
  decodeRows(RankedRow)(
    sql.onDialectOrElse({
      // Ties are ordered by id, so that the pages of one search neither repeat nor skip a match.
      pg: () => {
        const query = words.join(any ? " | " : " & ")
        return sql`SELECT id, session_id, ts_rank(search, q) AS score
          FROM deep_research_passages, to_tsquery('english', ${query}) q
          WHERE search @@ q AND session_id <> ${excluded}
          ORDER BY score DESC, id LIMIT ${size} OFFSET ${offset}`
      },
      // The best passages first, by the index alone; their sessions are read for those only.
      orElse: () => {
        const query = words.map((word) => `"${word}"`).join(any ? " OR " : " AND ")
        return sql`SELECT t.id, p.session_id, -t.rank AS score
          FROM (SELECT rowid AS id, rank FROM deep_research_passages_fts
            WHERE deep_research_passages_fts MATCH ${query}
              AND rank MATCH 'bm25(4.0, 1.0)'
              AND rowid NOT IN (SELECT id FROM deep_research_passages WHERE session_id = ${excluded})
            ORDER BY rank, rowid LIMIT ${size} OFFSET ${offset}) t
          JOIN deep_research_passages p ON p.id = t.id
          ORDER BY t.rank, t.id`
      }
    })
  ).pipe(patiently, orDie("cannot search the library"))

/** The passages of these ids, by id (one deleted meanwhile is missing). */
const passageRows = (sql: SqlClient.SqlClient, ids: ReadonlyArray<number>) =>
  decodeRows(PassageRow)(
    sql`SELECT id, session_id, source_id, url, title, position, text FROM deep_research_passages
      WHERE ${sql.in("id", ids)}`
  ).pipe(
    patiently,
    orDie("cannot search the library"),
    Effect.map((rows) => new Map(rows.map((row) => [row.id, row])))
  )

/**
 * The library's search over the store's passages. It ranks the matches a page at a time until it has `limit` passages
 * or the matches run out, and reads the text of the best it keeps only, so that neither a page that two sessions hold
 * (it comes back once, the best ranked) nor the passages of sessions the search may not reach (`reaches`) leave it with
 * fewer than `limit`.
 */
export const search =
  (library: Library): SourceLibrary.Service["search"] =>
  (terms, options = {}) =>
    Effect.gen(function* () {
      const words = SourceLibrary.termsOf(terms)
      if (words.length === 0) return yield* noTerms()
      const limit = Math.max(1, Math.min(Math.floor(options.limit ?? 10), SourceLibrary.maxResults))
      const any = options.match === "any"
      const excluded = options.excludeSession ?? ""
      const reaches = options.reaches
      const { sql } = library
      // Asked once a session: a session's many passages are reached, or not, together.
      const reached = new Map<string, boolean>()
      const seen = new Set<string>()
      const passages: Array<SourceLibrary.Passage> = []
      // More than asked at first (a page two sessions hold counts once).
      const batch = limit * 3
      for (let offset = 0, size = batch; passages.length < limit; offset += size, size = Math.min(size * 2, maxPage)) {
        const ranked = yield* rankedPage(sql, words, any, excluded, offset, size)
        if (reaches !== undefined) {
          const asked = [...new Set(ranked.map((row) => row.session_id))].filter((id) => !reached.has(id))
          yield* Effect.forEach(asked, (id) => Effect.map(reaches(id), (may) => reached.set(id, may)), {
            concurrency: 8,
            discard: true
          })
        }
        const kept = ranked.filter((row) => reached.get(row.session_id) !== false)
        for (let start = 0; start < kept.length && passages.length < limit; start += batch) {
          const matches = kept.slice(start, start + batch)
          const rows = yield* passageRows(
            sql,
            matches.map((match) => match.id)
          )
          for (const match of matches) {
            const row = rows.get(match.id)
            if (row === undefined) continue
            const key = `${row.url}\n${row.text}`
            if (seen.has(key)) continue
            seen.add(key)
            passages.push(
              new SourceLibrary.Passage({
                sessionId: row.session_id,
                sourceId: row.source_id,
                url: row.url,
                title: row.title,
                position: row.position,
                text: row.text,
                snippet: snippetOf(row.text, words),
                score: match.score
              })
            )
            if (passages.length >= limit) break
          }
        }
        if (ranked.length < size) break
      }
      return passages
    }).pipe(Effect.withSpan("SqlSessionStore.searchLibrary"))
