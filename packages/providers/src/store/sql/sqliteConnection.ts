/**
 * The libSQL client the SQLite store runs on, with three of the driver's habits mended:
 *
 * - The client opens a new connection for every transaction, set up anew and left for the garbage collector. Here a
 *   transaction runs on the client's one connection, between `BEGIN` and `COMMIT`: `@effect/sql-libsql` lets no other
 *   statement through while a transaction is open (one permit), so nothing else can run inside it.
 * - A statement that fails with `SQLITE_BUSY` is left unfinished on its connection, which then refuses every commit
 *   ("SQL statements in progress"): the connection is replaced, and the caller's retry (`patiently`) runs on a new one.
 * - A transaction that cannot begin because another process writes is begun again here, on timers: `@effect/sql-libsql`
 *   keeps its transaction permit when a `BEGIN` fails, so a caller's retry would wait for it forever.
 */
import * as Libsql from "@libsql/client"

/**
 * How long SQLite waits inside a statement for another process's write to end, in milliseconds: short, since the wait
 * holds Node's event loop (a write in WAL mode holds the lock for milliseconds); longer waits are the caller's retry
 * schedule, on timers (`patiently`).
 */
const busyTimeoutMillis = 50

/** How long a transaction waits to begin while other processes write, in milliseconds. */
const transactionPatienceMillis = 60_000

/** SQLite's file held by another writer: `SQLITE_BUSY`, `SQLITE_LOCKED` and their extended codes. */
export const isBusyCode = (code: string): boolean => code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED")

const isBusy = (error: unknown): boolean =>
  typeof error === "object" && error !== null && "code" in error && isBusyCode(String(error.code))

/** A statement, in either of the forms `execute` takes. */
const executeOn = (client: Libsql.Client, statement: Libsql.InStatement | string, args?: Libsql.InArgs) =>
  typeof statement === "string" && args !== undefined
    ? client.execute({ sql: statement, args })
    : client.execute(statement)

/** Not run inside a transaction (`@effect/sql-libsql` runs only `execute`; `executeMultiple` would roll back). */
const refused = (what: string) => () =>
  Promise.reject(new Libsql.LibsqlError(`${what} is not run inside a transaction`, "TRANSACTION_CLOSED"))

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
  return {
    execute: ((statement: Libsql.InStatement | string, args?: Libsql.InArgs) =>
      guarded(() => executeOn(client, statement, args))) as Libsql.Transaction["execute"],
    batch: refused("batch"),
    executeMultiple: refused("executeMultiple"),
    commit: () => end("COMMIT"),
    rollback: () => end("ROLLBACK"),
    close: () => void end("ROLLBACK").catch(() => undefined),
    get closed() {
      return !open
    }
  }
}

/** A client of the SQLite file at `url` (a `file:` URL), as `Libsql.Client`. */
export const make = (url: string): Libsql.Client => {
  const open = () => {
    const client = Libsql.createClient({ url })
    // Set on every connection: the busy timeout, and commits synced (libSQL's default, said here).
    void client.execute(`PRAGMA busy_timeout = ${busyTimeoutMillis}`).catch(() => undefined)
    void client.execute("PRAGMA synchronous = FULL").catch(() => undefined)
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
  return {
    execute: ((statement: Libsql.InStatement | string, args?: Libsql.InArgs) =>
      replacedOnBusy((client) => executeOn(client, statement, args))) as Libsql.Client["execute"],
    batch: (statements, mode) => replacedOnBusy((client) => client.batch(statements, mode)),
    migrate: (statements) => replacedOnBusy((client) => client.migrate(statements)),
    transaction: async (mode: Libsql.TransactionMode = "write") => {
      const deadline = Date.now() + transactionPatienceMillis
      for (let delay = 5; ; delay = Math.min(delay * 2, 1000)) {
        try {
          return await replacedOnBusy(async (client) => {
            await client.execute(mode === "write" ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED")
            return sameConnection(client, () => replace(client))
          })
        } catch (error) {
          if (!isBusy(error) || Date.now() + delay > deadline) throw error
          await new Promise((resolve) => setTimeout(resolve, delay * (0.5 + Math.random())))
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
}
