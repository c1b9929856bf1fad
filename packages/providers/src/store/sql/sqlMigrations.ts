/**
 * The session store's schema, one list of migrations for SQLite and PostgreSQL run by `@effect/sql`'s Migrator, the
 * dialects differing mostly in column types. A migration, once released, is never edited: a change is a new migration
 * with the next number. The first is the PostgreSQL store's schema as it was released, so that a cluster's database is
 * upgraded in place. Processes starting at once on an empty database migrate one at a time (`migrate`).
 */
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/** The table in which the Migrator records the migrations it ran. */
const migrationsTable = "deep_research_migrations"

/** An arbitrary constant naming the advisory lock held while migrating ("deep-res" in ASCII). */
const migrationLockKey = "7234028773431587699"

const createTables = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const json = sql.onDialectOrElse({ pg: () => sql.literal("jsonb"), orElse: () => sql.literal("TEXT") })
  const time = sql.onDialectOrElse({
    pg: () => sql.literal("timestamptz NOT NULL DEFAULT now()"),
    orElse: () => sql.literal("TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP")
  })
  yield* sql`CREATE TABLE deep_research_sessions (
    id text PRIMARY KEY,
    version integer NOT NULL,
    data ${json} NOT NULL,
    created_at ${time},
    updated_at ${time}
  )`
  // A log's order is its sequence: one sequence for every log, a session's events read by it.
  yield* sql.onDialectOrElse({
    pg: () => sql`CREATE TABLE deep_research_events (
      session_id text NOT NULL,
      seq bigserial NOT NULL,
      data jsonb NOT NULL,
      PRIMARY KEY (session_id, seq)
    )`,
    orElse: () =>
      Effect.zipRight(
        sql`CREATE TABLE deep_research_events (
          seq INTEGER PRIMARY KEY AUTOINCREMENT,
          session_id text NOT NULL,
          data TEXT NOT NULL
        )`,
        sql`CREATE INDEX deep_research_events_session ON deep_research_events (session_id, seq)`
      )
  })
  yield* sql`CREATE TABLE deep_research_reports (
    session_id text PRIMARY KEY,
    markdown text NOT NULL,
    updated_at ${time}
  )`
  yield* sql`CREATE TABLE deep_research_artefacts (
    session_id text NOT NULL,
    name text NOT NULL,
    content text NOT NULL,
    updated_at ${time},
    PRIMARY KEY (session_id, name)
  )`
  yield* sql`CREATE TABLE deep_research_locks (
    session_id text PRIMARY KEY,
    token text NOT NULL,
    holder text NOT NULL,
    since ${time}
  )`
  yield* sql`CREATE TABLE deep_research_corrupt_sessions (
    session_id text NOT NULL,
    moved_at ${time},
    reason text NOT NULL,
    data ${json}
  )`
})

/**
 * Holds as leases that expire (the first schema's advisory locks went with one connection, which an outage broke for
 * good), a summary per session for `list`, and a revision per checkpoint.
 */
const leasesAndSummaries = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`DROP TABLE deep_research_locks`
  yield* sql`CREATE TABLE deep_research_leases (
    session_id text PRIMARY KEY,
    owner text NOT NULL,
    token text NOT NULL,
    holder text NOT NULL,
    expires_at bigint NOT NULL
  )`
  yield* sql`CREATE INDEX deep_research_leases_owner ON deep_research_leases (owner)`
  yield* sql`ALTER TABLE deep_research_sessions ADD COLUMN status text`
  yield* sql`ALTER TABLE deep_research_sessions ADD COLUMN summary text`
  yield* sql.onDialectOrElse({
    pg: () => sql`UPDATE deep_research_sessions SET status = data->>'status'`,
    orElse: () => sql`UPDATE deep_research_sessions SET status = json_extract(data, '$.status')`
  })
  yield* sql`CREATE INDEX deep_research_sessions_status ON deep_research_sessions (status)`
  yield* sql`ALTER TABLE deep_research_sessions ADD COLUMN revision bigint NOT NULL DEFAULT 0`
  yield* sql`CREATE TABLE deep_research_imports (
    source text PRIMARY KEY,
    imported integer NOT NULL,
    unreadable integer NOT NULL,
    finished_at bigint NOT NULL
  )`
})

