/**
 * A failed session the database kept from before the error tags had their prefix (`CircuitOpen` before
 * `ProviderCircuitOpen`) loads with the error it is now, as the CLI's `show` and a resume read it.
 */
import { Errors, SessionStore } from "@deep-research/core"
import { SqlSessionStore } from "@deep-research/providers"
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { makeSession } from "../../support/sessionStoreContract.js"

const temporaryFolder = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(nodePath.join(os.tmpdir(), "deep-research-previous-tags-"))),
  (folder) => Effect.sync(() => fs.rmSync(folder, { recursive: true, force: true }))
)

describe("SqlSessionStore and errors stored under their previous tags", () => {
  it.scoped("a failed session whose error was stored under its previous tag loads as today's error", () =>
    Effect.gen(function* () {
      const file = nodePath.join(yield* temporaryFolder, "deep-research.db")
      const client = SqlSessionStore.sqliteClientLayer(file)
      const context = yield* Effect.orDie(Layer.build(SqlSessionStore.layer().pipe(Layer.provideMerge(client))))
      const store = Context.get(context, SessionStore.SessionStore)
      const sql = Context.get(context, SqlClient.SqlClient)
      const failed = makeSession("failed-before", {
        status: "failed",
        error: new Errors.ProviderCircuitOpen({
          provider: "openai",
          retryAt: 1_800_000_000_000,
          cause: new Errors.ProviderTimeout({ provider: "openai", after: Duration.seconds(60) })
        })
      })
      yield* store.save(failed)
      const [row] = yield* Effect.orDie(sql`SELECT data FROM deep_research_sessions WHERE id = ${failed.id}`)
      const written = String(row?.["data"])
      assert.include(written, '"_tag":"ProviderCircuitOpen"')
      const before = written.replace('"ProviderCircuitOpen"', '"CircuitOpen"').replace('"ProviderTimeout"', '"Timeout"')
      yield* Effect.orDie(sql`UPDATE deep_research_sessions SET data = ${before} WHERE id = ${failed.id}`)

      const loaded = yield* store.load(failed.id)
      assert.isTrue(loaded.error instanceof Errors.ProviderCircuitOpen)
      assert.strictEqual(loaded.error?.message, failed.error?.message)
      if (loaded.error instanceof Errors.ProviderCircuitOpen) {
        assert.isTrue(loaded.error.cause instanceof Errors.ProviderTimeout)
      }
    })
  )
})
