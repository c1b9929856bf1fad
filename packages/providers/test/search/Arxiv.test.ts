import { SearchProvider } from "@deep-research/core"
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Fiber, TestClock } from "effect"
import * as Arxiv from "../../src/search/Arxiv.js"
import { Emulator } from "@deep-research/emulator"
import { recordingClient } from "../support/recordingClient.js"

const entry: Emulator.ArxivEntry = {
  id: "2401.01234v2",
  title: "Sparse attention for long documents",
  summary: "We study sparse attention over documents of a million tokens.",
  authors: ["Ada Moreau", "Kenji Sato", "Lena Fischer", "Omar Haddad"],
  published: "2024-01-03T18:59:59Z",
  primaryCategory: "cs.CL"
}

const arxivAt = (emulator: Emulator.Handle) =>
  Arxiv.make({ baseUrl: emulator.baseUrl("arxiv"), interval: Duration.millis(1), contact: "ops@example.org" })

const failure = (emulator: Emulator.Handle, reply: Emulator.Reply) =>
  Effect.gen(function* () {
    yield* emulator.respond("arxiv.query", reply)
    return yield* Effect.flip((yield* arxivAt(emulator)).search("sparse attention", { maxResults: 3 }))
  })

describe("Arxiv", () => {
  it("asks for the query's content terms, all of them or (wider) any, without the grammar's operators, and a submittedDate range", () => {
    const now = Date.parse("2026-03-31T12:00:00Z")
    assert.strictEqual(
      Arxiv.searchQuery('sparse (attention) AND "long" documents: OR', undefined, now),
      "all:sparse AND all:attention AND all:long AND all:documents"
    )
    assert.strictEqual(
      Arxiv.searchQuery('sparse (attention) AND "long" documents: OR', undefined, now, "wide"),
      "all:sparse OR all:attention OR all:long OR all:documents"
    )
    assert.strictEqual(
      Arxiv.searchQuery("sparse attention", "week", now),
      "(all:sparse AND all:attention) AND submittedDate:[202603241200 TO 202603311200]"
    )
    assert.isUndefined(Arxiv.searchParams("( ) :", { maxResults: 3 }, now))
    assert.strictEqual(Arxiv.searchParams("xenon", { maxResults: 500 }, now)?.get("max_results"), "50")
  })

  it.scopedLive("maps e-prints: abstract page, authors, year, primary category as venue, a preprint marked", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond(
        "arxiv.query",
        Emulator.arxivFeed([entry, { ...entry, id: "2312.00001v1", journalRef: "Phys. Rev. D 108 (2023) 1" }])
      )
      const [first, second] = yield* (yield* arxivAt(emulator)).search("sparse attention", { maxResults: 3 })
      assert.strictEqual(first?.url, "https://arxiv.org/abs/2401.01234v2")
      assert.strictEqual(first?.provider, "arxiv")
      assert.deepStrictEqual(first?.work?.authors, entry.authors)
      assert.strictEqual(first?.work?.venue, "arXiv (cs.CL)")
      assert.isTrue(first?.work?.preprint)
      assert.include(
        first?.snippet ?? "",
        "Ada Moreau, Kenji Sato, Lena Fischer et al. (2024), arXiv (cs.CL), preprint."
      )
      assert.include(first?.rawContent ?? "", "Full text: https://arxiv.org/pdf/2401.01234v2")
      assert.isFalse(second?.work?.preprint)
      assert.strictEqual(second?.work?.venue, "Phys. Rev. D 108 (2023) 1")
      const [request] = yield* emulator.requests("arxiv.query")
      assert.strictEqual(request?.query["search_query"], "all:sparse AND all:attention")
      assert.strictEqual(request?.headers["user-agent"], "deep-research/0.1 (ops@example.org)")
    })
  )

  it.scopedLive("an empty feed of a result counted empty is no result; of a non-empty one, ProviderUnavailable", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.enqueue("arxiv.query", Emulator.arxivFeed([]))
      const arxiv = yield* arxivAt(emulator)
      assert.deepStrictEqual(yield* arxiv.search("nothing here", { maxResults: 3 }), [])
      yield* emulator.enqueue("arxiv.query", Emulator.arxivFeed([], { total: 120 }))
      const error = yield* Effect.flip(arxiv.search("sparse attention", { maxResults: 3 }))
      assert.strictEqual(error._tag, "ProviderUnavailable")
      assert.include(error.message, "counted 120 results but sent an empty page")
    })
  )

  it.scopedLive("a 503 with Retry-After is ProviderRateLimited for that long; without one, ProviderUnavailable", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      const limited = yield* failure(emulator, { kind: "fault", fault: { type: "rate_limit", retryAfterSeconds: 7 } })
      assert.strictEqual(limited._tag, "ProviderRateLimited")
      if (limited._tag === "ProviderRateLimited") assert.deepStrictEqual(limited.retryAfter, Duration.seconds(7))
      const down = yield* failure(emulator, { kind: "fault", fault: { type: "server_error", status: 503 } })
      assert.strictEqual(down._tag, "ProviderUnavailable")
    })
  )

  it.scopedLive("an error feed is ProviderInvalidRequest; a body that is no feed is ProviderUnavailable", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      const refused = yield* failure(emulator, Emulator.arxivErrorFeed("max_results must be an integer"))
      assert.strictEqual(refused._tag, "ProviderInvalidRequest")
      assert.include(refused.message, "max_results must be an integer")
      const cut = yield* failure(emulator, { kind: "fault", fault: { type: "malformed_json" } })
      assert.strictEqual(cut._tag, "ProviderUnavailable")
    })
  )

  const paced = (latencyMillis: number) =>
    Effect.gen(function* () {
      const reply = Emulator.arxivFeed([entry])
      const recording = yield* recordingClient(
        reply.kind === "raw" ? reply.body : "",
        "application/atom+xml",
        latencyMillis
      )
      const arxiv = yield* Arxiv.make({ httpClient: recording.client })
      const searches = yield* Effect.fork(
        Effect.forEach(["alpha", "beta", "gamma"], (q) => arxiv.search(q, { maxResults: 1 }), {
          concurrency: "unbounded"
        })
      )
      yield* TestClock.adjust(Duration.seconds(30))
      assert.lengthOf((yield* Fiber.join(searches)).flat(), 3)
      return { sent: (yield* recording.sent).map((request) => request.at), mostInFlight: yield* recording.mostInFlight }
    })

  it.scoped("sends one request every three seconds, however many searches wait", () =>
    Effect.gen(function* () {
      const { sent } = yield* paced(1_000)
      assert.deepStrictEqual(sent, [0, 3_000, 6_000])
    })
  )

  it.scoped("keeps to a single connection: a slow answer holds the next request back", () =>
    Effect.gen(function* () {
      const { sent, mostInFlight } = yield* paced(5_000)
      assert.deepStrictEqual(sent, [0, 5_000, 10_000])
      assert.strictEqual(mostInFlight, 1)
    })
  )

  it.scopedLive("its results carry the provider's name as the port requires", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("arxiv.query", Emulator.arxivFeed([entry]))
      const provider: SearchProvider.Service = yield* Arxiv.make({
        baseUrl: emulator.baseUrl("arxiv"),
        name: "preprints",
        interval: Duration.millis(1)
      })
      const [result] = yield* provider.search("sparse", { maxResults: 1 })
      assert.strictEqual(result?.provider, "preprints")
    })
  )
})
