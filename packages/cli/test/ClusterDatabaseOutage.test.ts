/**
 * A runner of the research cluster while its session database is out of reach: the session entity's handlers
 * (`Cluster.entityLayer`) on `@effect/cluster`'s in-memory runner (its messages and shard locks in memory, so that only
 * the session store loses its database), over the scripted models and the PostgreSQL store reached through a TCP proxy
 * that the test closes and opens again. A message whose work meets the outage waits for the database and carries on:
 * it is not a defect of the entity, which `@effect/cluster` would log as an error and restart with every message it
 * holds, again and again while the database stays away.
 */
import { ResearchConfig, SessionStore } from "@deep-research/core"
import { ScriptedRun } from "@deep-research/core/testing"
import { SqlSessionStore } from "@deep-research/providers"
import * as TestRunner from "@effect/cluster/TestRunner"
import { assert, describe, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Redacted from "effect/Redacted"
import * as PgDatabase from "../../providers/test/support/pgDatabase.js"
import * as TcpProxy from "../../providers/test/support/tcpProxy.js"
import * as Cluster from "../src/Cluster.js"

const script = {
  pages: [
    {
      url: "https://tides.example/moon",
      title: "How the Moon raises tides",
      content: "The Moon's gravity raises two tidal bulges; most coasts see two high tides a day."
    }
  ],
  rounds: [[{ topic: "Tides and the Moon", extract: ["https://tides.example/moon"], findings: "Two bulges [1]." }]],
  report: "# Tides\n\n## The Moon\n\nThe Moon raises two tidal bulges [1]."
} satisfies ScriptedRun.Script

/** Asks `check` every 200 ms until it holds; dies saying what it waited for after a minute. */
const until = (what: string, check: Effect.Effect<boolean>) =>
  Effect.gen(function* () {
    for (let asked = 0; asked < 300; asked++) {
      if (yield* check) return
      yield* Effect.sleep("200 millis")
    }
    return yield* Effect.dieMessage(`timed out waiting for ${what}`)
  })

describe("a cluster runner whose session database goes away", () => {
  it.scopedLive("a session sent while the database is away waits for it, runs once, and is no defect", () =>
    Effect.gen(function* () {
      const database = yield* PgDatabase.make
      const way = yield* TcpProxy.make(new URL(database.url))
      const logged: Array<string> = []
      const logger = Logger.replace(
        Logger.defaultLogger,
        Logger.make(({ message, cause }) => {
          const text = Array.isArray(message) ? message.map(String).join(" ") : String(message)
          logged.push(Cause.isEmpty(cause) ? text : `${text}: ${Cause.pretty(cause)}`)
        })
      )
      const store = SqlSessionStore.layerPostgres(Redacted.make(way.url), { leaseDuration: "30 seconds" })
      // The scripted models and web, and the store on the database behind the proxy in place of the memory one.
      const research = Layer.merge(ScriptedRun.layer(script), store)
      const runner = Cluster.entityLayer.pipe(
        Layer.provide(research),
        Layer.provideMerge(TestRunner.layer),
        Layer.provide(logger)
      )
      const context = yield* Layer.build(runner).pipe(Effect.orDie)
      // The test reads the session straight from the database, not through the proxy.
      const direct = yield* Layer.build(SqlSessionStore.layerPostgres(Redacted.make(database.url))).pipe(Effect.orDie)
      const sessions = Context.get(direct, SessionStore.SessionStore)

      yield* way.close
      const id = "dr-20260301-120000-outage"
      yield* Cluster.submit(id, "How do tides work?", ResearchConfig.defaults, "proceed", "proceed").pipe(
        Effect.provide(context)
      )
      // Long enough for the cluster to restart a defective entity more than once (after 0.5 s, then 0.75 s more).
      yield* Effect.sleep("3 seconds")
      yield* way.open
      yield* until(
        `session ${id} to complete\n${logged.join("\n")}`,
        Effect.map(
          Effect.option(sessions.load(id)),
          (found) => found._tag === "Some" && found.value.status === "completed"
        )
      )

      const all = logged.join("\n")
      assert.notInclude(all, "Defect in entity", all)
      assert.lengthOf(
        logged.filter((line) => line.includes(`session ${id} waits for the session database`)),
        1,
        all
      )
      assert.lengthOf(
        logged.filter((line) => line.includes(`cluster: session ${id} running`)),
        1,
        all
      )
    })
  )
})
