/**
 * The research library where `deep-research serve` tells its callers apart (a token for each), in this process over
 * the emulator: a caller's run with `library: true` takes the sources of its own sessions and no one's, never another
 * caller's, however well they match; a run no caller started takes only no one's; and a caller's search over the API
 * gives up to `limit` passages of the sessions it reaches though another caller's outrank them all. The rule is in the
 * runs' services of every process that runs sessions (`Wiring`: one, `serve`, a cluster's worker), read from the store.
 */
import { SourceLibrary } from "@deep-research/core"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as CliConfig from "../src/CliConfig.js"
import * as Wiring from "../src/Wiring.js"
import { post, request, served, settled } from "./ServeHarness.js"
import { alice, bob, originsOf, question, seed, seedLibrary } from "./support/ownedLibrary.js"

const as = (token: string) => ({ authorization: `Bearer ${token}` })

const Hits = Schema.parseJson(Schema.Array(Schema.Struct({ sessionId: Schema.String, url: Schema.String })))
const Created = Schema.parseJson(Schema.Struct({ sessionId: Schema.String }))

describe("the library where the server tells its callers apart", () => {
  it.scopedLive("a caller's library run takes its own sessions' sources and no one's, never another caller's", () =>
    Effect.gen(function* () {
      const s = yield* served({ noClarify: true, maxRounds: 1 }, { token: Redacted.make(`${alice},${bob}`) })
      yield* seedLibrary(s.resolved)

      const answer = yield* post(`${s.url}/api/sessions`, { question, library: true }, as(alice))
      assert.strictEqual(answer.status, 202, answer.text)
      const mine = Schema.decodeUnknownSync(Created)(answer.text).sessionId
      yield* settled(s.url, mine, as(alice))
      const session = yield* Effect.orDie(s.runs.load(mine))
      assert.deepStrictEqual([...originsOf(session)].sort(), ["alice-farms", "shared-farms"])
      assert.isFalse(session.sources.some((source) => source.url.includes("bob.example")))
      const report = yield* request(`${s.url}/api/sessions/${mine}/report`, { headers: as(alice) })
      assert.strictEqual(report.status, 200, report.text)
      assert.include(report.text, "(from session alice-farms)")
      assert.notInclude(report.text, "bob.example")
      assert.notInclude(report.text, "bob-glaciers")

      // A session no caller started (the CLI's, say) is everyone's: it takes no caller's private sources.
      const everyone = yield* Effect.orDie(s.runs.start(question, { library: true }, "proceed"))
      yield* s.runs.awaitRun(everyone.sessionId)
      const shared = yield* Effect.orDie(s.runs.load(everyone.sessionId))
      assert.deepStrictEqual([...originsOf(shared)], ["shared-farms"])
    })
  )

  it.scopedLive("a caller's search gives `limit` passages of its sessions though another caller's outrank them", () =>
    Effect.gen(function* () {
      const s = yield* served({ noClarify: true }, { token: Redacted.make(`${alice},${bob}`) })
      yield* seedLibrary(s.resolved)
      const search = (token: string) =>
        Effect.map(
          request(`${s.url}/api/library/search?q=${encodeURIComponent("alpine glacier")}&limit=3`, {
            headers: as(token)
          }),
          (answer) => Schema.decodeUnknownSync(Hits)(answer.text)
        )
      const bobs = yield* search(bob)
      assert.isTrue(bobs.length === 3 && bobs.every((hit) => hit.sessionId.startsWith("bob-glaciers")))
      const alices = yield* search(alice)
      assert.lengthOf(alices, 3)
      assert.isTrue(alices.every((hit) => hit.sessionId === "alice-farms" || hit.sessionId === "shared-farms"))
    })
  )

  it.scopedLive("the runs' services of every process keep a session's run to its owner's sessions and no one's", () =>
    Effect.gen(function* () {
      const s = yield* served({ noClarify: true })
      yield* seed(s.resolved, "alice-farms", [], alice)
      yield* seed(s.resolved, "bob-farms", [], bob)
      yield* seed(s.resolved, "shared-farms", [])
      const check = Effect.gen(function* () {
        const reach = yield* SourceLibrary.RunReach
        const reached = (session: string) =>
          Effect.flatMap(reach.forSession(session), (reaches) =>
            Effect.filter(["alice-farms", "bob-farms", "shared-farms"], reaches)
          )
        assert.deepStrictEqual(yield* reached("alice-farms"), ["alice-farms", "shared-farms"])
        assert.deepStrictEqual(yield* reached("bob-farms"), ["bob-farms", "shared-farms"])
        assert.deepStrictEqual(yield* reached("shared-farms"), ["shared-farms"])
      })
      // The layers a run's runtime is built of (a worker's are `Wiring.layer`'s, over its database), simulated or not.
      const resolved = (simulate: boolean, env: CliConfig.Environment) => {
        const result = CliConfig.resolve({ simulate, store: s.store, noClarify: true }, env, undefined)
        return Either.isLeft(result) ? assert.fail(result.left.message) : result.right
      }
      yield* Effect.provide(check, Wiring.layer(resolved(true, {})))
      yield* Effect.provide(check, Wiring.storeOnlyLayer(resolved(false, { OPENAI_API_KEY: "sk-test" })))
    })
  )
})
