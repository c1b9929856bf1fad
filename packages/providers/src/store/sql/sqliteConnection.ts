/**
 * The libSQL client the SQLite store runs on, with two of the driver's habits mended:
 *
 * - The client opens a new connection for every transaction (the transaction keeps the one it began on, and never
 *   closes it): a connection opened, set up and its statements prepared anew for each commit, and left for the
 *   garbage collector. Here a transaction runs on the client's one connection, between `BEGIN` and `COMMIT`:
 *   `@effect/sql-libsql` lets no other statement through while a transaction is open (one permit), so nothing else
 *   can run inside it. SQLite's busy timeout (and `synchronous`) is set when a connection opens.
 * - A statement that fails with `SQLITE_BUSY` is left unfinished on its connection, which then refuses every commit
 *   ("SQL statements in progress"): the client is replaced, and the caller's retry (`patiently`) runs on a clean one.
 * - A transaction that cannot begin because another process writes is begun again here, on timers, until
 *   `transactionPatienceMillis` is spent: `@effect/sql-libsql` keeps its transaction permit when a `BEGIN` fails, so a
 *   caller's retry would wait for it forever.
 */
import * as Libsql from "@libsql/client"

/**
 * How long SQLite waits inside a statement for another process's write to end, in milliseconds: short, since the wait
 * holds Node's event loop (a write in WAL mode holds the lock for milliseconds); longer waits are the caller's retry
 * schedule, on timers (`patiently`).
 */
export const busyTimeoutMillis = 50

/** How long a transaction waits to begin while other processes write, in milliseconds. */
export const transactionPatienceMillis = 60_000

const sleep = (millis: number) => new Promise<void>((resolve) => setTimeout(resolve, millis))

/** SQLite's file held by another writer: `SQLITE_BUSY`, `SQLITE_LOCKED` and their extended codes. */
export const isBusyCode = (code: string): boolean => code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED")

const isBusy = (error: unknown): boolean =>
  typeof error === "object" && error !== null && "code" in error && isBusyCode(String(error.code))

const beginOf: Record<Libsql.TransactionMode, string> = {
  write: "BEGIN IMMEDIATE",
  read: "BEGIN DEFERRED",
  deferred: "BEGIN DEFERRED"
}

/**
 * A transaction begun on `client`'s connection. A statement in it that meets a busy file fails the transaction, and
 * the connection is replaced once it has been rolled back (`replace`), as is one whose transaction could not end.
 */
const sameConnection = (client: Libsql.Client, replace: () => void): Libsql.Transaction => {
  let open = true
  let busy = false
  const guarded = <A>(run: () => Promise<A>): Promise<A> => {
    if (!open) return Promise.reject(new Libsql.LibsqlError("The transaction is closed", "TRANSACTION_CLOSED"))
    return run().catch((error: unknown) => {
      if (isBusy(error)) busy = true
      throw error
    })
  }
  const end = async (statement: "COMMIT" | "ROLLBACK") => {
    if (!open) return
    open = false
    try {
      await client.execute(statement)
    } catch (error) {
      // A transaction that could not end (a full disk at its commit, say) is rolled back, on a connection not used again.
      await client.execute("ROLLBACK").catch(() => undefined)
      busy = true
      throw error
    } finally {
      if (busy) replace()
    }
  }
  const transaction: Libsql.Transaction = {
    execute: ((statement: Libsql.InStatement | string, args?: Libsql.InArgs) =>
      guarded(() =>
        typeof statement === "string" && args !== undefined
          ? client.execute({ sql: statement, args })
          : client.execute(statement)
      )) as Libsql.Transaction["execute"],
    batch: async (statements) => {
      const results: Array<Libsql.ResultSet> = []
      for (const statement of statements) results.push(await transaction.execute(statement))
      return results
    },
    // The client's own runs a ROLLBACK after its statements when a transaction is open: never inside one.
    executeMultiple: () =>
      Promise.reject(new Libsql.LibsqlError("executeMultiple is not run inside a transaction", "TRANSACTION_CLOSED")),
    commit: () => end("COMMIT"),
    rollback: () => end("ROLLBACK"),
    close: () => void end("ROLLBACK").catch(() => undefined),
    get closed() {
      return !open
    }
  }
  return transaction
}

/** A client of the SQLite file at `url` (a `file:` URL), as `Libsql.Client`. */
export const make = (url: string): Libsql.Client => {
  /** The settings of a connection: the busy timeout, and commits synced (libSQL's default, said here). */
  const configure = (client: Libsql.Client) => {
    void client.execute(`PRAGMA busy_timeout = ${busyTimeoutMillis}`).catch(() => undefined)
    void client.execute("PRAGMA synchronous = FULL").catch(() => undefined)
  }
  const open = () => {
    const client = Libsql.createClient({ url })
    configure(client)
    return client
  }
  let current = open()
  /** A new connection in place of `client`, unless it was replaced already. */
  const replace = (client: Libsql.Client) => {
    if (current === client && !client.closed) {
      current = open()
      client.close()
    }
  }
  const replacedOnBusy = <A>(run: (client: Libsql.Client) => Promise<A>): Promise<A> => {
    const client = current
    return run(client).catch((error: unknown) => {
      if (isBusy(error)) replace(client)
      throw error
    })
  }
  const wrapper: Libsql.Client = {
    execute: ((statement: Libsql.InStatement | string, args?: Libsql.InArgs) =>
      replacedOnBusy((client) =>
        typeof statement === "string" && args !== undefined
          ? client.execute({ sql: statement, args })
          : client.execute(statement)
      )) as Libsql.Client["execute"],
    batch: (statements, mode) => replacedOnBusy((client) => client.batch(statements, mode)),
    migrate: (statements) => replacedOnBusy((client) => client.migrate(statements)),
    transaction: async (mode: Libsql.TransactionMode = "write") => {
      const deadline = Date.now() + transactionPatienceMillis
      for (let delay = 5; ; delay = Math.min(delay * 2, 1000)) {
        try {
          return await replacedOnBusy(async (client) => {
            await client.execute(beginOf[mode])
            return sameConnection(client, () => replace(client))
          })
        } catch (error) {
          if (!isBusy(error) || Date.now() + delay > deadline) throw error
          await sleep(delay * (0.5 + Math.random()))
        }
      }
    },
    executeMultiple: (sql) => replacedOnBusy((client) => client.executeMultiple(sql)),
    sync: () => current.sync(),
    close: () => current.close(),
    get closed() {
      return current.closed
    },
    get protocol() {
      return current.protocol
    }
  }
  return wrapper
}
