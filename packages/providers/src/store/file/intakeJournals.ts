/**
 * The journals of the file store's intake (`intake.ts`) as files: their names (who writes each), their records, and
 * what a store that opens makes of those left by processes of its host that stopped (`recover`). A session deleted
 * while another running process's journal may still hold it gets a tombstone (`<id>.gone` beside the journals), so
 * that no replay makes it again; a tombstone goes once no journal names the session.
 */
import { Session } from "@deep-research/core"
import type { PlatformError } from "@effect/platform/Error"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as nodeFs from "node:fs"
import * as nodePath from "node:path"
import { orDieWith } from "./fileErrors.js"
import type * as LockFile from "./lockFile.js"
import { attempt } from "./nativeFiles.js"

/** What the journal makes once the session's folder is due: the store's own durable writes. */
export interface Writes {
  readonly session: (id: string, text: string) => Effect.Effect<void>
  readonly artefact: (id: string, name: string, text: string) => Effect.Effect<void>
  /** Whether the session's folder holds this file already. */
  readonly holds: (id: string, name: string) => Effect.Effect<boolean>
}

/** The store's own folder calls: folders made with their parents synced, and a folder's (group-committed) sync. */
export interface Folders {
  readonly make: (folder: string) => Effect.Effect<void, PlatformError>
  readonly sync: (folder: string) => Effect.Effect<void>
}

/** What a replay needs: who replays, the store's writes and folder calls, the name of a session's file. */
export interface ReplayOptions {
  readonly host: LockFile.Host
  readonly writes: Writes
  readonly folders: Folders
  readonly sessionFileName: string
}

export type JournalRecord =
  | { readonly session: string; readonly text: string }
  | { readonly artefact: string; readonly of: string; readonly text: string }
  | { readonly gone: string }

export const folderName = ".intake"

const isSessionId = Schema.is(Session.SessionId)

export const journalName = (host: LockFile.Host, token: string) => `${host.hostname}-${host.pid}-${token}.jsonl`

/**
 * The journals this process writes or replays, by token, over all its stores: a journal naming this process's pid
 * with none of these tokens was left by an earlier process that had the same pid (a restarted container), and is
 * replayed; one of these is never touched by another store of the process.
 */
export const journalsHere = new Set<string>()

/** Who a journal's name says writes it (or replays it): host, pid and token; undefined for a name no journal has. */
const ownerOf = (
  name: string
): { readonly hostname: string; readonly pid: number; readonly token: string } | undefined => {
  const match = /^(.+)-(\d+)-([a-z0-9]+)\.jsonl(?:\.replaying-(\d+)-([a-z0-9]+))?$/.exec(name)
  if (match === null) return undefined
  return match[4] === undefined
    ? { hostname: match[1] ?? "", pid: Number(match[2]), token: match[3] ?? "" }
    : { hostname: match[1] ?? "", pid: Number(match[4]), token: match[5] ?? "" }
}

/** Whether a journal is still being written or replayed: by this process, or by another that runs. */
const inUse = (host: LockFile.Host, owner: { readonly pid: number; readonly token: string }) =>
  owner.pid === host.pid ? journalsHere.has(owner.token) : host.isAlive(owner.pid)

/** The records of a journal's text; a last line cut short by a crash is no record. */
const recordsOf = (text: string): ReadonlyArray<JournalRecord> =>
  text.split("\n").flatMap((line) => {
    if (line.trim() === "") return []
    try {
      return [JSON.parse(line) as JournalRecord]
    } catch {
      return []
    }
  })

/** Where a session deleted while a journal of another process may hold it is marked so. */
const tombstoneOf = (folder: string, id: string) => nodePath.join(folder, `${id}.gone`)

