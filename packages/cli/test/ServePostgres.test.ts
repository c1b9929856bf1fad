/**
 * `deep-research serve --database URL`: the same API over the PostgreSQL session store (real PostgreSQL embedded in
 * the test process through PGlite, or the server `DEEP_RESEARCH_TEST_DATABASE_URL` names).
 */
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import * as fs from "node:fs"
import * as PgDatabase from "../../providers/test/support/pgDatabase.js"
import * as ServeClient from "../src/http/Client.js"
import { served, sseEvents } from "./ServeHarness.js"

const Event = Schema.parseJson(Schema.Struct({ _tag: Schema.String, sessionId: Schema.String }))

describe("deep-research serve over PostgreSQL", () => {
  it.scopedLive(
    "a session is created, followed, listed and read back from the database",
    () =>
      Effect.gen(function* () {
        const database = yield* PgDatabase.make
        const s = yield* served({ noClarify: true, database: database.url })
        const client = yield* ServeClient.make({ baseUrl: s.url })
        const started = yield* client.sessions.create({ payload: { question: "How do tides work?", maxRounds: 2 } })
        const id = started.sessionId
        const stream = yield* client.sessions.events({ path: { id }, urlParams: {}, headers: {} })
        const tags = sseEvents(stream)
          .filter((e) => e.event !== "end")
          .map((e) => Schema.decodeUnknownSync(Event)(e.data)._tag)
        assert.strictEqual(tags[tags.length - 1], "SessionCompleted")
        const done = yield* client.sessions.get({ path: { id } })
        assert.strictEqual(done.status, "completed")
        assert.deepStrictEqual(
          (yield* client.sessions.list()).map((l) => [l.id, l.status]),
          [[id, "completed"]]
        )
        assert.match(yield* client.sessions.report({ path: { id }, urlParams: {} }), /\[1\]/)
        // Nothing went to the file store: the sessions live in the database.
        const sessionsDir = `${s.store}/sessions`
        assert.isTrue(!fs.existsSync(sessionsDir) || fs.readdirSync(sessionsDir).length === 0)
      }).pipe(Effect.provide(FetchHttpClient.layer)),
    120_000
  )
})
