/**
 * The file store's hot file operations done by the system directly, for a `FileSystem` whose paths and descriptors
 * are the system's (Node's; `FileSessionStore.layerNode` gives them). An operation through `@effect/platform-node`
 * costs the event loop more than a raw Node callback, and a callback more than a synchronous call (BENCHMARKS.md,
 * "Home-made parts"). So the calls that only read or fill the kernel's caches (stat, write, read, close) are
 * synchronous; those that change a folder (create, rename, link, remove: each a journal entry, which can wait for the
 * journal) and syncs (which wait for the disk) go through the thread pool by raw callbacks, so that the event loop
 * never waits for the disk or the journal; those calls pass the process's gate into the pool (`poolGate.ts`), where a
 * session being created goes first. Failures are the platform's `SystemError`s, with the same reasons as
 * `NodeFileSystem`'s. `fromFileSystem` gives the same operations through any `FileSystem`, so that the store's code is
 * one whatever it runs on.
 */
import { type PlatformError, SystemError, type SystemErrorReason } from "@effect/platform/Error"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as nodeFs from "node:fs"
import { isNotFound } from "./fileErrors.js"
import * as PoolGate from "./poolGate.js"

export interface NativeFiles {
  /** A file's information, `None` when there is no such file. */
  readonly stat: (path: string) => Effect.Effect<Option.Option<FileSystem.File.Info>, PlatformError>
  /**
   * Creates `file` exclusively (mode 0600) with all of `text` (UTF-8), syncs it to the disk, and gives its information
   * (its identity stays the same when it is renamed or linked).
   */
  readonly writeNew: (file: string, text: string) => Effect.Effect<FileSystem.File.Info, PlatformError>
  readonly rename: (from: string, to: string) => Effect.Effect<void, PlatformError>
  /** A hard link `to` the file `from`; fails with `AlreadyExists` when `to` exists. */
  readonly link: (from: string, to: string) => Effect.Effect<void, PlatformError>
  /** Removes a file (not a folder). */
  readonly remove: (path: string) => Effect.Effect<void, PlatformError>
  readonly readText: (path: string) => Effect.Effect<string, PlatformError>
  /** Makes one folder (its parent must exist). */
  readonly makeDirectory: (path: string, mode: number) => Effect.Effect<void, PlatformError>
  /** Syncs an open file to the disk (Node's: through the thread pool, so the event loop does not wait for the disk). */
  readonly sync: (file: FileSystem.File) => Effect.Effect<void, PlatformError>
  /**
   * Syncs a folder (what was made, renamed or removed in it) to the disk, opened for the sync and closed; nothing
   * when the platform cannot open a folder.
   */
  readonly syncFolder: (folder: string) => Effect.Effect<void>
}

const reasonOf = (code: unknown): SystemErrorReason => {
  switch (code) {
    case "ENOENT":
      return "NotFound"
    case "EACCES":
      return "PermissionDenied"
    case "EEXIST":
      return "AlreadyExists"
    case "EISDIR":
    case "ENOTDIR":
    case "ELOOP":
      return "BadResource"
    case "EBUSY":
      return "Busy"
    default:
      return "Unknown"
  }
}

/** A system call's failure as the platform's error. */
const systemError = (method: string, pathOrDescriptor: string | number, error: unknown): PlatformError =>
  new SystemError({
    reason: reasonOf(Predicate.hasProperty(error, "code") ? error.code : undefined),
    module: "FileSystem",
    method,
    pathOrDescriptor,
    description: error instanceof Error ? error.message : String(error),
    cause: error
  })

/** A synchronous system call, its failure as the platform's error. */
export const attempt = <A>(method: string, path: string | number, run: () => A): Effect.Effect<A, PlatformError> =>
  Effect.try({ try: run, catch: (error) => systemError(method, path, error) })

/** The same information `NodeFileSystem` gives. */
const infoOf = (stat: nodeFs.Stats): FileSystem.File.Info => ({
  type: stat.isFile()
    ? "File"
    : stat.isDirectory()
      ? "Directory"
      : stat.isSymbolicLink()
        ? "SymbolicLink"
        : stat.isBlockDevice()
          ? "BlockDevice"
          : stat.isCharacterDevice()
            ? "CharacterDevice"
            : stat.isFIFO()
              ? "FIFO"
              : stat.isSocket()
                ? "Socket"
                : "Unknown",
  mtime: Option.fromNullable(stat.mtime),
  atime: Option.fromNullable(stat.atime),
  birthtime: Option.fromNullable(stat.birthtime),
  dev: stat.dev,
  rdev: Option.fromNullable(stat.rdev),
  ino: Option.fromNullable(stat.ino),
  mode: stat.mode,
  nlink: Option.fromNullable(stat.nlink),
  uid: Option.fromNullable(stat.uid),
  gid: Option.fromNullable(stat.gid),
  size: FileSystem.Size(stat.size),
  blksize: Option.map(Option.fromNullable(stat.blksize), FileSystem.Size),
  blocks: Option.fromNullable(stat.blocks)
})

/**
 * Calls into the thread pool through the process's gate (`poolGate.ts`): `start` makes them, and calls `done` before it
 * resumes the caller. A caller interrupted while it waits for the gate makes none.
 */
const gated = <A>(
  start: (resume: (effect: Effect.Effect<A, PlatformError>) => void, done: () => void) => void
): Effect.Effect<A, PlatformError> =>
  Effect.flatMap(FiberRef.get(PoolGate.creating), (first) =>
    Effect.async<A, PlatformError>((resume) => {
      const withdraw = PoolGate.node.enter(first, (done) => start(resume, done))
      return Effect.sync(withdraw)
    })
  )

