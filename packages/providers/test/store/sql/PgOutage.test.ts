/**
 * The PostgreSQL store while its database goes away and comes back: the database (PGlite in this process, or the
 * server `DEEP_RESEARCH_TEST_DATABASE_URL` names) is reached through a TCP proxy on loopback that the test closes
 * (every connection cut, new ones refused) and opens again. A run's checkpoint waits for the database, says so once,
 * and is committed when it is back, and so does the run's read of its session; the run's hold on its session stays
 * its own.
 */
import { SessionStore } from "@deep-research/core"
import { SqlSessionStore } from "@deep-research/providers"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Scope from "effect/Scope"
import * as PgDatabase from "../../support/pgDatabase.js"
import * as TcpProxy from "../../support/tcpProxy.js"
import { makeSession } from "../../support/sessionStoreContract.js"

const fileScope = Effect.runSync(Scope.make())
let database: PgDatabase.TestDatabase | undefined

beforeAll(async () => {
  database = await Effect.runPromise(Scope.extend(PgDatabase.make, fileScope))
}, 60_000)

afterAll(() => Effect.runPromise(Scope.close(fileScope, Exit.void)))

describe("SqlSessionStore on PostgreSQL, its database gone for a while", () => {
  it.scopedLive("a run's checkpoint waits for the database, says so once, and is committed when it is back", () =>
    Effect.gen(function* () {
      const way = yield* TcpProxy.make(new URL(database?.url ?? ""))
      const logged: Array<string> = []
      const logger = Logger.replace(
        Logger.defaultLogger,
        Logger.make(({ message }) => logged.push(String(message)))
      )
      const context = yield* Layer.build(
        SqlSessionStore.layerPostgres(Redacted.make(way.url), { leaseDuration: "30 seconds" })
      ).pipe(Effect.orDie)
      const store = Context.get(context, SessionStore.SessionStore)
      const id = "through-outage"
      yield* store.lock(id)
      yield* store.save(makeSession(id, { status: "running" }))
      yield* way.close
      const checkpoint = yield* Effect.fork(
        store.save(makeSession(id, { status: "completed" })).pipe(Effect.provide(logger))
      )
      yield* Effect.sleep("3 seconds")
      assert.isNull(checkpoint.unsafePoll(), "the checkpoint waits while the database is away")
      yield* way.open
      yield* Fiber.join(checkpoint)
      assert.strictEqual((yield* store.load(id)).status, "completed")
      const waited = logged.filter((line) => line.includes("cannot be reached to save session through-outage"))
      assert.lengthOf(waited, 1, logged.join("\n"))
    })
  )

  it.scopedLive("a run's artefact (its request journal) waits for the database as its checkpoints do", () =>
    Effect.gen(function* () {
      const way = yield* TcpProxy.make(new URL(database?.url ?? ""))
      const context = yield* Layer.build(
        SqlSessionStore.layerPostgres(Redacted.make(way.url), { leaseDuration: "30 seconds" })
      ).pipe(Effect.orDie)
      const store = Context.get(context, SessionStore.SessionStore)
      const id = "artefact-through-outage"
      yield* store.lock(id)
      yield* store.save(makeSession(id, { status: "running" }))
      yield* way.close
      const saving = yield* Effect.fork(store.saveArtefact(id, "requests.json", "[]"))
      yield* Effect.sleep("3 seconds")
      assert.isNull(saving.unsafePoll(), "the artefact waits while the database is away")
      yield* way.open
      yield* Fiber.join(saving)
      assert.deepStrictEqual(yield* store.artefact(id, "requests.json"), Option.some("[]"))
    })
  )

  it.scopedLive(
    "a run's read of the session it holds waits for the database; a read from outside the run does not",
    () =>
      Effect.gen(function* () {
        const way = yield* TcpProxy.make(new URL(database?.url ?? ""))
        const context = yield* Layer.build(
          SqlSessionStore.layerPostgres(Redacted.make(way.url), { leaseDuration: "30 seconds" })
        ).pipe(Effect.orDie)
        const store = Context.get(context, SessionStore.SessionStore)
        const id = "read-through-outage"
        yield* store.save(makeSession(id, { status: "running" }))
        const closed = yield* Deferred.make<void>()
        // A server answering about the session while a run of its own holds it: told at once.
        const outside = yield* Effect.fork(Effect.zipRight(Deferred.await(closed), Effect.exit(store.load(id))))
        const run = yield* Effect.fork(
          Effect.scoped(
            Effect.gen(function* () {
              yield* store.lock(id)
              yield* way.close
              yield* Deferred.succeed(closed, undefined)
              return yield* store.load(id)
            })
          )
        )
        const elsewhere = yield* Fiber.join(outside)
        assert.isTrue(Exit.isFailure(elsewhere) && Cause.isDie(elsewhere.cause), String(elsewhere))
        yield* Effect.sleep("2 seconds")
        assert.isNull(run.unsafePoll(), "the run's read waits while the database is away")
        yield* way.open
        assert.strictEqual((yield* Fiber.join(run)).status, "running")
      })
  )

  it.scopedLive("a run's checkpoint stops waiting once its hold could lapse before the database is back", () =>
    Effect.gen(function* () {
      const way = yield* TcpProxy.make(new URL(database?.url ?? ""))
      const context = yield* Layer.build(
        SqlSessionStore.layerPostgres(Redacted.make(way.url), { leaseDuration: "3 seconds" })
      ).pipe(Effect.orDie)
      const store = Context.get(context, SessionStore.SessionStore)
      const id = "hold-lapsing"
      yield* store.lock(id)
      yield* store.save(makeSession(id, { status: "running" }))
      yield* way.close
      // Another process may take the session once its lease has lapsed (3 s): this run has ended before then.
      const exit = yield* Effect.exit(store.save(makeSession(id, { status: "completed" })))
      yield* way.open
      assert.isTrue(Exit.isFailure(exit) && Cause.isDie(exit.cause), String(exit))
      if (Exit.isFailure(exit))
        assert.include(Cause.pretty(exit.cause), "longer than this process's hold on the session")
      assert.strictEqual((yield* store.load(id)).status, "running")
    })
  )

  it.scopedLive("a run that ends while the database is away gives its session up once the database is back", () =>
    Effect.gen(function* () {
      const way = yield* TcpProxy.make(new URL(database?.url ?? ""))
      const open = (url: string) =>
        Layer.build(SqlSessionStore.layerPostgres(Redacted.make(url), { leaseDuration: "3 seconds" })).pipe(
          Effect.map((context) => Context.get(context, SessionStore.SessionStore)),
          Effect.orDie
        )
      const store = yield* open(way.url)
      // Another process, which the session's work moves to after the outage.
      const other = yield* open(database?.url ?? "")
      const id = "released-after-outage"
      // The run ends while its lease cannot be deleted: the lease stays, live, and this store goes on renewing.
      yield* Effect.scoped(Effect.zipRight(store.lock(id), way.close))
      yield* way.open
      let taken = false
      for (let tries = 0; tries < 30 && !taken; tries++) {
        taken = Exit.isSuccess(yield* Effect.exit(Effect.scoped(other.lock(id))))
        if (!taken) yield* Effect.sleep("500 millis")
      }
      assert.isTrue(taken, "the other process takes the session once the database is back")
    })
  )

  it.scopedLive(
    "a run that starts while the database is away waits for its lock, and one that gives up holds nothing",
    () =>
      Effect.gen(function* () {
        const way = yield* TcpProxy.make(new URL(database?.url ?? ""))
        const context = yield* Layer.build(
          SqlSessionStore.layerPostgres(Redacted.make(way.url), { leaseDuration: "30 seconds" })
        ).pipe(Effect.orDie)
        const store = Context.get(context, SessionStore.SessionStore)
        yield* way.close
        // Stopped while it waits (its shard moved on): the session is not left marked as this store's.
        const abandoned = yield* Effect.fork(Effect.scoped(store.lock("lock-through-outage")))
        yield* Effect.sleep("2 seconds")
        assert.isNull(abandoned.unsafePoll(), "the lock waits while the database is away")
        yield* Fiber.interrupt(abandoned)
        const waiting = yield* Effect.fork(
          Effect.scoped(
            Effect.zipRight(store.lock("lock-through-outage"), store.save(makeSession("lock-through-outage")))
          )
        )
        yield* Effect.sleep("2 seconds")
        assert.isNull(waiting.unsafePoll(), "the lock waits while the database is away")
        yield* way.open
        yield* Fiber.join(waiting)
        assert.strictEqual((yield* store.load("lock-through-outage")).id, "lock-through-outage")
      })
  )
})
