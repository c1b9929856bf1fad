/**
 * The embedded default `SessionStore`: plain files. One folder per session under a directory
 * (`~/.deep-research/sessions` unless configured) holding `session.json` (replaced atomically and synced, folders
 * included, so a crash leaves the previous checkpoint, and a saved session is there after one), `events.jsonl`
 * (appended, one event a line), `report.md`, and `lock` while a run holds it. What a killed process left half-made is
 * removed or listed for what it is (`internal/leftovers.ts`).
 *
 * Each event is written to the log before `appendEvents` returns, so a crash of the process loses none; the log is
 * synced to the disk with each checkpoint of its session and when a run lets the session go, so a power loss loses
 * at most the events since the last checkpoint (a resumed run works from the checkpoint, never from the log).
 */
import { Errors, ResearchEvents, Session, SessionStore } from "@deep-research/core"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import * as Clock from "effect/Clock"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as nodeFs from "node:fs"
import * as os from "node:os"
import { isNotFound, orDieWith } from "./fileErrors.js"
import * as Environment from "../../Environment.js"
import * as AtomicFiles from "./atomicFiles.js"
import * as EventLog from "./eventLog.js"
import * as HeldHandles from "./heldHandles.js"
import * as Leftovers from "./leftovers.js"
import * as LockFile from "./lockFile.js"
import * as NativeFiles from "./nativeFiles.js"
import * as PoolGate from "./poolGate.js"
import * as SessionFile from "./sessionFile.js"
import * as SessionSummaries from "./sessionSummaries.js"
import * as SessionWriters from "./sessionWriters.js"
import { makeScrubbed } from "../secretScrubber.js"

// =============================================================================
// Options
// =============================================================================

/** Options of the file store. */
export interface Options {
  /** The folder that holds one folder per session; created on the first write. */
  readonly directory: string
  /** Secret values (API keys) that must never reach a file: replaced wherever they appear before anything is written. */
  readonly secrets?: ReadonlyArray<Redacted.Redacted<string>> | undefined
  /** The process taking locks; this Node process by default. */
  readonly host?: Host | undefined
  /**
   * A synchronous write to an open descriptor of the FileSystem's, when its descriptors are the system's (Node's
   * `fs.writeSync`; `layerNode` gives it): the event log of a session a run holds is appended with it, not through
   * the thread pool. Without it, the FileSystem writes.
   */
  readonly writeSync?: EventLog.WriteSync | undefined
  /**
   * The system's own file calls, when the FileSystem's paths and descriptors are the system's (`layerNode` gives
   * Node's): stats, atomic writes, lock files and syncs of held files are made with them rather than through the
   * platform's layer (see `nativeFiles.ts`); syncs still wait for the disk off the event loop.
   */
  readonly native?: NativeFiles.NativeFiles | undefined
}

/** Node's file calls, for `Options.native` (what `layerNode` gives). */
export const nodeNative: NativeFiles.NativeFiles = NativeFiles.node

/** The process that takes locks, and how it tells whether another process of its host still runs. */
export type Host = LockFile.Host

/** This Node process: a pid is alive when signal 0 reaches it (EPERM means it exists under another user). */
export const nodeHost: Host = LockFile.nodeHost

/** The environment variables whose values the Node layers keep out of every file. */
export const secretVariables: ReadonlyArray<string> = Environment.secretVariables

// =============================================================================
// Files and their contents
// =============================================================================

const sessionFileName = "session.json"
const eventsFileName = "events.jsonl"
const reportFileName = "report.md"
const lockFileName = "lock"

const isSessionId = Schema.is(Session.SessionId)

/** Refuses anything that could name another path before the disk is touched. */
const validate = Session.validateId

// =============================================================================
// Constructors
// =============================================================================

