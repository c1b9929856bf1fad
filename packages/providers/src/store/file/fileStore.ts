/**
 * The file store's operations (`FileSessionStore` is its public face): small functions over one `Store` record, which
 * holds what the store knows (its folder, the files and folders it made or holds open, each session's writer) and the
 * parts it writes through (atomic files, the event log, lock files, leftovers, the intake journal when it keeps one).
 * Each operation is named for what it does; a run's lock and a deletion are in `sessionLocks.ts`;
 * `FileSessionStore.make` builds the record and hands the operations out as the `SessionStore`.
 */
import { Errors, ResearchEvents, Session, SessionStore } from "@deep-research/core"
import type * as FileSystem from "@effect/platform/FileSystem"
import type * as Path from "@effect/platform/Path"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import type { makeScrubbed } from "../secretScrubber.js"
import * as AtomicFiles from "./atomicFiles.js"
import * as EventLog from "./eventLog.js"
import { isNotFound, orDieWith } from "./fileErrors.js"
import * as HeldHandles from "./heldHandles.js"
import type * as Intake from "./intake.js"
import * as Leftovers from "./leftovers.js"
import * as LockFile from "./lockFile.js"
import type * as NativeFiles from "./nativeFiles.js"
import * as PoolGate from "./poolGate.js"
import * as SessionFile from "./sessionFile.js"
import * as SessionSummaries from "./sessionSummaries.js"
import * as SessionWriters from "./sessionWriters.js"

export const sessionFileName = "session.json"
const eventsFileName = "events.jsonl"
const reportFileName = "report.md"
export const lockFileName = "lock"

const isSessionId = Schema.is(Session.SessionId)

/** Refuses anything that could name another path before the disk is touched. */
export const validate = Session.validateId

/** What a file store is made of. */
export interface Setup {
  readonly fs: FileSystem.FileSystem
  readonly path: Path.Path
  readonly host: LockFile.Host
  /** The folder of the sessions' folders, resolved. */
  readonly directory: string
  /** The hot file calls: the system's own when given, the FileSystem's otherwise. */
  readonly files: NativeFiles.NativeFiles
  readonly scrubbed: ReturnType<typeof makeScrubbed>
  readonly writeSync: EventLog.WriteSync | undefined
}

/** What the store knows and the parts it writes through. */
export interface Store extends Setup {
  readonly atomic: AtomicFiles.AtomicFiles
  readonly lockFiles: ReturnType<typeof LockFile.make>
  /** Session folders this store has made: made once, not before every write. */
  readonly knownDirectories: Set<string>
  readonly serially: SessionWriters.SessionWriters
  /** A held session's folder stays open: a checkpoint's rename is made durable by one sync, not an open and a close. */
  readonly folders: HeldHandles.HeldHandles
  readonly eventLog: EventLog.EventLog
  /** How the store last saw each session's file; forgotten when a run lets the session go. */
  readonly sessionFiles: ReturnType<typeof SessionFile.known>
  readonly leftovers: Leftovers.Leftovers
  readonly summaryOf: (id: string) => Effect.Effect<Option.Option<Session.SessionSummary>>
  /** The journal sessions asked for are accepted into before their folders are made (`intake.ts`), if it keeps one. */
  readonly intake?: Intake.Intake | undefined
}

export const sessionDirectory = (store: Setup, id: string) => store.path.join(store.directory, id)

export const fileOf = (store: Setup, id: string, name: string) => store.path.join(store.directory, id, name)

/** The store's record over its setup. */
export const make = (setup: Setup): Store => {
  const { fs, files, host } = setup
  const atomic = AtomicFiles.make(fs, setup.path, host.pid, files)
  const base = {
    ...setup,
    atomic,
    lockFiles: LockFile.make(fs, host, files),
    knownDirectories: new Set<string>(),
    serially: SessionWriters.make(),
    folders: HeldHandles.make((id) => fs.open(sessionDirectory(setup, id), { flag: "r" }), files.sync)
  }
  const eventLog = EventLog.make({
    fs,
    fileOf: (id) => fileOf(setup, id, eventsFileName),
    serially: base.serially,
    ensureDirectory: (id) => ensureDirectory(base, id),
    writeSync: setup.writeSync,
    syncFile: files.sync
  })
  const sessionFiles = SessionFile.known({ fs, statOption: atomic.statOption, uniqueSuffix: atomic.uniqueSuffix })
  const readLock = (id: string) => base.lockFiles.readHolder(fileOf(setup, id, lockFileName))
  const leftovers = Leftovers.make({
    fs,
    host,
    folderOf: (id) => sessionDirectory(setup, id),
    fileOf: (id, name) => fileOf(setup, id, name),
    readLock,
    statOption: atomic.statOption,
    serially: base.serially,
    forget: (id) => forgetFiles(store, id)
  })
  const store: Store = {
    ...base,
    eventLog,
    sessionFiles,
    leftovers,
    summaryOf: SessionSummaries.summaryOf({
      load: (id) => sessionFiles.load(id, fileOf(setup, id, sessionFileName)),
      readLock,
      statOption: atomic.statOption,
      host,
      withoutSession: leftovers.withoutSession
    })
  }
  return store
}

