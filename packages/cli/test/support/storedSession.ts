/**
 * What the session database of a store folder holds about a session, read as another process would (SQLite's own
 * client), for tests that check what was written: the session's JSON, its event log, its report and its
 * artefacts, under the names the stored parts had as files.
 */
import Database from "libsql"
import * as fs from "node:fs"
import * as nodePath from "node:path"

const databaseOf = (storeDir: string) => nodePath.join(storeDir, "deep-research.db")

const reading = <A>(storeDir: string, read: (db: Database.Database) => A): A => {
  const db = new Database(databaseOf(storeDir))
  try {
    return read(db)
  } finally {
    db.close()
  }
}

const texts = (db: Database.Database, sql: string, ...params: ReadonlyArray<string>): Array<string> =>
  (
    db
      .prepare(sql)
      .raw(true)
      .all(...params) as Array<Array<unknown>>
  ).map((row) => String(row[0]))

/** The ids of the sessions stored, oldest row first. */
export const storedIds = (storeDir: string): Array<string> =>
  fs.existsSync(databaseOf(storeDir))
    ? reading(storeDir, (db) => texts(db, "SELECT id FROM deep_research_sessions ORDER BY rowid"))
    : []

/**
 * The stored parts of a session: `session.json` (its checkpoint), `events.jsonl` (its log, a line an event),
 * `report.md` and each artefact by name; a part the session does not have is absent.
 */
export const storedFiles = (storeDir: string, id: string): Record<string, string> =>
  reading(storeDir, (db) => {
    const files: Record<string, string> = {}
    const [session] = texts(db, "SELECT data FROM deep_research_sessions WHERE id = ?", id)
    if (session !== undefined) files["session.json"] = session
    const events = texts(db, "SELECT data FROM deep_research_events WHERE session_id = ? ORDER BY seq", id)
    if (events.length > 0) files["events.jsonl"] = `${events.join("\n")}\n`
    const [report] = texts(db, "SELECT markdown FROM deep_research_reports WHERE session_id = ?", id)
    if (report !== undefined) files["report.md"] = report
    const artefacts = db
      .prepare("SELECT name, content FROM deep_research_artefacts WHERE session_id = ?")
      .raw(true)
      .all(id) as Array<Array<unknown>>
    for (const [name, content] of artefacts) files[String(name)] = String(content)
    return files
  })
