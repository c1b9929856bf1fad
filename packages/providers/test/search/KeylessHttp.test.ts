/**
 * The keyless client's guards, against a loopback server of the test's own: the size limit counted as the body streams
 * (with or without a declared length), redirects followed back to the host first asked and refused to another loopback
 * port, a Retry-After longer than a run waits turned into a skip until then, and XML read a slice at a time (the event
 * loop runs between slices) and refused past its depth limit.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Duration, Effect } from "effect"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as Http from "../../src/search/keyless/http.js"
import * as Xml from "../../src/search/keyless/xml.js"

const serve = (handle: (request: http.IncomingMessage, response: http.ServerResponse) => void) =>
  Effect.acquireRelease(
    Effect.async<{ readonly url: string; readonly server: http.Server }>((resume) => {
      const server = http.createServer(handle)
      server.listen(0, "127.0.0.1", () =>
        resume(Effect.succeed({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server }))
      )
    }),
    ({ server }) =>
      Effect.async<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  )

const get = (url: string, accept = "application/json") =>
  Http.get({ provider: "test", url, headers: {}, accept, timeout: Duration.seconds(20) })

describe("the keyless client", () => {
  it.scopedLive("reads no further than its limit, declared or not, and says so naming the provider and the limit", () =>
    Effect.gen(function* () {
      const big = Buffer.alloc(3 * 1024 * 1024, 0x20)
      const server = yield* serve((req, res) => {
        if (req.url === "/declared") res.writeHead(200, { "content-length": String(big.length) })
        else res.writeHead(200, { "content-type": "application/json" })
        res.end(big)
      })
      for (const path of ["/declared", "/chunked"]) {
        const error = yield* Effect.flip(get(`${server.url}${path}`))
        assert.strictEqual(error._tag, "ProviderQuotaExhausted")
        assert.include(error.message, "test's answer was larger than the 1 MB a keyless search answer may be")
      }
      const xml = yield* get(`${server.url}/chunked`, "application/xml")
      assert.strictEqual(xml.text.length, big.length, "4 MB of XML may be read")
    })
  )

  it.scopedLive("follows a redirect back to the host first asked, and none to another loopback port", () =>
    Effect.gen(function* () {
      const elsewhere = yield* serve((_, res) => res.end("{}"))
      const server = yield* serve((req, res) => {
        if (req.url === "/moved") {
          res.writeHead(301, { location: "/here" })
          return res.end()
        }
        if (req.url === "/away") {
          res.writeHead(302, { location: `${elsewhere.url}/secret` })
          return res.end()
        }
        res.writeHead(200, { "content-type": "application/json" })
        res.end('{"here": true}')
      })
      assert.strictEqual((yield* get(`${server.url}/moved`)).text, '{"here": true}')
      const refused = yield* Effect.flip(get(`${server.url}/away`))
      assert.strictEqual(refused._tag, "ProviderQuotaExhausted")
      assert.include(refused.message, `redirected to ${elsewhere.url}/secret, which is not followed`)
      assert.include(refused.message, "loopback")
    })
  )

  it.scopedLive("a Retry-After longer than a minute skips the provider until then; a shorter one is a rate limit", () =>
    Effect.gen(function* () {
      const server = yield* serve((req, res) => {
        res.writeHead(429, { "retry-after": req.url === "/hour" ? "3600" : "30" })
        res.end("slow down")
      })
      const now = yield* Clock.currentTimeMillis
      const hour = yield* Effect.flip(get(`${server.url}/hour`))
      assert.strictEqual(hour._tag, "ProviderQuotaExhausted")
      if (hour._tag === "ProviderQuotaExhausted") {
        assert.isAtLeast(hour.until ?? 0, now + 3_600_000)
        assert.include(hour.message, "test is skipped until")
        assert.include(hour.message, "it asked to be called again in 1h (Retry-After)")
      }
      const short = yield* Effect.flip(get(`${server.url}/short`))
      assert.strictEqual(short._tag, "ProviderRateLimited")
    })
  )

  it.live("XML is read a slice at a time, the event loop running between slices", () =>
    Effect.gen(function* () {
      const entries = Array.from({ length: 3_000 }, (_, i) => `<entry><id>${i}</id><title>Paper ${i}</title></entry>`)
      const text = `<feed>${entries.join("")}</feed>`
      assert.isAbove(text.length, 4 * Xml.sliceCharacters)
      let ticks = 0
      let ticking = true
      const tick = () => {
        ticks++
        if (ticking) setImmediate(tick)
      }
      setImmediate(tick)
      const feed = yield* Xml.parse(text, "feed", "test")
      ticking = false
      assert.lengthOf(Xml.all(feed ?? assert.fail("no feed"), "entry"), 3_000)
      assert.isAtLeast(ticks, 3, "other work ran while the answer was parsed")
    })
  )

  it.live("records are read one by one as they close, in order, and are not kept in the tree", () =>
    Effect.gen(function* () {
      const entries = Array.from({ length: 3_000 }, (_, i) => `<entry><id>${i}</id><title>Paper ${i}</title></entry>`)
      const text = `<feed><title>Results</title>${entries.join("")}<other><entry><id>nested</id></entry></other></feed>`
      let ticks = 0
      let ticking = true
      const tick = () => {
        ticks++
        if (ticking) setImmediate(tick)
      }
      setImmediate(tick)
      const read = yield* Xml.parseEach(text, "feed", "test", ["entry"], (entry) => [Xml.textOf(entry, "id") ?? ""])
      ticking = false
      const { items, root } = read ?? assert.fail("no feed")
      assert.deepStrictEqual(
        items,
        Array.from({ length: 3_000 }, (_, i) => String(i))
      )
      // Only the root's own records are taken; the rest of the tree is kept as it was.
      assert.deepStrictEqual(
        Xml.all(root, "entry").map((entry) => Xml.textOf(entry, "id")),
        ["nested"]
      )
      assert.strictEqual(Xml.textOf(root, "title"), "Results")
      assert.isAtLeast(ticks, 3, "other work ran while the answer was read")
      assert.isUndefined(yield* Xml.parseEach(`<feed><entry>`, "feed", "test", ["entry"], () => [1]))
    })
  )

  it.live("XML nested deeper than the limit is refused, naming the provider and the limit", () =>
    Effect.gen(function* () {
      const text = `<feed>${"<a>".repeat(100_000)}${"</a>".repeat(100_000)}</feed>`
      const error = yield* Effect.flip(Xml.parse(text, "feed", "arxiv"))
      assert.include(error.message, `arxiv's answer nests elements deeper than ${Xml.maxDepth} levels`)
      const shallow = yield* Xml.parse(`<feed>${"<a>".repeat(20)}x${"</a>".repeat(20)}</feed>`, "feed", "arxiv")
      assert.strictEqual(shallow?.textContent, "x")
    })
  )
})