/** A file session store over any `FileSystem` and `Path`. */
export const make = (options: Options): Effect.Effect<SessionStore.Service, never, FileSystem.FileSystem | Path.Path> =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const host = options.host ?? nodeHost
    const directory = path.resolve(options.directory)
    // The hot file calls: the system's own when given, the FileSystem's otherwise.
    const files = options.native ?? NativeFiles.fromFileSystem(fs)
    const lockFiles = LockFile.make(fs, host, files)
    const scrubbed = makeScrubbed("FileSessionStore", (options.secrets ?? []).map(Redacted.value))
    // Session folders this store has made: made once, not before every write.
    const knownDirectories = new Set<string>()
    const serially = SessionWriters.make()
    const { makeDirectories, statOption, syncFolder, uniqueSuffix, writeAtomically } = AtomicFiles.make(
      fs,
      path,
      host.pid,
      files
    )

    const sessionDirectory = (id: string) => path.join(directory, id)
    const fileOf = (id: string, name: string) => path.join(directory, id, name)

    const ensureDirectory = (id: string): Effect.Effect<void> =>
      knownDirectories.has(id)
        ? Effect.void
        : orDieWith(`cannot create ${sessionDirectory(id)}`)(makeDirectories(sessionDirectory(id))).pipe(
            Effect.zipRight(Effect.sync(() => knownDirectories.add(id)))
          )

    /** A write that makes the session's folder goes first to the disk: a session is being created. */
    const creatingSession = <A, E, R>(id: string, write: Effect.Effect<A, E, R>) =>
      knownDirectories.has(id) ? write : PoolGate.asCreating(write)

    // A held session's folder stays open: a checkpoint's rename is made durable by one sync, not an open and a close.
    const folders = HeldHandles.make((id) => fs.open(sessionDirectory(id), { flag: "r" }), files.sync)
    /** Replaces a file of a session's folder atomically (not every platform can open a folder to sync it). */
    const writeInSession = (id: string, file: string, text: string) =>
      writeAtomically(
        file,
        text,
        Effect.suspend(() =>
          Option.match(folders.get(id), {
            onNone: () => syncFolder(sessionDirectory(id)),
            onSome: (folder) => Effect.ignore(Effect.flatMap(folder, files.sync))
          })
        )
      )

    const eventLog = EventLog.make({
      fs,
      fileOf: (id) => fileOf(id, eventsFileName),
      serially,
      ensureDirectory,
      writeSync: options.writeSync,
      syncFile: files.sync
    })

    /** Forgets what the store knew of a session's files: the folder was removed, or another process may write next. */
    const forgetFiles = (id: string) =>
      Effect.sync(() => {
        sessionFiles.forget(id)
        knownDirectories.delete(id)
        eventLog.forget(id)
      })

    // How the store last saw each session's file; forgotten when a run lets the session go.
    const sessionFiles = SessionFile.known({ fs, statOption, uniqueSuffix })

    // -------------------------------------------------------------------------
    // Service
    // -------------------------------------------------------------------------

    const save = Effect.fn("FileSessionStore.save")(function* (session: Session.Session) {
      const id = yield* validate(session.id)
      const encoded = yield* Session.encode(session).pipe(
        Effect.mapError(
          (error) =>
            new Errors.InvalidInput({
              reason: `session ${id} cannot be stored: ${ParseResult.TreeFormatter.formatErrorSync(error)}`
            })
        )
      )
      const file = fileOf(id, sessionFileName)
      // Encoding refuses a Redacted where text is expected, and a Redacted serialises as "<redacted>" anyway.
      const text = yield* scrubbed(file, `${JSON.stringify(encoded, null, 2)}\n`)
      const write = serially(
        id,
        Effect.gen(function* () {
          yield* ensureDirectory(id)
          // The log is durable up to every checkpoint.
          yield* eventLog.sync(id)
          yield* sessionFiles.protect(id, file)
          yield* sessionFiles.written(id, yield* writeInSession(id, file, text))
        })
      )
      // A session stored queued is being accepted: a client waits for it, ahead of the checkpoints of running ones.
      yield* session.status === "queued" ? PoolGate.asCreating(write) : creatingSession(id, write)
    })

    const load = Effect.fn("FileSessionStore.load")(function* (id: string) {
      const valid = yield* validate(id)
      return yield* sessionFiles.load(valid, fileOf(valid, sessionFileName))
    })

    // Untraced, and a few runtime steps: every event of a run passes here, and a span an event would be most of a
    // run's spans, none saying more than the event itself.
    const appendEvents = (
      id: string,
      events: ReadonlyArray<ResearchEvents.ResearchEvent>
    ): Effect.Effect<void, Errors.InvalidInput> =>
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
        return scrubbed.into(fileOf(id, eventsFileName), lines, (text) => eventLog.append(id, text))
      })

    const readEvents = Effect.fn("FileSessionStore.events")(function* (id: string) {
      const valid = yield* validate(id)
      if (Option.isNone(yield* statOption(sessionDirectory(valid)))) {
        return yield* new Errors.SessionNotFound({ sessionId: valid })
      }
      return yield* eventLog.read(valid)
    })

    const saveReport = Effect.fn("FileSessionStore.saveReport")(function* (id: string, markdown: string) {
      const valid = yield* validate(id)
      const file = fileOf(valid, reportFileName)
      const text = yield* scrubbed(file, markdown)
      yield* creatingSession(
        valid,
        serially(valid, Effect.zipRight(ensureDirectory(valid), writeInSession(valid, file, text)))
      )
    })

    const saveArtefact = Effect.fn("FileSessionStore.saveArtefact")(function* (
      id: string,
      name: string,
      content: string
    ) {
      const valid = yield* validate(id)
      const file = fileOf(valid, yield* SessionStore.validateArtefactName(name))
      const text = yield* scrubbed(file, content)
      yield* creatingSession(
        valid,
        serially(valid, Effect.zipRight(ensureDirectory(valid), writeInSession(valid, file, text)))
      )
    })

    const readArtefact = Effect.fn("FileSessionStore.artefact")(function* (id: string, name: string) {
      const valid = yield* validate(id)
      const file = fileOf(valid, yield* SessionStore.validateArtefactName(name))
      if (Option.isNone(yield* statOption(sessionDirectory(valid)))) {
        return yield* new Errors.SessionNotFound({ sessionId: valid })
      }
      return yield* fs.readFileString(file).pipe(
        Effect.map(Option.some),
        Effect.catchIf(isNotFound, () => Effect.succeedNone),
        orDieWith(`cannot read ${file}`)
      )
    })

    const deleteArtefact = Effect.fn("FileSessionStore.deleteArtefact")(function* (id: string, name: string) {
      const valid = yield* validate(id)
      const file = fileOf(valid, yield* SessionStore.validateArtefactName(name))
      yield* serially(
        valid,
        fs.remove(file).pipe(
          Effect.catchIf(isNotFound, () => Effect.void),
          orDieWith(`cannot delete ${file}`)
        )
      )
    })

    const readLock = (id: string) => lockFiles.readHolder(fileOf(id, lockFileName))
    const leftovers = Leftovers.make({
      fs,
      host,
      folderOf: sessionDirectory,
      fileOf,
      readLock,
      statOption,
      serially,
      forget: forgetFiles
    })
    const summaryOf = SessionSummaries.summaryOf({
      load: (id) => sessionFiles.load(id, fileOf(id, sessionFileName)),
      readLock,
      statOption,
      host,
      withoutSession: leftovers.withoutSession
    })

    const list = Effect.gen(function* () {
      const names = yield* fs.readDirectory(directory).pipe(
        Effect.catchIf(isNotFound, () => Effect.succeed([])),
        orDieWith(`cannot list ${directory}`)
      )
      const summaries = yield* Effect.forEach(names.filter(isSessionId), summaryOf, { concurrency: 8 })
      return summaries.flatMap(Option.toArray).sort((a, b) => b.createdAt - a.createdAt)
    }).pipe(Effect.withSpan("FileSessionStore.list"))

    // -------------------------------------------------------------------------
    // Locking
    // -------------------------------------------------------------------------

    const lock = Effect.fn("FileSessionStore.lock")(function* (id: string) {
      const valid = yield* validate(id)
      yield* ensureDirectory(valid)
      const file = fileOf(valid, lockFileName)
      const holder: LockFile.LockHolder = {
        pid: host.pid,
        hostname: host.hostname,
        startedAt: new Date(yield* Clock.currentTimeMillis).toISOString(),
        token: yield* uniqueSuffix
      }
      const busy = (description: string) => new Errors.SessionBusy({ sessionId: valid, holder: description })
      const acquire = lockFiles.acquire(file, holder, busy)
      // Registered before the lock exists, so that no fiber of this process ever sees it as an earlier process's.
      const forget = LockFile.forget(holder.token)
      yield* LockFile.register(holder.token)
      // A run letting the session go leaves its whole event log on the disk and closed, and the store forgets what it
      // knew of the session's files: another process may write them next.
      const syncLog = serially(
        valid,
        Effect.zipRight(
          Effect.ensuring(Effect.ensuring(eventLog.sync(valid), eventLog.release(valid)), folders.release(valid)),
          forgetFiles(valid)
        )
      )
      yield* Effect.acquireRelease(
        Effect.onError(acquire, () => forget),
        () => Effect.ensuring(Effect.zipRight(syncLog, lockFiles.release(file, holder.token)), forget)
      )
      // What stopped processes left aside in the folder goes, now that no other run can be writing it.
      yield* leftovers.sweep(valid)
      // While the run holds the session, its event log stays open for appending, and its folder for syncing.
      yield* eventLog.hold(valid)
      yield* folders.hold(valid)
    })

    const remove = Effect.fn("FileSessionStore.delete")(function* (id: string) {
      const valid = yield* validate(id)
      const folder = sessionDirectory(valid)
      if (Option.isNone(yield* statOption(folder))) return yield* new Errors.SessionNotFound({ sessionId: valid })
      // Taking the lock first keeps a live run's folder from vanishing under it.
      yield* Effect.scoped(
        Effect.zipRight(
          lock(valid),
          serially(
            valid,
            Effect.zipRight(
              orDieWith(`cannot delete ${folder}`)(fs.remove(folder, { recursive: true })),
              forgetFiles(valid)
            )
          )
        )
      )
    })

    return SessionStore.SessionStore.of({
      save,
      load,
      appendEvents,
      events: readEvents,
      saveReport,
      saveArtefact,
      artefact: readArtefact,
      deleteArtefact,
      list,
      delete: remove,
      lock
    })
  })

