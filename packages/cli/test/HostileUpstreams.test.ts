/**
 * Keyless upstreams that misbehave, served on loopback, cost their own source and never the run or the server: arXiv
 * answers a document nested 100,000 levels deep, OpenAlex a 60 MB body, SearXNG a redirect to another loopback port,
 * PubMed a 429 with a one-hour Retry-After. A `deep-research serve` runs a session over them (the model is the
 * emulator's simulated one, Wikipedia the emulator's): the run completes from Wikipedia, each misbehaving provider is
 * named in the session's events with what was wrong, the redirect's target is never asked, PubMed is asked once, and
 * `/api/health` answers all along.
 */
import { Emulator } from "@deep-research/emulator"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Ref from "effect/Ref"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { post, request, servedWith, settled, sseEvents } from "./ServeHarness.js"

/** A loopback server answering with `handle`, counting its requests by path, for the life of the scope. */
const upstream = (handle: (request: http.IncomingMessage, response: http.ServerResponse) => void) =>
  Effect.acquireRelease(
    Effect.async<{ readonly url: string; readonly server: http.Server; readonly paths: Array<string> }>((resume) => {
      const paths: Array<string> = []
      const server = http.createServer((req, res) => {
        paths.push(new URL(req.url ?? "/", "http://x").pathname)
        handle(req, res)
      })
      server.listen(0, "127.0.0.1", () =>
        resume(Effect.succeed({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, paths }))
      )
    }),
    ({ server }) =>
      Effect.async<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  )

const levels = 100_000
const deepFeed = `<?xml version="1.0" encoding="UTF-8"?>\n<feed xmlns="http://www.w3.org/2005/Atom">${"<a>".repeat(levels)}${"</a>".repeat(levels)}</feed>\n`

/** 60 MB of a JSON-looking body, written a megabyte at a time as the client reads it, with no length announced. */
const hugeBody = (res: http.ServerResponse) => {
  res.writeHead(200, { "content-type": "application/json" })
  const chunk = Buffer.alloc(1024 * 1024, 0x20)
  let sent = 0
  const more = () => {
    while (sent < 60) {
      sent++
      if (!res.write(chunk)) return void res.once("drain", more)
    }
    res.end()
  }
  res.write('{"meta": {"count": 1}, "results": [')
  res.on("close", () => {
    sent = 60
  })
  more()
}

describe("keyless upstreams that misbehave", () => {
  it.scopedLive(
    "a deep document, a 60 MB body, a redirect to loopback and an hour's Retry-After cost their sources; the run completes and serve answers its health check",
    () =>
      Effect.gen(function* () {
        const trap = yield* upstream((_, res) => res.end("secret"))
        const hostile = yield* upstream((req, res) => {
          const path = new URL(req.url ?? "/", "http://x").pathname
          if (path.startsWith("/arxiv/")) {
            res.writeHead(200, { "content-type": "application/atom+xml; charset=utf-8" })
            return res.end(deepFeed)
          }
          if (path.startsWith("/openalex/")) return hugeBody(res)
          if (path.startsWith("/searxng/")) {
            res.writeHead(302, { location: `${trap.url}/internal/admin` })
            return res.end()
          }
          res.writeHead(429, { "content-type": "application/json", "retry-after": "3600" })
          return res.end(JSON.stringify({ error: "API rate limit exceeded", count: "4", limit: "3" }))
        })
        const emulator = yield* Emulator.start()
        yield* Emulator.simulate(emulator, { directives: 1 })
        const s = yield* servedWith(
          { model: "openai:local-model", search: "wikipedia,arxiv,openalex,pubmed,searxng", noClarify: true },
          {
            OPENAI_BASE_URL: emulator.baseUrl("openai"),
            WIKIPEDIA_BASE_URL: emulator.baseUrl("wikipedia"),
            ARXIV_BASE_URL: `${hostile.url}/arxiv/api`,
            OPENALEX_BASE_URL: `${hostile.url}/openalex`,
            PUBMED_BASE_URL: `${hostile.url}/pubmed/entrez/eutils`,
            SEARXNG_URL: `${hostile.url}/searxng`,
            DEEP_RESEARCH_CONTACT: "ops@example.org"
          }
        )
        const started = JSON.parse((yield* post(`${s.url}/api/sessions`, { question: "How do tides work?" })).text)
        const id: string = started.sessionId

        // The health check is asked all through the run.
        const answers = yield* Ref.make<ReadonlyArray<number>>([])
        const running = yield* Ref.make(true)
        const checking = yield* Effect.fork(
          Effect.gen(function* () {
            while (yield* Ref.get(running)) {
              const health = yield* request(`${s.url}/api/health`, { signal: AbortSignal.timeout(60_000) })
              yield* Ref.update(answers, (all) => [...all, health.status])
              yield* Effect.sleep("100 millis")
            }
          })
        )
        const status = yield* settled(s.url, id)
        yield* Ref.set(running, false)
        yield* Fiber.join(checking)

        const health = yield* Ref.get(answers)
        assert.isAbove(health.length, 0, "the health check was asked while the run went on")
        assert.isTrue(
          health.every((code) => code === 200),
          health.join(", ")
        )
        assert.strictEqual(Reflect.get(status, "status"), "completed", JSON.stringify(status))

        const events = sseEvents((yield* request(`${s.url}/api/sessions/${id}/events`)).text)
          .filter((e) => e.event === undefined)
          .map((e): unknown => JSON.parse(e.data))
        const skipped = (provider: string) =>
          events.flatMap((event) =>
            Reflect.get(Object(event), "_tag") === "ProviderSkipped" &&
            Reflect.get(Object(event), "provider") === provider
              ? [String(Reflect.get(Object(event), "reason"))]
              : []
          )
        assert.include(skipped("arxiv")[0] ?? "", "nests elements deeper than 64 levels")
        assert.include(skipped("openalex")[0] ?? "", "openalex's answer was larger than the 1 MB")
        assert.include(skipped("searxng")[0] ?? "", `redirected to ${trap.url}/internal/admin, which is not followed`)
        assert.include(skipped("searxng")[0] ?? "", "loopback")
        assert.include(skipped("pubmed")[0] ?? "", "pubmed is skipped until")
        assert.lengthOf(skipped("pubmed"), 1, "one line for the hour it asked for")
        assert.lengthOf(trap.paths, 0, "the redirect's target was never asked")
        const retried = events.filter(
          (event) =>
            Reflect.get(Object(event), "_tag") === "Retrying" && Reflect.get(Object(event), "provider") !== "openai"
        )
        assert.lengthOf(retried, 0, "no misbehaving source is asked again: the same question gets the same answer")
        assert.isAtMost(
          hostile.paths.filter((path) => path.startsWith("/pubmed/")).length,
          5,
          "PubMed is asked by the queries of one search at most, not again within its hour"
        )
        assert.isAbove(Number(Reflect.get(status, "sources")), 0, "the run goes on with Wikipedia's sources")
      }),
    180_000
  )
})
