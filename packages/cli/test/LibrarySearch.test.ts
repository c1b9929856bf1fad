/**
 * The research library from outside: `deep-research search` (ranked passages with their session, title and URL; exit 2
 * with a sentence on terms with no word), `GET /api/library/search`, a run started from the library over the API
 * (`library: true`) whose report cites the earlier session's sources and names it, and a deletion that takes a
 * session's own passages out of the library, leaving those another session holds.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { post, request, served, settled } from "./ServeHarness.js"
import * as InProcess from "./support/inProcess.js"

const Hits = Schema.parseJson(
  Schema.Array(
    Schema.Struct({
      sessionId: Schema.String,
      sourceId: Schema.String,
      url: Schema.String,
      title: Schema.String,
      snippet: Schema.String,
      score: Schema.Number
    })
  )
)

const Created = Schema.parseJson(Schema.Struct({ sessionId: Schema.String }))

describe("the research library", () => {
  it.scopedLive("is searched over the API, starts a run with library: true and leaves with a deleted session", () =>
    Effect.gen(function* () {
      const s = yield* served({ noClarify: true })
      const first = Schema.decodeUnknownSync(Created)(
        (yield* post(`${s.url}/api/sessions`, { question: "How do heat pumps compare with gas boilers?" })).text
      ).sessionId
      yield* settled(s.url, first)

      const found = yield* request(`${s.url}/api/library/search?q=${encodeURIComponent("heat pumps")}&limit=3`)
      assert.strictEqual(found.status, 200, found.text)
      const hits = Schema.decodeUnknownSync(Hits)(found.text)
      assert.isAbove(hits.length, 0)
      assert.isAtMost(hits.length, 3)
      assert.isTrue(hits.every((hit) => hit.sessionId === first && hit.url.startsWith("http") && hit.title !== ""))
      assert.isTrue(hits.every((hit, i) => i === 0 || hit.score <= (hits[i - 1]?.score ?? 0)))
      assert.include(hits[0]?.snippet ?? "", "**")

      const refused = yield* request(`${s.url}/api/library/search?q=${encodeURIComponent(" the ")}`)
      assert.strictEqual(refused.status, 400)
      assert.include(refused.text, "nothing to search for")

      const second = Schema.decodeUnknownSync(Created)(
        (yield* post(`${s.url}/api/sessions`, {
          question: "What do heat pumps cost compared with gas boilers?",
          library: true
        })).text
      ).sessionId
      yield* settled(s.url, second)
      const report = yield* request(`${s.url}/api/sessions/${second}/report`)
      assert.include(report.text, `(from session ${first})`)

      // The first session goes; the pages the second took from it stay, through the second's own rows.
      assert.strictEqual((yield* request(`${s.url}/api/sessions/${first}`, { method: "DELETE" })).status, 204)
      const after = Schema.decodeUnknownSync(Hits)(
        (yield* request(`${s.url}/api/library/search?q=${encodeURIComponent("heat pumps")}&limit=50`)).text
      )
      assert.isAbove(after.length, 0)
      assert.isTrue(after.every((hit) => hit.sessionId === second))
    })
  )

  it.live("deep-research search lists the passages and refuses terms with no word (exit 2, saying why)", () =>
    Effect.gen(function* () {
      const home = InProcess.tempDir()
      const env = { DEEP_RESEARCH_HOME: home }
      const cwd = InProcess.tempDir()
      const ran = yield* Effect.promise(() =>
        InProcess.run(["--simulate", "--no-clarify", "--out", cwd, "How do heat pumps compare with gas boilers?"], {
          cwd,
          env
        })
      )
      assert.strictEqual(ran.code, 0, InProcess.describeRan(ran))
      const listed = yield* Effect.promise(() =>
        InProcess.run(["search", "heat", "pumps", "--limit", "2"], { cwd, env })
      )
      assert.strictEqual(listed.code, 0, InProcess.describeRan(listed))
      assert.match(listed.stdout, /^1\. .+\n {3}http\S+\n {3}session dr-\S+ · source \S+\n {3}.*\*\*/m)
      assert.match(listed.stdout, /^2\. /m)
      assert.notMatch(listed.stdout, /^3\. /m)
      const nothing = yield* Effect.promise(() => InProcess.run(["search", "zeppelin"], { cwd, env }))
      assert.strictEqual(nothing.code, 0)
      assert.include(nothing.stdout, 'Nothing in the library holds every word of "zeppelin".')
      const empty = yield* Effect.promise(() => InProcess.run(["search", "the", "..."], { cwd, env }))
      assert.strictEqual(empty.code, 2, InProcess.describeRan(empty))
      assert.include(empty.stderr, "nothing to search for")
      const none = yield* Effect.promise(() => InProcess.run(["search"], { cwd, env }))
      assert.strictEqual(none.code, 2, InProcess.describeRan(none))
    })
  )
})
