/**
 * The event log of the file store: one `events.jsonl` a session, appended a line an event. Appends are group
 * committed (whoever holds the session's writer next writes every queued batch at once, in order); a log this store
 * did not write last is checked for a torn last line first; the log is synced when the store asks (with each
 * checkpoint), not after every append; reading skips, and says, lines it cannot decode. While a run holds a session
 * (`hold` to `release`), its log stays open for appending, instead of being opened and closed for every write.
 */
import { ResearchEvents } from "@deep-research/core"
import { type PlatformError, SystemError } from "@effect/platform/Error"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import { isNotFound, orDieWith } from "./fileErrors.js"
import * as HeldHandles from "./heldHandles.js"
import type * as SessionWriters from "./sessionWriters.js"

/** Event lines waiting to be appended, and the caller waiting for them to be written. */
interface PendingAppend {
  readonly text: string
  readonly done: Deferred.Deferred<void>
}

/** What the log needs of its store. */
export interface Store {
  readonly fs: FileSystem.FileSystem
  /** The log's file for a session. */
  readonly fileOf: (id: string) => string
  /** The sessions' writers (one write at a time per session in this process). */
  readonly serially: SessionWriters.SessionWriters
  /** Makes the session's folder when it is not there yet. */
  readonly ensureDirectory: (id: string) => Effect.Effect<void>
  /**
   * A synchronous write to an open descriptor of `fs` (Node's `fs.writeSync`), when its descriptors are the system's:
   * a held log is appended with it, rather than through the thread pool.
   */
  readonly writeSync?: WriteSync | undefined
  /** Syncs a log's descriptor more cheaply than the FileSystem's own sync, when the store has such a way. */
  readonly syncFile?: ((file: FileSystem.File) => Effect.Effect<void, PlatformError>) | undefined
}

/** Writes `bytes` from `offset` on to the descriptor; gives how many were written. Throws on failure. */
export type WriteSync = (fd: number, bytes: Uint8Array, offset: number) => number

export interface EventLog {
  /** Appends lines (each ending with a newline) to the session's log; returns once they are written. */
  readonly append: (id: string, text: string) => Effect.Effect<void>
  /** Syncs the session's log to the disk when anything was written to it since its last sync. */
  readonly sync: (id: string) => Effect.Effect<void>
  /** The session's events in order (none when it has no log). */
  readonly read: (id: string) => Effect.Effect<ReadonlyArray<ResearchEvents.ResearchEvent>>
  /** Keeps the session's log open for appending from its next write on, until `release`. */
  readonly hold: (id: string) => Effect.Effect<void>
  /** Closes the session's log if `hold` kept it open (sync it first: closing does not). */
  readonly release: (id: string) => Effect.Effect<void>
  /** Forgets what the log knew of a session's file: it was removed, or another process may write it next. */
  readonly forget: (id: string) => void
}

const encoder = new TextEncoder()

/** What a store's logs hold between calls. */
interface Logs {
  readonly store: Store
  /** Event lines waiting for their session's writer, in the order they were published. */
  readonly pending: Map<string, Array<PendingAppend>>
  /** Logs this store last wrote, whose last line it therefore knows to be whole. */
  readonly wholeTails: Set<string>
  /** Logs written since they were last synced. */
  readonly unsynced: Set<string>
  /** Logs of the sessions a run of this store holds, open for appending from their first write. */
  readonly held: HeldHandles.HeldHandles
}

export const make = (store: Store): EventLog => {
  const logs: Logs = {
    store,
    pending: new Map(),
    wholeTails: new Set(),
    unsynced: new Set(),
    held: HeldHandles.make((id) => store.fs.open(store.fileOf(id), { flag: "a", mode: 0o600 }), store.syncFile)
  }
  return {
    append: (id, text) => append(logs, id, text),
    sync: (id) => sync(logs, id),
    read: (id) => read(store, id),
    hold: logs.held.hold,
    release: logs.held.release,
    forget: (id) => {
      logs.wholeTails.delete(id)
      logs.unsynced.delete(id)
    }
  }
}

const writeFailure = (error: unknown) =>
  new SystemError({
    module: "FileSystem",
    method: "writeAll",
    reason: "Unknown",
    description: error instanceof Error ? error.message : String(error),
    cause: error
  })

/** Writes all of `bytes` to an open log with the store's synchronous write. Throws on failure. */
const writeAllSync = (write: WriteSync, log: FileSystem.File, bytes: Uint8Array) => {
  let offset = 0
  while (offset < bytes.length) offset += write(log.fd, bytes, offset)
}

/** Appends to an open log: synchronously when the store can, through the file system otherwise. */
const appendTo = (store: Store, log: FileSystem.File, bytes: Uint8Array): Effect.Effect<void, PlatformError> => {
  const writeSync = store.writeSync
  return writeSync === undefined
    ? log.writeAll(bytes)
    : Effect.try({ try: () => writeAllSync(writeSync, log, bytes), catch: writeFailure })
}

/**
 * What must come before new lines in a log this store did not write last: a crash can leave a torn last line, and the
 * new events start on a line of their own.
 */
const separatorBefore = (fs: FileSystem.FileSystem, file: string) =>
  Effect.scoped(
    Effect.gen(function* () {
      const handle = yield* fs.open(file, { flag: "r" })
      const size = (yield* handle.stat).size
      if (size === BigInt(0)) return ""
      yield* handle.seek(Number(size) - 1, "start")
      const last = yield* handle.readAlloc(1)
      return Option.isSome(last) && last.value[0] !== 0x0a ? "\n" : ""
    })
  ).pipe(Effect.catchIf(isNotFound, () => Effect.succeed("")))