/**
 * The research library: stored sources as passages searched by full text (SQLite's FTS5 over an external-content
 * table, PostgreSQL's stored `tsvector`), with English stemming. The sessions already stored are listed to be indexed
 * when the store opens (`sqlLibrary.ts`): a migration must not depend on how a session is read.
 */
const library = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql.onDialectOrElse({
    pg: () =>
      Effect.zipRight(
        sql`CREATE TABLE deep_research_passages (
          id bigserial PRIMARY KEY,
          session_id text NOT NULL,
          source_id text NOT NULL,
          position integer NOT NULL,
          url text NOT NULL,
          title text NOT NULL,
          text text NOT NULL,
          search tsvector GENERATED ALWAYS AS (
            setweight(to_tsvector('english', title), 'A') || setweight(to_tsvector('english', text), 'B')
          ) STORED
        )`,
        sql`CREATE INDEX deep_research_passages_search ON deep_research_passages USING GIN (search)`
      ),
    orElse: () =>
      Effect.all(
        [
          sql`CREATE TABLE deep_research_passages (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id text NOT NULL,
            source_id text NOT NULL,
            position integer NOT NULL,
            url text NOT NULL,
            title text NOT NULL,
            text text NOT NULL
          )`,
          sql`CREATE VIRTUAL TABLE deep_research_passages_fts USING fts5(title, text,
            content = 'deep_research_passages', content_rowid = 'id',
            tokenize = 'porter unicode61 remove_diacritics 2')`,
          sql`CREATE TRIGGER deep_research_passages_added AFTER INSERT ON deep_research_passages BEGIN
            INSERT INTO deep_research_passages_fts (rowid, title, text) VALUES (new.id, new.title, new.text);
          END`,
          sql`CREATE TRIGGER deep_research_passages_removed AFTER DELETE ON deep_research_passages BEGIN
            INSERT INTO deep_research_passages_fts (deep_research_passages_fts, rowid, title, text)
              VALUES ('delete', old.id, old.title, old.text);
          END`
        ],
        { discard: true }
      )
  })
  yield* sql`CREATE INDEX deep_research_passages_session ON deep_research_passages (session_id, source_id)`
  yield* sql`CREATE TABLE deep_research_library_pending (session_id text PRIMARY KEY)`
  yield* sql`INSERT INTO deep_research_library_pending (session_id) SELECT id FROM deep_research_sessions`
})

/**
 * On SQLite, `list` reads its columns from an index: a row's columns after its JSON are reached through the JSON's
 * overflow pages, the whole database read for a listing. (PostgreSQL keeps a large JSON value out of its row.)
 */
const listingIndex = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.onDialectOrElse({
    pg: () => Effect.void,
    orElse: () =>
      Effect.asVoid(sql`CREATE INDEX deep_research_sessions_listing ON deep_research_sessions (id, status, summary)`)
  })
)

/** Every migration, by number. */
export const migrations = Migrator.fromRecord({
  "1_create_tables": createTables,
  "2_leases_and_summaries": leasesAndSummaries,
  "3_library": library,
  "4_listing_index": listingIndex
})

const migrator = Migrator.make({})

/**
 * Brings the schema up to date; returns the migrations that ran. One process at a time: on PostgreSQL under a
 * transaction-scoped advisory lock, on SQLite in one write transaction (`BEGIN IMMEDIATE`); the others wait, and find
 * the tables made.
 */
export const migrate = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  // The Migrator would probe for its table with a query that fails when it is missing, which aborts an enclosing
  // PostgreSQL transaction: the table is made first, with the Migrator's own columns.
  return yield* sql.withTransaction(
    Effect.gen(function* () {
      yield* sql.onDialectOrElse({
        pg: () =>
          Effect.zipRight(
            sql`SELECT pg_advisory_xact_lock(${migrationLockKey}::bigint)`,
            sql`CREATE TABLE IF NOT EXISTS ${sql(migrationsTable)} (
              migration_id integer primary key,
              created_at timestamp with time zone not null default now(),
              name text not null
            )`
          ),
        orElse: () => sql`CREATE TABLE IF NOT EXISTS ${sql(migrationsTable)} (
          migration_id integer PRIMARY KEY NOT NULL,
          created_at datetime NOT NULL DEFAULT current_timestamp,
          name VARCHAR(255) NOT NULL
        )`
      })
      return yield* migrator({ loader: migrations, table: migrationsTable })
    })
  )
})
