/**
 * The file store's intake journal: how a session asked for is made durable before it is acknowledged, at the price of
 * one line appended to a file this process holds open, synced with the others of the same moment, instead of a
 * folder and its files made, each synced (a burst of 200 acknowledgements: BENCHMARKS.md, "`serve` under a burst").
 * The session's folder is made right after, by the store's usual writes; until it is, the session is read from here
 * (`load`, `list`), an artefact saved for it is journaled with it, and any other use of it waits for its folder.
 *
 * A journal is `<sessions>/.intake/<host>-<pid>-<token>.jsonl`, one record a line: a session's stored text, an
 * artefact's, or a session deleted; it is removed once everything journaled in it has its folder, and made again with
 * the next session. A store that opens makes what the journals of stopped processes hold (`intakeJournals.ts`).
 */
import { Session } from "@deep-research/core"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as FiberId from "effect/FiberId"
import * as nodeFs from "node:fs"
import * as nodePath from "node:path"
import { orDieWith } from "./fileErrors.js"
import * as FolderSyncs from "./folderSyncs.js"
import {
  bury,
  type Folders,
  heldElsewhere,
  folderName,
  type JournalRecord,
  journalName,
  journalsHere,
  recover,
  type ReplayOptions
} from "./intakeJournals.js"
import * as NativeFiles from "./nativeFiles.js"
import * as PoolGate from "./poolGate.js"

export type { Writes } from "./intakeJournals.js"

export interface Options extends ReplayOptions {
  /** The sessions folder; journals are kept in its `.intake` folder. */
  readonly directory: string
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
  /**
   * Records that a session is being deleted, so that no replay makes it again: in this process's journal if it holds
   * the session, and as a tombstone if another process's journal does. Called before the folder is removed.
   */
  readonly forget: (id: string) => Effect.Effect<void>
}

/**
 * This process's journal file: made with its first record (its folder and the folders made for it synced, so that
 * the file survives a crash), appended and synced, and removed once everything it held has folders.
 */
const journalFile = (folders: Folders, folder: string, file: string) => {
  // The descriptor once the file is made; `opening` while it is being made (or is), shared by the callers meanwhile.
  let fd: number | undefined
  let opening: Deferred.Deferred<number> | undefined
  // A sync of the journal goes into the thread pool first in line, as a session being created does.
  const syncs = FolderSyncs.make(() =>
    PoolGate.asCreating(
      NativeFiles.pooled<void>("sync", file, (done) => nodeFs.fdatasync(fd ?? -1, (error) => done(error, undefined)))
    ).pipe(orDieWith(`cannot sync ${file}`))
  )

  /** The open file: its folder made (each new folder's parent synced), the file opened, the folder synced. */
  const opened = Effect.suspend((): Effect.Effect<number> => {
    if (opening !== undefined) return Deferred.await(opening)
    const made = Deferred.unsafeMake<number>(FiberId.none)
    opening = made
    const open = folders.make(folder).pipe(
      Effect.zipRight(NativeFiles.attempt("open", file, () => nodeFs.openSync(file, "a", 0o600))),
      orDieWith(`cannot write ${file}`),
      Effect.tap((opened) =>
        Effect.zipRight(
          Effect.sync(() => void (fd = opened)),
          folders.sync(folder)
        )
      ),
      // A failure is every waiting caller's; the next caller tries again.
      Effect.tapErrorCause(() => Effect.sync(() => void (opening = undefined)))
    )
    return Effect.zipRight(Deferred.complete(made, open), Deferred.await(made))
  })

  /** Appends a record and returns once a sync begun after it has ended. */
  const append = (record: JournalRecord) =>
    Effect.gen(function* () {
      const into = yield* opened
      yield* NativeFiles.attempt("write", file, () => void nodeFs.writeSync(into, `${JSON.stringify(record)}\n`)).pipe(
        orDieWith(`cannot write ${file}`)
      )
      yield* syncs(file)
    })

  /**
   * Removes the file, all it held being in folders (not synced: a replay makes nothing that is on the disk already);
   * false when it cannot.
   */
  const remove = (): boolean => {
    if (fd === undefined) return false
    try {
      nodeFs.closeSync(fd)
      nodeFs.unlinkSync(file)
      return true
    } catch {
      return false
    } finally {
      fd = undefined
      opening = undefined
    }
  }

  return { append, remove }
}

/** What the journal of a process keeps track of. */
interface State {
  readonly file: ReturnType<typeof journalFile>
  readonly writes: ReplayOptions["writes"]
  readonly pending: Map<string, Pending>
  /** The sessions whose records the file holds (until it is removed): a deletion of one is journaled too. */
  readonly journaled: Set<string>
  /** Records written and not yet answered for: the file is removed only when none is and nothing is pending. */
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
    const file = nodePath.join(folder, journalName(options.host, token))
    const replayed = yield* recover(options, folder, token)
    if (replayed > 0) yield* Effect.logInfo(`made ${replayed} session(s) a stopped process had journaled in ${folder}`)
    const state: State = {
      file: journalFile(options.folders, folder, file),
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
      forget: (id) =>
        Effect.zipRight(
          state.journaled.has(id) ? counted(state, state.file.append({ gone: id })) : Effect.void,
          Effect.suspend(() => (heldElsewhere(folder, file, id) ? bury(options.folders, folder, id) : Effect.void))
        )
    }
  })