/** Appends `text` on a line of its own: written (a crash of the process loses none of it), not synced. */
const write = (logs: Logs, id: string, text: string) =>
  Effect.gen(function* () {
    const { store, wholeTails } = logs
    const file = store.fileOf(id)
    yield* store.ensureDirectory(id)
    const prefix = wholeTails.has(id) ? "" : yield* orDieWith(`cannot read ${file}`)(separatorBefore(store.fs, file))
    // Until the write is known to be whole, the tail is checked again before the next one.
    wholeTails.delete(id)
    logs.unsynced.add(id)
    const bytes = encoder.encode(prefix + text)
    yield* orDieWith(`cannot append to ${file}`)(
      Option.match(logs.held.get(id), {
        onNone: () => store.fs.writeFile(file, bytes, { flag: "a", mode: 0o600 }),
        onSome: (log) => Effect.flatMap(log, (open) => appendTo(store, open, bytes))
      })
    )
    wholeTails.add(id)
  })

/**
 * Writes every batch queued for the session, after the caller's own lines if it brought any, in one write, and tells
 * each queued caller how it went. Runs while holding the session's writer.
 */
const writeQueued = (logs: Logs, id: string, own: string | undefined): Effect.Effect<void> =>
  Effect.suspend(() => {
    const batch = logs.pending.get(id) ?? []
    logs.pending.delete(id)
    const texts = batch.map((a) => a.text)
    if (own !== undefined) texts.unshift(own)
    if (texts.length === 0) return Effect.void
    const written = write(logs, id, texts.join(""))
    if (batch.length === 0) return written
    return Effect.flatMap(Effect.exit(written), (exit) => {
      for (const a of batch) Deferred.unsafeDone(a.done, exit)
      return exit
    })
  })

/** A caller that finds the session's writer taken queues its lines for whoever holds it next. */
const appendQueued = (logs: Logs, id: string, text: string) =>
  Effect.gen(function* () {
    const { pending } = logs
    const mine: PendingAppend = { text, done: yield* Deferred.make<void>() }
    const enqueue = Effect.sync(() => {
      const queue = pending.get(id) ?? []
      pending.set(id, queue)
      queue.push(mine)
    })
    // Group commit: whoever holds the session's writer next appends every queued batch in one write, in the order
    // they were queued; each caller still returns only once its own lines are written. Events published at once
    // (parallel researchers, many sessions on a busy disk) cost one write instead of one each.
    yield* Effect.zipRight(enqueue, logs.store.serially(id, writeQueued(logs, id, undefined))).pipe(
      // Interrupted before its batch was taken, a caller's lines are not written.
      Effect.onInterrupt(() =>
        Effect.sync(() => {
          const left = pending.get(id)
          const at = left?.indexOf(mine) ?? -1
          if (left !== undefined && at >= 0) left.splice(at, 1)
          if (left !== undefined && left.length === 0) pending.delete(id)
        })
      )
    )
    yield* Deferred.await(mine.done)
  })

/**
 * The usual case on Node, one event at a time while a run holds the session: its log open, its last line known whole
 * (so its folder is there: both are forgotten together), and nothing else writing it or waiting to. The lines are
 * written there and then, in one step: nothing can come between, so there is no writer to take. `undefined` when the
 * log is not in that state.
 */
const appendNow = (logs: Logs, id: string, text: string): Effect.Effect<void> | undefined => {
  const log = logs.held.opened(id)
  const writeSync = logs.store.writeSync
  if (writeSync === undefined || log === undefined || !logs.wholeTails.has(id)) return undefined
  // Until the write is known to be whole, the tail is checked again before the next one.
  logs.wholeTails.delete(id)
  logs.unsynced.add(id)
  try {
    writeAllSync(writeSync, log, encoder.encode(text))
  } catch (error) {
    return orDieWith(`cannot append to ${logs.store.fileOf(id)}`)(Effect.fail(writeFailure(error)))
  }
  logs.wholeTails.add(id)
  return Effect.void
}

// Otherwise, a caller that finds the writer free writes its own lines (with any queued while it takes the writer),
// without queueing them.
const append = (logs: Logs, id: string, text: string): Effect.Effect<void> =>
  Effect.suspend(() => {
    if (logs.store.serially.busy(id) || logs.pending.has(id)) return appendQueued(logs, id, text)
    return appendNow(logs, id, text) ?? logs.store.serially(id, writeQueued(logs, id, text))
  })

const sync = (logs: Logs, id: string): Effect.Effect<void> =>
  Effect.suspend(() => {
    if (!logs.unsynced.has(id)) return Effect.void
    logs.unsynced.delete(id)
    return orDieWith(`cannot sync ${logs.store.fileOf(id)}`)(logs.held.sync(id))
  })

const read = (store: Store, id: string) =>
  Effect.gen(function* () {
    const file = store.fileOf(id)
    const text = yield* store.fs.readFileString(file).pipe(
      Effect.catchIf(isNotFound, () => Effect.succeed("")),
      orDieWith(`cannot read ${file}`)
    )
    const lines = text.split("\n")
    const events: Array<ResearchEvents.ResearchEvent> = []
    for (const [index, line] of lines.entries()) {
      if (line.trim().length === 0) continue
      const decoded = yield* Effect.either(ResearchEvents.decodeJson(line))
      if (Either.isRight(decoded)) events.push(decoded.right)
      else {
        const torn = index === lines.length - 1 ? "a torn last line, from an interrupted write" : "unreadable"
        yield* Effect.logWarning(`FileSessionStore: skipped line ${index + 1} of ${file}: ${torn}`)
      }
    }
    return events
  })
