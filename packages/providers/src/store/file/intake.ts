/**
 * The file store's intake journal: how a session asked for is made durable before it is acknowledged, at the price of
 * one line appended to a file this process holds open, synced with the others of the same moment, instead of a
 * folder and its files made, each synced (a burst of 200 acknowledgements: BENCHMARKS.md, "`serve` under a burst").
 * The session's folder is made right after, by the store's usual writes; until it is, the session is read from here
 * (`load`, `list`), an artefact saved for it is journaled with it, and any other use of it waits for its folder.
 *
 * A journal is `<sessions>/.intake/<host>-<pid>-<token>.jsonl`, one record a line: a session's stored text, an
 * artefact's, or a session deleted. A store that opens finds the journals of processes of its host that no longer
 * run, claims each by renaming it, makes what each holds that is not on the disk yet (artefacts first, the session's
 * file last: the file is what makes a session listed), and removes the journal. A journal is removed once everything
 * journaled in it has its folder, and made again with the next session.
 */
import { Session } from "@deep-research/core"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as FiberId from "effect/FiberId"
import * as Schema from "effect/Schema"
import * as nodeFs from "node:fs"
import * as nodePath from "node:path"
import * as FolderSyncs from "./folderSyncs.js"
import type * as LockFile from "./lockFile.js"
import * as PoolGate from "./poolGate.js"

/** What the journal makes once the session's folder is due: the store's own durable writes. */
export interface Writes {
  readonly session: (id: string, text: string) => Effect.Effect<void>
  readonly artefact: (id: string, name: string, text: string) => Effect.Effect<void>
  /** Whether the session's folder holds this file already. */
  readonly holds: (id: string, name: string) => Effect.Effect<boolean>
}

export interface Options {
  /** The sessions folder; journals are kept in its `.intake` folder. */
  readonly directory: string
  readonly host: LockFile.Host
  readonly writes: Writes
  readonly sessionFileName: string
}

/** A session journaled and not yet in its folder. */
interface Pending {
  readonly session: Session.Session
  readonly text: string
  readonly artefacts: Array<readonly [name: string, text: string]>
  readonly written: Deferred.Deferred<void>
}

export interface Intake {
  /** Journals a session asked for (its stored text); returns once the journal is synced, its folder made after. */
  readonly accept: (session: Session.Session, text: string) => Effect.Effect<void>
  /** A session journaled whose folder is not made yet, if it is one. */
  readonly pending: (id: string) => Session.Session | undefined
  /** Journals an artefact of a pending session, made in its folder after the session; false when none is pending. */
  readonly artefact: (id: string, name: string, text: string) => Effect.Effect<boolean>
  /** The text of an artefact journaled for a pending session. */
  readonly journaledArtefact: (id: string, name: string) => string | undefined
  /** Waits until the session's folder holds what was journaled of it (at once when nothing is pending). */
  readonly settled: (id: string) => Effect.Effect<void>
  /** The sessions pending, for a listing. */
  readonly sessions: () => ReadonlyArray<Session.Session>
  /** Records that a session journaled here is deleted, so that no replay of the journal makes it again. */
  readonly forget: (id: string) => Effect.Effect<void>
}

/** A journal that cannot be written or synced is a failure of the store, as a session file that cannot be. */
const failed = (file: string) => (cause: unknown) =>
  new Error(`FileSessionStore: cannot write ${file}: ${cause instanceof Error ? cause.message : String(cause)}`, {
    cause
  })

type JournalRecord =
  | { readonly session: string; readonly text: string }
  | { readonly artefact: string; readonly of: string; readonly text: string }
  | { readonly gone: string }

const folderName = ".intake"

const isSessionId = Schema.is(Session.SessionId)

const journalName = (host: LockFile.Host, token: string) => `${host.hostname}-${host.pid}-${token}.jsonl`

/**
 * The journals this process writes or replays, by token, over all its stores: a journal naming this process's pid
 * with none of these tokens was left by an earlier process that had the same pid (a restarted container), and is
 * replayed; one of these is never touched by another store of the process.
 */
const journalsHere = new Set<string>()

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