/** The file store as the `SessionStore` in context, over the `FileSystem` and `Path` in context. */
export const layer = (
  options: Options
): Layer.Layer<SessionStore.SessionStore, never, FileSystem.FileSystem | Path.Path> =>
  Layer.effect(SessionStore.SessionStore, make(options))

/** The file store on Node's file system. */
export const layerNode = (options: Options): Layer.Layer<SessionStore.SessionStore> =>
  layer({
    writeSync: (fd, bytes, offset) => nodeFs.writeSync(fd, bytes, offset),
    native: nodeNative,
    ...options
  }).pipe(Layer.provide(Layer.merge(NodeFileSystem.layer, NodePath.layer)))

/** The secrets of the environment's API key variables, for `Options.secrets`. */
export const secretsConfig: Config.Config<ReadonlyArray<Redacted.Redacted<string>>> = Config.map(
  Config.all(secretVariables.map((name) => Config.option(Config.redacted(name)))),
  (values) => values.flatMap(Option.toArray)
)

/**
 * The sessions folder: `sessions` in `$DEEP_RESEARCH_HOME`, else in `.deep-research` in the user's home folder.
 */
export const directoryConfig: Config.Config<string> = Config.map(
  Config.option(Config.nonEmptyString(Environment.home)),
  (home) => Environment.sessionsFolder(Environment.storeFolder([Option.getOrUndefined(home)], os.homedir()))
)

/**
 * The file store on Node's file system, configured from the environment: the folder from `directory` (default
 * `directoryConfig`), and the values of the API key variables kept out of every file.
 */
export const layerConfig = (
  options: { readonly directory?: Config.Config<string> | undefined } = {}
): Layer.Layer<SessionStore.SessionStore, ConfigError.ConfigError> =>
  Layer.unwrapEffect(
    Effect.map(
      Config.all({ directory: options.directory ?? directoryConfig, secrets: secretsConfig }),
      ({ directory, secrets }) => layerNode({ directory, secrets })
    )
  )
