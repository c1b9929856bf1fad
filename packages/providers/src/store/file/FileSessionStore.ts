/**
 * The embedded default `SessionStore`: plain files. One folder per session under a directory
 * (`~/.deep-research/sessions` unless configured) holding `session.json` (replaced atomically and synced, folders
 * included, so a crash leaves the previous checkpoint, and a saved session is there after one), `events.jsonl`
 * (appended, one event a line), `report.md`, and `lock` while a run holds it. What a killed process left half-made is
 * removed or listed for what it is (`leftovers.ts`). The operations are in `fileStore.ts`.
 *
 * Each event is written to the log before `appendEvents` returns, so a crash of the process loses none; the log is
 * synced to the disk with each checkpoint of its session and when a run lets the session go, so a power loss loses
 * at most the events since the last checkpoint (a resumed run works from the checkpoint, never from the log).
 */
import { SessionStore } from "@deep-research/core"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as nodeFs from "node:fs"
import * as os from "node:os"
import * as Environment from "../../Environment.js"
import type * as EventLog from "./eventLog.js"
import * as FileStore from "./fileStore.js"
import * as Intake from "./intake.js"
import * as LockFile from "./lockFile.js"
import * as SessionLocks from "./sessionLocks.js"
import * as NativeFiles from "./nativeFiles.js"
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
  /**
   * Accept sessions asked for (`save` of a new session, status queued) into an intake journal in the sessions folder:
   * a line appended and synced with those of the same moment, the session's folder made right after. A session is so
   * durable before its folder exists, at a fraction of the folder's cost, and is read from the journal until then; a
   * store that opens makes what the journals of stopped processes hold (`intake.ts`). Node's file system only: on
   * with `layerNode`, unless set false.
   */
  readonly intake?: boolean | undefined
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
// Constructors
// =============================================================================

/** A file session store over any `FileSystem` and `Path`. */
export const make = (options: Options): Effect.Effect<SessionStore.Service, never, FileSystem.FileSystem | Path.Path> =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const made = FileStore.make({
      fs,
      path,
      host: options.host ?? nodeHost,
      directory: path.resolve(options.directory),
      files: options.native ?? NativeFiles.fromFileSystem(fs),
      scrubbed: makeScrubbed("FileSessionStore", (options.secrets ?? []).map(Redacted.value)),
      writeSync: options.writeSync
    })
    const store: FileStore.Store =
      options.intake === true
        ? {
            ...made,
            intake: yield* Intake.make({
              directory: made.directory,
              host: made.host,
              folders: { make: made.atomic.makeDirectories, sync: made.atomic.syncFolder },
              sessionFileName: FileStore.sessionFileName,
              writes: {
                session: (id, text) => FileStore.writeSessionText(made, id, text),
                artefact: (id, name, text) => FileStore.writeArtefactText(made, id, name, text),
                holds: (id, name) => FileStore.holds(made, id, name)
              }
            })
          }
        : made
    return SessionStore.SessionStore.of({
      save: FileStore.save(store),
      load: FileStore.load(store),
      appendEvents: FileStore.appendEvents(store),
      events: FileStore.readEvents(store),
      saveReport: FileStore.saveReport(store),
      saveArtefact: FileStore.saveArtefact(store),
      artefact: FileStore.readArtefact(store),
      deleteArtefact: FileStore.deleteArtefact(store),
      list: FileStore.list(store),
      delete: SessionLocks.remove(store),
      lock: SessionLocks.lock(store)
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
