/**
 * The sessions of another store's SQLite database brought into this store: how a store moves to PostgreSQL (or two
 * machines' stores become one). Each session comes whole (its checkpoint, events, report and named artefacts) through
 * the store's own operations, so the library indexes its sources as it is saved; a session the store holds already is
 * left as it is, and one that cannot be read is named with why. The other database is only read.
 */
import type * as SessionStore from "@deep-research/core/SessionStore"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { importSession } from "./importedSession.js"
import { decodeRows, messageOf, orDie, patiently } from "./sqlDatabase.js"

/** What an import did: the sessions it brought, those the store held already, and those it could not read (with why). */
export interface Imported {
  readonly imported: number
  readonly present: number
  readonly unreadable: ReadonlyArray<string>
  /** The sessions it brought that were queued or running: a run (`resume`, or a server's takeover) finishes them. */
  readonly unfinished: ReadonlyArray<string>
}

/** The other database could not be read as a store's: said with its path. */
export class ImportUnreadable extends Schema.TaggedError<ImportUnreadable>()("ImportUnreadable", {
  path: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `cannot import the sessions of ${this.path}: ${this.reason}`
  }
}

/** The database file a path names: the file itself, or the `deep-research.db` of a store folder. */
export const importedFile = (path: string): string => {
  const resolved = nodePath.resolve(path)
  return fs.existsSync(resolved) && fs.statSync(resolved).isDirectory()
    ? nodePath.join(resolved, "deep-research.db")
    : resolved
}

/** A query's rows, decoded; a failure that lasts is a defect saying what could not be read. */
const rowsOf = <A, I>(
  what: string,
  schema: Schema.Schema<A, I>,
  query: Effect.Effect<ReadonlyArray<unknown>, SqlError>
) => orDie(what)(patiently(decodeRows(schema)(query)))

/** What the other database holds of a session, as an import takes it. */
const foundIn = (sql: SqlClient.SqlClient, id: string, text: string) =>
  Effect.gen(function* () {
    const events = yield* rowsOf(
      `cannot read the events of session ${id}`,
      Schema.Struct({ data: Schema.String }),
      sql`SELECT data FROM deep_research_events WHERE session_id = ${id} ORDER BY seq`
    )
    const reports = yield* rowsOf(
      `cannot read the report of session ${id}`,
      Schema.Struct({ markdown: Schema.String }),
      sql`SELECT markdown FROM deep_research_reports WHERE session_id = ${id}`
    )
    const artefacts = yield* rowsOf(
      `cannot read the artefacts of session ${id}`,
      Schema.Struct({ name: Schema.String, content: Schema.String }),
      sql`SELECT name, content FROM deep_research_artefacts WHERE session_id = ${id} ORDER BY name`
    )
    return {
      from: "its row",
      text,
      events: events.map((row) => row.data),
      report: reports[0]?.markdown,
      artefacts: artefacts.map((row) => [row.name, row.content] as const)
    }
  })

/**
 * Imports every session of the store database the client in context reads (another store's `deep-research.db`, named
 * `file` in messages) into `store`.
 */
export const importSessions = (
  store: SessionStore.Service,
  file: string
): Effect.Effect<Imported, ImportUnreadable, SqlClient.SqlClient> =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const unreadable = (reason: string) => new ImportUnreadable({ path: file, reason })
    // Only read: the tables it reads are the first schema's, in every store's database since.
    const tables = yield* patiently(
      sql`SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'deep_research_sessions'`
    ).pipe(Effect.mapError((error) => unreadable(messageOf(error))))
    if (tables.length === 0)
      return yield* unreadable("it holds no deep-research sessions (a store's deep-research.db does)")
    const rows = yield* decodeRows(Schema.Struct({ id: Schema.String, data: Schema.String }))(
      sql`SELECT id, data FROM deep_research_sessions ORDER BY created_at, id`
    ).pipe(
      patiently,
      Effect.mapError((error) => unreadable(messageOf(error)))
    )
    let imported = 0
    let present = 0
    const failed: Array<string> = []
    const unfinished: Array<string> = []
    for (const row of rows) {
      const result = yield* Effect.either(importSession(store, row.id, foundIn(sql, row.id, row.data)))
      if (Either.isLeft(result)) failed.push(`${row.id} (${result.left})`)
      else if (result.right === undefined) present++
      else {
        imported++
        if (result.right === "queued" || result.right === "running") unfinished.push(row.id)
      }
    }
    return { imported, present, unreadable: failed, unfinished }
  })