/** Whether a journal of another process (running or stopped) holds the session's record. */
export const heldElsewhere = (folder: string, ownFile: string, id: string): boolean => {
  let names: ReadonlyArray<string>
  try {
    names = nodeFs.readdirSync(folder)
  } catch {
    return false
  }
  const record = `"session":${JSON.stringify(id)}`
  return names.some((name) => {
    const file = nodePath.join(folder, name)
    if (ownerOf(name) === undefined || file === ownFile) return false
    try {
      return nodeFs.readFileSync(file, "utf8").includes(record)
    } catch {
      return false
    }
  })
}

/** Leaves a tombstone for a session being deleted, synced: no replay of another process's journal makes it again. */
export const bury = (folders: Folders, folder: string, id: string): Effect.Effect<void> =>
  attempt("writeFile", tombstoneOf(folder, id), () =>
    nodeFs.writeFileSync(tombstoneOf(folder, id), "", { mode: 0o600 })
  ).pipe(orDieWith(`cannot write ${tombstoneOf(folder, id)}`), Effect.zipRight(folders.sync(folder)))

/** Removes the tombstones no journal needs any more (none holds their session). */
const clearTombstones = (folder: string, names: ReadonlyArray<string>) =>
  Effect.sync(() => {
    for (const name of names) {
      if (!name.endsWith(".gone")) continue
      const id = name.slice(0, -".gone".length)
      if (heldElsewhere(folder, "", id)) continue
      try {
        nodeFs.unlinkSync(nodePath.join(folder, name))
      } catch {
        // Gone already.
      }
    }
  })

/** Makes what a journal holds that is not on the disk yet; sessions deleted since are left deleted. */
const replay = (options: ReplayOptions, folder: string, records: ReadonlyArray<JournalRecord>) =>
  Effect.gen(function* () {
    const gone = new Set(records.flatMap((record) => ("gone" in record ? [record.gone] : [])))
    const sessions = new Map<string, string>()
    const artefacts = new Map<string, Array<readonly [string, string]>>()
    for (const record of records) {
      if ("session" in record) sessions.set(record.session, record.text)
      else if ("artefact" in record) {
        const list = artefacts.get(record.of) ?? []
        list.push([record.artefact, record.text])
        artefacts.set(record.of, list)
      }
    }
    for (const [id, text] of sessions) {
      if (gone.has(id) || !isSessionId(id) || nodeFs.existsSync(tombstoneOf(folder, id))) continue
      for (const [name, artefactText] of artefacts.get(id) ?? []) {
        if (!(yield* options.writes.holds(id, name))) yield* options.writes.artefact(id, name, artefactText)
      }
      if (!(yield* options.writes.holds(id, options.sessionFileName))) yield* options.writes.session(id, text)
    }
    return sessions.size
  })

/**
 * Replays and removes the journals left by processes of this host that no longer run (and replays a replay they left
 * unfinished), each claimed first by a rename, so that two stores opening at once never replay the same one.
 */
export const recover = (options: ReplayOptions, folder: string, token: string) =>
  Effect.gen(function* () {
    const names = yield* Effect.sync(() => {
      try {
        return nodeFs.readdirSync(folder)
      } catch {
        return []
      }
    })
    let replayed = 0
    for (const name of names) {
      const owner = ownerOf(name)
      if (owner === undefined || owner.hostname !== options.host.hostname) continue
      if (inUse(options.host, owner)) continue
      const claimed = nodePath.join(
        folder,
        `${name.replace(/\.replaying-.*$/, "")}.replaying-${options.host.pid}-${token}`
      )
      const taken = yield* Effect.sync(() => {
        try {
          nodeFs.renameSync(nodePath.join(folder, name), claimed)
          return true
        } catch {
          // Another store claimed it first.
          return false
        }
      })
      if (!taken) continue
      const text = yield* Effect.sync(() => nodeFs.readFileSync(claimed, "utf8"))
      replayed += yield* replay(options, folder, recordsOf(text))
      yield* Effect.sync(() => nodeFs.unlinkSync(claimed))
    }
    if (replayed > 0) yield* options.folders.sync(folder)
    yield* clearTombstones(folder, names)
    return replayed
  })
