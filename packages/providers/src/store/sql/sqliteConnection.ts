/**
 * The libSQL client the SQLite store runs on, with two of the driver's habits mended:
 *
 * - SQLite's busy timeout (and `synchronous`) is set per connection, and the client opens a new connection after every transaction (the
 *   transaction keeps the one it began on): each new connection gets it here, in the same step as the transaction
 *   that makes it due, so no statement runs on a connection without it.
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

/** A client of the SQLite file at `url` (a `file:` URL), as `Libsql.Client`. */
export const make = (url: string): Libsql.Client => {
  /** The settings of a connection: the busy timeout, and commits synced (libSQL's default, said here). */
  const prepareNext = (client: Libsql.Client) => {
    void client.execute(`PRAGMA busy_timeout = ${busyTimeoutMillis}`).catch(() => undefined)
    void client.execute("PRAGMA synchronous = FULL").catch(() => undefined)
  }
  const open = () => {
    const client = Libsql.createClient({ url })
    prepareNext(client)
    return client
  }
  let current = open()
  const replacedOnBusy = <A>(run: (client: Libsql.Client) => Promise<A>): Promise<A> => {
    const client = current
    return run(client).catch((error: unknown) => {
      if (isBusy(error) && current === client && !client.closed) {
        current = open()
        client.close()
      }
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
    transaction: async (mode?: Libsql.TransactionMode) => {
      const begin = () =>
        replacedOnBusy((client) => {
          // Both run now, in this order: the transaction takes the connection, the pragma opens the next one.
          const transaction = client.transaction(mode)
          prepareNext(client)
          return transaction
        })
      const deadline = Date.now() + transactionPatienceMillis
      for (let delay = 5; ; delay = Math.min(delay * 2, 1000)) {
        try {
          return await begin()
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