// =============================================================================
// Folders and files
// =============================================================================

type Folders = Pick<Store, "knownDirectories" | "atomic"> & Setup

export const ensureDirectory = (store: Folders, id: string): Effect.Effect<void> =>
  store.knownDirectories.has(id)
    ? Effect.void
    : orDieWith(`cannot create ${sessionDirectory(store, id)}`)(
        store.atomic.makeDirectories(sessionDirectory(store, id))
      ).pipe(Effect.zipRight(Effect.sync(() => store.knownDirectories.add(id))))

/** A write that makes the session's folder goes first to the disk: a session is being created. */
const creatingSession = <A, E, R>(store: Store, id: string, write: Effect.Effect<A, E, R>) =>
  store.knownDirectories.has(id) ? write : PoolGate.asCreating(write)

/** Replaces a file of a session's folder atomically, syncing the folder held open or, if none is, opened for it. */
const writeInSession = (store: Store, id: string, file: string, text: string) =>
  store.atomic.writeAtomically(
    file,
    text,
    Effect.suspend(() =>
      Option.match(store.folders.get(id), {
        onNone: () => store.atomic.syncFolder(sessionDirectory(store, id)),
        onSome: (folder) => Effect.ignore(Effect.flatMap(folder, store.files.sync))
      })
    )
  )

/** Writes a file of the session's folder under its writer, the folder made first if it is new. */
const writeFile = (store: Store, id: string, file: string, text: string) =>
  creatingSession(
    store,
    id,
    store.serially(id, Effect.zipRight(ensureDirectory(store, id), writeInSession(store, id, file, text)))
  )

/** Forgets what the store knew of a session's files: the folder was removed, or another process may write next. */
export const forgetFiles = (store: Store, id: string) =>
  Effect.sync(() => {
    store.sessionFiles.forget(id)
    store.knownDirectories.delete(id)
    store.eventLog.forget(id)
  })

/** Fails with `SessionNotFound` when the store holds nothing of the session. */
export const mustExist = (store: Store, id: string) =>
  Effect.flatMap(store.atomic.statOption(sessionDirectory(store, id)), (folder) =>
    Option.isNone(folder) ? Effect.fail(new Errors.SessionNotFound({ sessionId: id })) : Effect.void
  )

// =============================================================================
// Sessions
// =============================================================================

export const save = (store: Store) =>
  Effect.fn("FileSessionStore.save")(function* (session: Session.Session) {
    const id = yield* validate(session.id)
    const encoded = yield* Session.encode(session).pipe(
      Effect.mapError(
        (error) =>
          new Errors.InvalidInput({
            reason: `session ${id} cannot be stored: ${ParseResult.TreeFormatter.formatErrorSync(error)}`
          })
      )
    )
    const file = fileOf(store, id, sessionFileName)
    // Encoding refuses a Redacted where text is expected, and a Redacted serialises as "<redacted>" anyway.
    const text = yield* store.scrubbed(file, `${JSON.stringify(encoded, null, 2)}\n`)
    // A new session asked for is accepted into the journal, its folder made after; one already pending is settled.
    if (store.intake !== undefined && session.status === "queued" && (yield* isNew(store, id))) {
      return yield* store.intake.accept(session, text)
    }
    yield* settled(store, id)
    const write = writeSessionText(store, id, text)
    // A session stored queued is being accepted: a client waits for it, ahead of the checkpoints of running ones.
    yield* session.status === "queued" ? PoolGate.asCreating(write) : creatingSession(store, id, write)
  })

/** Writes a session's stored text under its writer, the folder made first if it is new. */
export const writeSessionText = (store: Store, id: string, text: string) => {
  const file = fileOf(store, id, sessionFileName)
  return store.serially(
    id,
    Effect.gen(function* () {
      yield* ensureDirectory(store, id)
      // The log is durable up to every checkpoint.
      yield* store.eventLog.sync(id)
      yield* store.sessionFiles.protect(id, file)
      yield* store.sessionFiles.written(id, yield* writeInSession(store, id, file, text))
    })
  )
}

/** Whether the store holds nothing of the session yet: no folder, nothing journaled. */
const isNew = (store: Store, id: string) =>
  store.knownDirectories.has(id) || store.intake?.pending(id) !== undefined
    ? Effect.succeed(false)
    : Effect.map(store.atomic.statOption(sessionDirectory(store, id)), Option.isNone)

/** Waits until a session the journal holds has its folder: what writes or reads the folder comes after. */
export const settled = (store: Store, id: string): Effect.Effect<void> =>
  store.intake === undefined ? Effect.void : store.intake.settled(id)