/** A call through the thread pool (and the process's gate into it), by Node's callback. */
export const pooled = <A>(
  method: string,
  path: string | number,
  call: (callback: (error: NodeJS.ErrnoException | null, result: A) => void) => void
): Effect.Effect<A, PlatformError> =>
  gated<A>((resume, done) => {
    call((error, result) => {
      done()
      resume(error === null ? Effect.succeed(result) : Effect.fail(systemError(method, path, error)))
    })
  })

const syncDescriptor = (fd: number): Effect.Effect<void, PlatformError> =>
  pooled<void>("sync", fd, (callback) => nodeFs.fsync(fd, (error) => callback(error, undefined)))

/** Closes a descriptor whose file is already written or given up: a failure to close changes nothing for the caller. */
const closeQuietly = (fd: number) => {
  try {
    nodeFs.closeSync(fd)
  } catch {
    // The descriptor is gone either way.
  }
}

/**
 * One callback chain, one resumption of the caller: the file is created through the thread pool, written, and synced
 * through the pool again, then its information read and it is closed, without a runtime step between the calls.
 */
const writeNew = (file: string, text: string): Effect.Effect<FileSystem.File.Info, PlatformError> =>
  gated<FileSystem.File.Info>((resume, done) => {
    nodeFs.open(file, "wx", 0o600, (openError, fd) => {
      if (openError !== null) {
        done()
        return resume(Effect.fail(systemError("open", file, openError)))
      }
      const fail = (error: PlatformError) => {
        closeQuietly(fd)
        done()
        resume(Effect.fail(error))
      }
      try {
        // A third of a TextEncoder's CPU for a session's text.
        const bytes = Buffer.from(text, "utf8")
        let offset = 0
        while (offset < bytes.length) offset += nodeFs.writeSync(fd, bytes, offset)
      } catch (error) {
        return fail(systemError("write", file, error))
      }
      nodeFs.fsync(fd, (syncError) => {
        if (syncError !== null) return fail(systemError("sync", fd, syncError))
        let info: FileSystem.File.Info
        try {
          info = infoOf(nodeFs.fstatSync(fd))
        } catch (error) {
          return fail(systemError("stat", file, error))
        }
        closeQuietly(fd)
        done()
        resume(Effect.succeed(info))
      })
    })
  }).pipe(
    // Never given up while its sync runs in the thread pool: the caller would not know whether the file is there.
    Effect.uninterruptible
  )

/** Opening a folder only looks its name up, as a stat does; its sync waits for the disk in the pool. */
const syncFolder = (folder: string): Effect.Effect<void> =>
  Effect.suspend(() => {
    let fd: number
    try {
      fd = nodeFs.openSync(folder, "r")
    } catch {
      // Not every platform can open a folder.
      return Effect.void
    }
    return Effect.ignore(
      Effect.ensuring(
        syncDescriptor(fd),
        Effect.sync(() => closeQuietly(fd))
      )
    )
  })

/** Node's file system. */
export const node: NativeFiles = {
  stat: (path) =>
    attempt("stat", path, () => {
      const stat = nodeFs.statSync(path, { throwIfNoEntry: false })
      return stat === undefined ? Option.none() : Option.some(infoOf(stat))
    }),
  writeNew,
  rename: (from, to) =>
    pooled<void>("rename", from, (callback) => nodeFs.rename(from, to, (error) => callback(error, undefined))),
  link: (from, to) =>
    pooled<void>("link", from, (callback) => nodeFs.link(from, to, (error) => callback(error, undefined))),
  remove: (path) =>
    pooled<void>("remove", path, (callback) => nodeFs.unlink(path, (error) => callback(error, undefined))),
  readText: (path) => attempt("readFile", path, () => nodeFs.readFileSync(path, "utf8")),
  makeDirectory: (path, mode) =>
    pooled<void>("makeDirectory", path, (callback) =>
      nodeFs.mkdir(path, { mode }, (error) => callback(error, undefined))
    ),
  sync: (file) => syncDescriptor(file.fd),
  syncFolder
}

/**
 * The same operations through any `FileSystem` (the platform's calls, each its own effect): what the store uses when
 * it is given no system calls of its own.
 */
export const fromFileSystem = (fs: FileSystem.FileSystem): NativeFiles => ({
  stat: (path) =>
    fs.stat(path).pipe(
      Effect.map(Option.some),
      Effect.catchIf(isNotFound, () => Effect.succeedNone)
    ),
  writeNew: (file, text) =>
    Effect.scoped(
      Effect.gen(function* () {
        const handle = yield* fs.open(file, { flag: "wx", mode: 0o600 })
        // The platform's writeAll fails on an empty buffer ("write returned 0 bytes written").
        if (text !== "") yield* handle.writeAll(encoder.encode(text))
        yield* handle.sync
        return yield* handle.stat
      })
    ),
  rename: (from, to) => fs.rename(from, to),
  link: (from, to) => fs.link(from, to),
  remove: (path) => fs.remove(path),
  readText: (path) => fs.readFileString(path),
  makeDirectory: (path, mode) => fs.makeDirectory(path, { mode }),
  sync: (file) => file.sync,
  // Not every platform can open a folder.
  syncFolder: (folder) =>
    Effect.ignore(Effect.scoped(Effect.flatMap(fs.open(folder, { flag: "r" }), (handle) => handle.sync)))
})

const encoder = new TextEncoder()