/** A callback into the thread pool through the store's gate, ahead of running sessions' calls. */
const pooled = (call: (done: (error: NodeJS.ErrnoException | null) => void) => void): Effect.Effect<void, unknown> =>
  Effect.async<void, unknown>((resume) => {
    const withdraw = PoolGate.node.enter(true, (done) =>
      call((error) => {
        done()
        resume(error === null ? Effect.void : Effect.fail(error))
      })
    )
    return Effect.sync(withdraw)
  })

const syncFolder = (folder: string) =>
  Effect.suspend(() => {
    const fd = nodeFs.openSync(folder, "r")
    return Effect.ensuring(
      pooled((done) => nodeFs.fsync(fd, done)),
      Effect.sync(() => nodeFs.closeSync(fd))
    )
  })

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

/** Makes what a journal holds that is not on the disk yet; sessions deleted since are left deleted. */
const replay = (options: Options, records: ReadonlyArray<JournalRecord>) =>
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
      if (gone.has(id) || !isSessionId(id)) continue
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
const recover = (options: Options, folder: string, token: string) =>
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
      replayed += yield* replay(options, recordsOf(text))
      yield* Effect.sync(() => nodeFs.unlinkSync(claimed))
    }
    if (replayed > 0) yield* Effect.orDie(syncFolder(folder))
    return replayed
  })

/** Makes the folders of `target` that are missing; gives the folders whose entries changed (to sync). */
const makeFolders = (target: string): ReadonlyArray<string> => {
  const missing: Array<string> = []
  for (let at = target; !nodeFs.existsSync(at); at = nodePath.dirname(at)) {
    missing.unshift(at)
    if (nodePath.dirname(at) === at) break
  }
  for (const folder of missing) {
    try {
      nodeFs.mkdirSync(folder, { mode: 0o700 })
    } catch (error) {
      if (!(error instanceof Error && "code" in error && error.code === "EEXIST")) throw error
    }
  }
  return missing.map((folder) => nodePath.dirname(folder))
}

/**
 * This process's journal file: made with its first record (its folder and the folders made for it synced, so that
 * the file survives a crash), appended and synced, and removed once everything it held has folders.
 */
const journalFile = (folder: string, file: string) => {
  let current: { readonly fd: number; readonly ready: Deferred.Deferred<void> } | undefined
  const syncs = FolderSyncs.make((path: string) =>
    pooled((done) => nodeFs.fdatasync(current?.fd ?? -1, done)).pipe(Effect.orDieWith(failed(path)))
  )

  /** The open file; made at the first call, which the calls of the same moment wait for. */
  const opened = Effect.suspend((): Effect.Effect<number> => {
    if (current !== undefined) return Effect.as(Deferred.await(current.ready), current.fd)
    let fd: number
    let changed: ReadonlyArray<string>
    try {
      changed = makeFolders(folder)
      fd = nodeFs.openSync(file, "a", 0o600)
    } catch (error) {
      return Effect.die(failed(file)(error))
    }
    const ready = Deferred.unsafeMake<void>(FiberId.none)
    current = { fd, ready }
    const synced = Effect.forEach(new Set([folder, ...changed]), syncFolder, { discard: true })
    return Deferred.complete(ready, Effect.orDieWith(synced, failed(folder))).pipe(
      Effect.zipRight(Deferred.await(ready)),
      Effect.as(fd)
    )
  })

  /** Appends a record and returns once a sync begun after it has ended. */
  const append = (record: JournalRecord) =>
    Effect.gen(function* () {
      const into = yield* opened
      yield* Effect.orDieWith(
        Effect.try(() => void nodeFs.writeSync(into, `${JSON.stringify(record)}\n`)),
        failed(file)
      )
      yield* syncs(file)
    })

  /**
   * Removes the file, all it held being in folders (not synced: a replay makes nothing that is on the disk already);
   * false when it cannot.
   */
  const remove = (): boolean => {
    if (current === undefined) return false
    try {
      nodeFs.closeSync(current.fd)
      nodeFs.unlinkSync(file)
      return true
    } catch {
      return false
    } finally {
      current = undefined
    }
  }

  return { append, remove }
}

