/**
 * What the tests of real cluster processes share: a database (a real PostgreSQL server when
 * DEEP_RESEARCH_TEST_DATABASE_URL is set, else PGlite served over the wire protocol in this process), the vendors'
 * emulator in its simulated world, the PostgreSQL store of that database, and the environment a runner or a client
 * process needs to reach them.
 */
import { SessionStore } from "@deep-research/core"
import { SqlSessionStore } from "@deep-research/providers"
import { Emulator } from "@deep-research/emulator"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as PgDatabase from "../../../providers/test/support/pgDatabase.js"

export const make = Effect.gen(function* () {
  const database = yield* PgDatabase.make
  const emulator = yield* Emulator.start()
  yield* Emulator.simulate(emulator)
  const context = yield* Layer.build(SqlSessionStore.layerPostgres(Redacted.make(database.url)))
  const env: Record<string, string> = {
    OPENAI_BASE_URL: emulator.baseUrl("openai"),
    TAVILY_BASE_URL: emulator.baseUrl("tavily"),
    // PGlite serves every connection from one backend: the cluster's shard locks use its lock table there.
    ...(database.kind === "pglite" ? { DEEP_RESEARCH_SHARD_LOCKS: "table" } : {})
  }
  return { database, emulator, store: Context.get(context, SessionStore.SessionStore), env }
})
