/**
 * Sessions of the earlier file store, brought into the database once: each `<sessions>/<id>/` folder (its
 * `session.json`, `events.jsonl`, `report.md` and named artefacts), and the sessions a stopped process had only
 * journaled (`<sessions>/.intake/*.jsonl`). The old folders are left where they are, for their owner to remove; the
 * database records that the folder was imported, so that it is read once. A session already in the database is left
 * as it is, and a session that cannot be read is named, with why, in the line that reports the import.
 */
import * as Session from "@deep-research/core/Session"
import * as SessionStore from "@deep-research/core/SessionStore"
import type * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { Dirent } from "node:fs"
import * as fs from "node:fs/promises"
import * as nodePath from "node:path"
import { importSession } from "./importedSession.js"
import { orDie, patiently } from "./sqlDatabase.js"

const JournalLine = Schema.parseJson(
  Schema.Union(
    Schema.Struct({ gone: Schema.String }),
    Schema.Struct({ session: Schema.String, text: Schema.String }),
    Schema.Struct({ artefact: Schema.String, of: Schema.String, text: Schema.String })
  )
)
const decodeLine = Schema.decodeUnknownOption(JournalLine)
const reservedFiles = new Set(["session.json", "events.jsonl", "report.md"])
const isSessionId = Schema.is(Session.SessionId)

const readText = (path: string) =>
  Effect.promise(() => fs.readFile(path, "utf8").then(Either.right, (error: unknown) => Either.left(error)))

const namesIn = (folder: string) => Effect.promise(() => fs.readdir(folder).catch(() => [] as Array<string>))

/** A session a stopped file store had only journaled: its checkpoint's text, and its artefacts by name. */
type Journaled = { readonly text: string; readonly artefacts: Map<string, string> }

/** The records of the journals a stopped file store left: sessions it had acknowledged before making their folders. */
const journaled = (directory: string) =>
  Effect.gen(function* () {
    const folder = nodePath.join(directory, ".intake")
    const names = yield* namesIn(folder)
    const sessions = new Map<string, Journaled>()
    const gone = new Set(names.filter((name) => name.endsWith(".gone")).map((name) => name.slice(0, -5)))
    for (const name of names.filter((name) => name.includes(".jsonl")).sort()) {
      const text = yield* readText(nodePath.join(folder, name))
      // A line cut short by a crash was never acknowledged: it does not decode, and is left out.
      for (const line of Either.getOrElse(text, () => "").split("\n")) {
        const record = Option.getOrUndefined(decodeLine(line))
        if (record === undefined) continue
        if ("gone" in record) gone.add(record.gone)
        else if ("session" in record) {
          sessions.set(record.session, {
            text: record.text,
            artefacts: sessions.get(record.session)?.artefacts ?? new Map()
          })
        } else sessions.get(record.of)?.artefacts.set(record.artefact, record.text)
      }
    }
    for (const id of sessions.keys()) if (gone.has(id) || !isSessionId(id)) sessions.delete(id)
    return sessions
  })

/** What a session's folder (or its journal record) holds, as an import takes it. */
const foundIn = (directory: string, id: string, fromJournal: Journaled | undefined) =>
  Effect.gen(function* () {
    const folder = nodePath.join(directory, id)
    const file = yield* readText(nodePath.join(folder, "session.json"))
    const text = Either.isRight(file) ? file.right : fromJournal?.text
    if (text === undefined)
      return yield* Effect.fail(
        Either.isLeft(file) && file.left instanceof Error ? file.left.message : "no session.json"
      )
    const events = yield* readText(nodePath.join(folder, "events.jsonl"))
    const report = yield* readText(nodePath.join(folder, "report.md"))
    const artefacts = new Map(fromJournal?.artefacts ?? [])
    for (const name of (yield* namesIn(folder)).filter((name) => !reservedFiles.has(name))) {
      const content = yield* readText(nodePath.join(folder, name))
      if (Either.isRight(content)) artefacts.set(name, content.right)
    }
    // A file whose name no artefact may have is left out.
    const named = yield* Effect.filter([...artefacts], ([name]) =>
      Effect.isSuccess(SessionStore.validateArtefactName(name))
    )
    return {
      from: "its session.json",
      text,
      // A torn last line is left out, as the file store left it out when reading.
      events: Either.getOrElse(events, () => "")
        .split("\n")
        .filter((line) => line.trim() !== ""),
      report: Either.getOrUndefined(report),
      artefacts: named
    }
  })

/**
 * Imports the sessions of a file store's folder, once for the database: a second call (this process's or another's)
 * finds the import recorded and reads nothing. Logs one line of what it did.
 */
export const importOnce = (sql: SqlClient.SqlClient, store: SessionStore.Service, directory: string) =>
  Effect.gen(function* () {
    const source = nodePath.resolve(directory)
    const done = yield* sql`SELECT source FROM deep_research_imports WHERE source = ${source}`.pipe(
      patiently,
      orDie("cannot read which file stores were imported")
    )
    if (done.length > 0) return
    const entries = yield* Effect.promise(() =>
      fs.readdir(source, { withFileTypes: true }).catch(() => [] as Array<Dirent>)
    )
    const folders = entries.filter((entry) => entry.isDirectory() && isSessionId(entry.name)).map((e) => e.name)
    const journal = yield* journaled(source)
    const ids = [...new Set([...folders, ...journal.keys()])].sort()
    let imported = 0
    const unreadable: Array<string> = []
    for (const id of ids) {
      const result = yield* Effect.either(importSession(store, id, foundIn(source, id, journal.get(id))))
      if (Either.isLeft(result)) unreadable.push(`${id} (${result.left})`)
      else if (result.right !== undefined) imported++
    }
    yield* sql`INSERT INTO deep_research_imports (source, imported, unreadable, finished_at)
      VALUES (${source}, ${imported}, ${unreadable.length}, ${Date.now()})
      ON CONFLICT (source) DO NOTHING`.pipe(patiently, orDie("cannot record the import of the file store"))
    if (ids.length > 0) {
      yield* Effect.logWarning(
        `SqlSessionStore: imported ${imported} session(s) of the earlier file store at ${source}` +
          (unreadable.length === 0 ? "" : `; ${unreadable.length} could not be read: ${unreadable.join("; ")}`) +
          ". The old folders are left in place: remove them once you no longer need them."
      )
    }
  })