export const load = (store: Store) =>
  Effect.fn("FileSessionStore.load")(function* (id: string) {
    const valid = yield* validate(id)
    const journaled = store.intake?.pending(valid)
    if (journaled !== undefined) return journaled
    return yield* store.sessionFiles.load(valid, fileOf(store, valid, sessionFileName))
  })

export const list = (store: Store) =>
  Effect.gen(function* () {
    const names = yield* store.fs.readDirectory(store.directory).pipe(
      Effect.catchIf(isNotFound, () => Effect.succeed([])),
      orDieWith(`cannot list ${store.directory}`)
    )
    // A session still in the journal is listed from it, whatever its folder holds while it is being made.
    const journaled = store.intake?.sessions() ?? []
    const pending = new Set(journaled.map((session) => session.id))
    const onDisk = names.filter((name) => isSessionId(name) && !pending.has(name))
    const summaries = yield* Effect.forEach(onDisk, store.summaryOf, { concurrency: 8 })
    return [...summaries.flatMap(Option.toArray), ...journaled.map(Session.summarize)].sort(
      (a, b) => b.createdAt - a.createdAt
    )
  }).pipe(Effect.withSpan("FileSessionStore.list"))

// =============================================================================
// Events, report and artefacts
// =============================================================================

/**
 * Untraced, and a few runtime steps: every event of a run passes here, and a span an event would be most of a run's
 * spans, none saying more than the event itself.
 */
export const appendEvents =
  (store: Store) =>
  (id: string, events: ReadonlyArray<ResearchEvents.ResearchEvent>): Effect.Effect<void, Errors.InvalidInput> =>
    Effect.suspend(() => {
      if (!isSessionId(id)) return Effect.asVoid(validate(id))
      if (events.length === 0) return Effect.void
      let lines = ""
      try {
        for (const event of events) lines += `${ResearchEvents.encodeJson(event)}\n`
      } catch (error) {
        return new Errors.InvalidInput({
          reason: `an event of session ${id} cannot be stored: ${error instanceof Error ? error.message : String(error)}`
        })
      }
      const append = store.scrubbed.into(fileOf(store, id, eventsFileName), lines, (text) =>
        store.eventLog.append(id, text)
      )
      return store.intake?.pending(id) === undefined ? append : Effect.zipRight(settled(store, id), append)
    })

export const readEvents = (store: Store) =>
  Effect.fn("FileSessionStore.events")(function* (id: string) {
    const valid = yield* validate(id)
    yield* settled(store, valid)
    yield* mustExist(store, valid)
    return yield* store.eventLog.read(valid)
  })

export const saveReport = (store: Store) =>
  Effect.fn("FileSessionStore.saveReport")(function* (id: string, markdown: string) {
    const valid = yield* validate(id)
    const file = fileOf(store, valid, reportFileName)
    yield* settled(store, valid)
    yield* writeFile(store, valid, file, yield* store.scrubbed(file, markdown))
  })

export const saveArtefact = (store: Store) =>
  Effect.fn("FileSessionStore.saveArtefact")(function* (id: string, name: string, content: string) {
    const valid = yield* validate(id)
    const file = fileOf(store, valid, yield* SessionStore.validateArtefactName(name))
    const text = yield* store.scrubbed(file, content)
    // An artefact of a session still in the journal is journaled with it, and made in its folder after it.
    if (store.intake !== undefined && (yield* store.intake.artefact(valid, name, text))) return
    yield* writeFile(store, valid, file, text)
  })

/** Writes an artefact's (scrubbed) text in the session's folder: what the journal makes of one it holds. */
export const writeArtefactText = (store: Store, id: string, name: string, text: string) =>
  writeFile(store, id, fileOf(store, id, name), text)

/** Whether the session's folder holds the file already. */
export const holds = (store: Store, id: string, name: string) =>
  Effect.map(store.atomic.statOption(fileOf(store, id, name)), Option.isSome)

export const readArtefact = (store: Store) =>
  Effect.fn("FileSessionStore.artefact")(function* (id: string, name: string) {
    const valid = yield* validate(id)
    const file = fileOf(store, valid, yield* SessionStore.validateArtefactName(name))
    const journaled = store.intake?.journaledArtefact(valid, name)
    if (journaled !== undefined) return Option.some(journaled)
    yield* settled(store, valid)
    yield* mustExist(store, valid)
    return yield* store.fs.readFileString(file).pipe(
      Effect.map(Option.some),
      Effect.catchIf(isNotFound, () => Effect.succeedNone),
      orDieWith(`cannot read ${file}`)
    )
  })

export const deleteArtefact = (store: Store) =>
  Effect.fn("FileSessionStore.deleteArtefact")(function* (id: string, name: string) {
    const valid = yield* validate(id)
    const file = fileOf(store, valid, yield* SessionStore.validateArtefactName(name))
    yield* settled(store, valid)
    yield* store.serially(
      valid,
      store.fs.remove(file).pipe(
        Effect.catchIf(isNotFound, () => Effect.void),
        orDieWith(`cannot delete ${file}`)
      )
    )
  })
