// docs/library.md's library example, run here against the emulator: the same layers, with the emulator's URLs and keys.
import { Pipeline, ResearchEvents, Resilience, SessionStore, Summarizer } from "@deep-research/core"
import { ModelSpec, SqlSessionStore, Tavily } from "@deep-research/providers"
import { Emulator } from "@deep-research/emulator"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"

interface Endpoints {
  readonly openai: { readonly apiKey: Redacted.Redacted; readonly baseUrl?: string | undefined }
  readonly tavily: { readonly apiKey: Redacted.Redacted; readonly baseUrl?: string | undefined }
  readonly sessions: string
}

// As in docs/library.md, with the endpoints given instead of read from the environment.
const researchLayer = (endpoints: Endpoints) =>
  Layer.mergeAll(
    Summarizer.layer,
    Tavily.layer(endpoints.tavily),
    SqlSessionStore.layerSqlite(`${endpoints.sessions}/deep-research.db`),
    ResearchEvents.layer
  ).pipe(
    Layer.provideMerge(
      ModelSpec.layer({
        default: "openai:gpt-4.1",
        tiers: { efficient: "openai:gpt-4.1-mini" },
        providers: { openai: endpoints.openai }
      })
    ),
    Layer.provide(Resilience.layerDefault)
  )

const temporaryFolder = Effect.acquireRelease(
  Effect.promise(() => fs.mkdtemp(path.join(os.tmpdir(), "library-example-"))),
  (dir) => Effect.promise(() => fs.rm(dir, { recursive: true, force: true }))
)

describe("docs/library.md's library example", () => {
  it.live("researches a question through the real providers and keeps the session", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* Emulator.simulate(emulator)
      const sessions = yield* temporaryFolder
      const session = yield* Pipeline.research("How did the 2008 crisis change bank capital rules?", {
        config: { maxSupervisionRounds: 3, budget: { maxUsd: 2 } }
      }).pipe(
        Effect.provide(
          researchLayer({
            openai: { apiKey: Redacted.make("sk-example"), baseUrl: emulator.baseUrl("openai") },
            tavily: { apiKey: Redacted.make("tvly-example"), baseUrl: emulator.baseUrl("tavily") },
            sessions
          })
        )
      )
      assert.strictEqual(session.status, "completed")
      assert.isAbove(session.report?.citations.length ?? 0, 0)
      // Kept in the database file the example names, as another program would open it.
      const saved = yield* Effect.flatMap(SessionStore.SessionStore, (store) => store.load(session.id)).pipe(
        Effect.provide(SqlSessionStore.layerSqlite(`${sessions}/deep-research.db`))
      )
      assert.strictEqual(saved.status, "completed")
    }).pipe(Effect.scoped)
  )

  it.live("retries a search the vendor answered 503 under the resilience the wiring provides", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* Emulator.simulate(emulator)
      yield* emulator.enqueue("tavily.search", Emulator.fault({ type: "server_error", status: 503 }))
      const session = yield* Pipeline.research("How did the 2008 crisis change bank capital rules?", {
        config: { maxSupervisionRounds: 1 }
      }).pipe(
        Effect.provide(
          researchLayer({
            openai: { apiKey: Redacted.make("sk-example"), baseUrl: emulator.baseUrl("openai") },
            tavily: { apiKey: Redacted.make("tvly-example"), baseUrl: emulator.baseUrl("tavily") },
            sessions: yield* temporaryFolder
          })
        )
      )
      assert.strictEqual(session.status, "completed")
      const searches = yield* emulator.requests("tavily.search")
      const first = JSON.stringify(searches[0]?.body)
      // The refused search went out again, the same, and its answer reached the session.
      assert.isAtLeast(searches.filter((request) => JSON.stringify(request.body) === first).length, 2)
      assert.isAbove(session.sources.length, 0)
    }).pipe(Effect.scoped)
  )
})
