/**
 * A PostgreSQL database for one test file. With `DEEP_RESEARCH_TEST_DATABASE_URL` set, a fresh database is made on
 * that server (and dropped afterwards), so that test files running at once never share tables. Without it, PGlite
 * (PostgreSQL compiled to WebAssembly) runs inside the test process and is served over PostgreSQL's wire protocol on
 * a free loopback port, so the store connects with `@effect/sql-pg` exactly as it would to a server. A PGlite starts
 * from a copy of the data folder initdb made once (kept in the system's temporary folder for later runs): initdb
 * holds the test process's event loop for seconds, and a copy starts in a fraction of that.
 *
 * Used by the providers' tests and, through a relative import, by the CLI's.
 */
import { PGlite } from "@electric-sql/pglite"
import { PGLiteSocketServer } from "@electric-sql/pglite-socket"
import * as SqlClient from "@effect/sql/SqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { fileURLToPath } from "node:url"

/** A database for a test file, and where it is. */
export interface TestDatabase {
  readonly url: string
  /** "server" when a real PostgreSQL server serves it, "pglite" when PGlite does. */
  readonly kind: "server" | "pglite"
}

const serverUrl = (): string | undefined => {
  const url = process.env["DEEP_RESEARCH_TEST_DATABASE_URL"]
  return url === undefined || url.length === 0 ? undefined : url
}

const onServer = (base: string): Effect.Effect<TestDatabase, never, Scope.Scope> =>
  Effect.gen(function* () {
    const name = `deep_research_test_${randomBytes(6).toString("hex")}`
    const admin = (statement: string) =>
      Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(statement)).pipe(
        Effect.provide(PgClient.layer({ url: Redacted.make(base), maxConnections: 1 })),
        Effect.orDie
      )
    yield* Effect.acquireRelease(admin(`CREATE DATABASE ${name}`), () =>
      Effect.ignore(admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
    )
    const url = new URL(base)
    url.pathname = `/${name}`
    return { url: url.toString(), kind: "server" } as const
  })

/** The message types after which a connection's exchange is complete: Sync, Query, Terminate, and the startup. */
const endsExchange = new Set([0x53, 0x51, 0x58, 0x00])

/**
 * The order in which PGlite (one backend) serves many connections: a connection has the backend to itself from its
 * first message to the end of its exchange (a Sync or a simple Query), and for as long as it keeps a transaction
 * open. The socket server's own queue serves message by message, so that two clients' Parse and Bind messages
 * (unnamed statements, as `pg` sends them) could interleave and bind one's parameters to the other's statement.
 */
class ExchangeQueue {
  private holder: number | undefined = undefined
  private waiters: Array<() => void> = []
  /** Connections that have closed: a message of theirs still on its way is dropped, never left holding the backend. */
  private readonly closed = new Set<number>()
  constructor(private readonly db: PGlite) {}

  private async acquire(handlerId: number): Promise<void> {
    while (this.holder !== undefined && this.holder !== handlerId) {
      await new Promise<void>((resolve) => this.waiters.push(resolve))
    }
    this.holder = handlerId
  }

  private release(): void {
    this.holder = undefined
    for (const wake of this.waiters.splice(0)) wake()
  }

  async enqueue(handlerId: number, message: Uint8Array, onData: (data: Uint8Array) => void): Promise<number> {
    await this.acquire(handlerId)
    if (this.closed.has(handlerId)) {
      await this.clearTransactionIfNeeded(handlerId)
      throw new Error("the connection closed")
    }
    let bytes = 0
    try {
      await this.db.runExclusive(() =>
        this.db.execProtocolRawStream(message, {
          onRawData: (data) => {
            bytes += data.length
            onData(data)
          }
        })
      )
    } catch (error) {
      this.release()
      throw error
    }
    if (endsExchange.has(message[0] ?? 0) && !this.db.isInTransaction()) this.release()
    return bytes
  }

  getQueueLength(): number {
    return this.waiters.length
  }

  clearQueueForHandler(handlerId: number): void {
    this.closed.add(handlerId)
  }

  async clearTransactionIfNeeded(handlerId: number): Promise<void> {
    if (this.holder !== handlerId) return
    if (this.db.isInTransaction()) await this.db.exec("ROLLBACK")
    this.release()
  }
}

const pgliteVersion = Schema.decodeUnknownSync(Schema.parseJson(Schema.Struct({ version: Schema.String })))(
  fs.readFileSync(
    fileURLToPath(new URL("../../../../node_modules/@electric-sql/pglite/package.json", import.meta.url)),
    "utf8"
  )
).version

/** Where the data folder as initdb leaves it is kept, for this version of PGlite. */
const template = nodePath.join(os.tmpdir(), `deep-research-test-pglite-${pgliteVersion}.tar`)

let initialized: Promise<Blob> | undefined

/** The data folder initdb makes: read from the temporary folder, else made now and written there. */
const initializedDataDir = async (): Promise<Blob> => {
  const kept = await fs.promises.readFile(template).catch(() => undefined)
  if (kept !== undefined) return new Blob([kept])
  const db = await PGlite.create()
  const dump = await db.dumpDataDir("none")
  await db.close()
  const partial = `${template}.${process.pid}`
  await fs.promises.writeFile(partial, Buffer.from(await dump.arrayBuffer()))
  await fs.promises.rename(partial, template)
  return dump
}

/** A PGlite with a database of its own, as initdb left it. */
const freshPglite = async (): Promise<PGlite> => {
  initialized ??= initializedDataDir()
  return PGlite.create({ loadDataDir: await initialized })
}

const onPglite: Effect.Effect<TestDatabase, never, Scope.Scope> = Effect.gen(function* () {
  const db = yield* Effect.acquireRelease(
    Effect.promise(() => freshPglite()),
    (db) => Effect.promise(() => db.close())
  )
  const server = new PGLiteSocketServer({ db, host: "127.0.0.1", port: 0, maxConnections: 512 })
  // The server hands its queue to every connection it accepts.
  Reflect.set(server, "queryQueue", new ExchangeQueue(db))
  yield* Effect.acquireRelease(
    Effect.promise(() => server.start()),
    () => Effect.promise(() => server.stop())
  )
  return { url: `postgres://postgres@${server.getServerConn()}/postgres`, kind: "pglite" } as const
})

/** A fresh database for the life of the scope. */
export const make: Effect.Effect<TestDatabase, never, Scope.Scope> = Effect.suspend(() => {
  const base = serverUrl()
  return base === undefined ? onPglite : onServer(base)
})
