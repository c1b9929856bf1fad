/**
 * The PostgreSQL store's schema, as versioned migrations run by `@effect/sql`'s Migrator. A migration, once
 * released, is never edited: a change is a new migration with the next number.
 *
 * Several processes may start at once on an empty database: the migrations run under a transaction-scoped advisory
 * lock, so one creates the tables and the others wait and find them made.
 */
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"

/** The table in which the Migrator records the migrations it ran. */
export const migrationsTable = "deep_research_migrations"

/** An arbitrary constant naming the advisory lock held while migrating ("deep-res" in ASCII). */
const migrationLockKey = "7234028773431587699"

const createTables = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE deep_research_sessions (
    id text PRIMARY KEY,
    version integer NOT NULL,
    data jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
  )`
  yield* sql`CREATE TABLE deep_research_events (
    session_id text NOT NULL,
    seq bigserial NOT NULL,
    data jsonb NOT NULL,
    PRIMARY KEY (session_id, seq)
  )`
  yield* sql`CREATE TABLE deep_research_reports (
    session_id text PRIMARY KEY,
    markdown text NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
  )`
  yield* sql`CREATE TABLE deep_research_artefacts (
    session_id text NOT NULL,
    name text NOT NULL,
    content text NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (session_id, name)
  )`
  yield* sql`CREATE TABLE deep_research_locks (
    session_id text PRIMARY KEY,
    token text NOT NULL,
    holder text NOT NULL,
    since timestamptz NOT NULL DEFAULT now()
  )`
  yield* sql`CREATE TABLE deep_research_corrupt_sessions (
    session_id text NOT NULL,
    moved_at timestamptz NOT NULL DEFAULT now(),
    reason text NOT NULL,
    data jsonb
  )`
})

/** Every migration, by number. */
export const migrations = Migrator.fromRecord({
  "1_create_tables": createTables
})

const migrator = Migrator.make({})

/** Brings the schema up to date; returns the migrations that ran. */
export const migrate: Effect.Effect<
  ReadonlyArray<readonly [id: number, name: string]>,
  Migrator.MigrationError | SqlError,
  SqlClient.SqlClient
> = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  // The Migrator would probe for its table with a query that fails when it is missing, which aborts the enclosing
  // transaction: the table is made first, with the Migrator's own columns.
  return yield* sql.withTransaction(
    Effect.gen(function* () {
      yield* sql`SELECT pg_advisory_xact_lock(${migrationLockKey}::bigint)`
      yield* sql`CREATE TABLE IF NOT EXISTS ${sql(migrationsTable)} (
        migration_id integer primary key,
        created_at timestamp with time zone not null default now(),
        name text not null
      )`
      return yield* migrator({ loader: migrations, table: migrationsTable })
    })
  )
})