/** What the journal of a process keeps track of. */
interface State {
  readonly file: ReturnType<typeof journalFile>
  readonly writes: Writes
  readonly pending: Map<string, Pending>
  /** The sessions whose records the file holds (until it is emptied): a deletion of one is journaled too. */
  readonly journaled: Set<string>
  /** Records written and not yet answered for: the file is emptied only when none is and nothing is pending. */
  inFlight: number
}

const emptyIfDone = (state: State) =>
  Effect.sync(() => {
    if (state.pending.size === 0 && state.inFlight === 0 && state.file.remove()) state.journaled.clear()
  })

/** Counts a record in flight while `effect` runs. */
const counted = <A, E>(state: State, effect: Effect.Effect<A, E>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => state.inFlight++),
    () => effect,
    () =>
      Effect.zipRight(
        Effect.sync(() => state.inFlight--),
        emptyIfDone(state)
      )
  )

/**
 * Makes a pending session's folder: its file, then the artefacts journaled for it, those journaled meanwhile too. It is
 * no longer pending from the step that finds no artefact left, so that one journaled after is written by its caller.
 */
const makeFolder = (state: State, id: string, entry: Pending) =>
  Effect.gen(function* () {
    yield* state.writes.session(id, entry.text)
    while (true) {
      const next = yield* Effect.sync(() => {
        const artefact = entry.artefacts.shift()
        if (artefact === undefined) state.pending.delete(id)
        return artefact
      })
      if (next === undefined) break
      yield* state.writes.artefact(id, next[0], next[1])
    }
  }).pipe(
    // Kept in the journal: the next store to open after this process makes it.
    Effect.tapErrorCause((cause) => Effect.logError(`the folder of session ${id} could not be made`, cause)),
    Effect.ensuring(
      Effect.sync(() => state.pending.get(id) === entry && state.pending.delete(id)).pipe(
        Effect.zipRight(Deferred.succeed(entry.written, undefined)),
        Effect.zipRight(emptyIfDone(state))
      )
    )
  )

const accept = (state: State) => (session: Session.Session, text: string) =>
  counted(
    state,
    Effect.gen(function* () {
      yield* state.file.append({ session: session.id, text })
      state.journaled.add(session.id)
      const entry: Pending = { session, text, artefacts: [], written: yield* Deferred.make<void>() }
      state.pending.set(session.id, entry)
      yield* Effect.forkDaemon(makeFolder(state, session.id, entry))
    })
  )

const artefact = (state: State) => (id: string, name: string, text: string) =>
  Effect.suspend(() => {
    const entry = state.pending.get(id)
    if (entry === undefined) return Effect.succeed(false)
    return counted(
      state,
      Effect.zipRight(
        state.file.append({ artefact: name, of: id, text }),
        // Made by the folder's maker if it still runs; else by the caller, the folder being there.
        Effect.sync(() => {
          if (state.pending.get(id) !== entry) return false
          entry.artefacts.push([name, text])
          return true
        })
      )
    )
  })

/** The journal of this process, once what stopped processes journaled is made. */
export const make = (options: Options): Effect.Effect<Intake> =>
  Effect.gen(function* () {
    const folder = nodePath.join(options.directory, folderName)
    const token = Math.random().toString(36).slice(2, 10)
    journalsHere.add(token)
    const replayed = yield* recover(options, folder, token)
    if (replayed > 0) yield* Effect.logInfo(`made ${replayed} session(s) a stopped process had journaled in ${folder}`)
    const state: State = {
      file: journalFile(folder, nodePath.join(folder, journalName(options.host, token))),
      writes: options.writes,
      pending: new Map(),
      journaled: new Set(),
      inFlight: 0
    }
    return {
      accept: accept(state),
      pending: (id) => state.pending.get(id)?.session,
      artefact: artefact(state),
      journaledArtefact: (id, name) => state.pending.get(id)?.artefacts.find(([known]) => known === name)?.[1],
      settled: (id) => {
        const entry = state.pending.get(id)
        return entry === undefined ? Effect.void : Deferred.await(entry.written)
      },
      sessions: () => [...state.pending.values()].map((entry) => entry.session),
      forget: (id) => (state.journaled.has(id) ? counted(state, state.file.append({ gone: id })) : Effect.void)
    }
  })
