import { assert, describe, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import * as fs from "node:fs"
import * as http from "node:http"
import * as https from "node:https"
import type * as net from "node:net"
import * as zlib from "node:zlib"
import * as HttpExtractor from "../../src/extract/HttpExtractor.js"
import { Emulator } from "@deep-research/emulator"

const portOf = (server: net.Server): number => {
  const address = server.address()
  if (address === null || typeof address === "string") throw new Error("the test server is not listening on TCP")
  return address.port
}

type Handler = (request: http.IncomingMessage, response: http.ServerResponse) => void

interface TestServer {
  readonly port: number
  readonly origin: string
  readonly seen: Array<{ readonly path: string; readonly host: string | undefined }>
}

/** A loopback server for the test; routes by path. */
const serve = (routes: Record<string, Handler>) =>
  Effect.acquireRelease(
    Effect.async<{ server: http.Server; state: TestServer }>((resume) => {
      const seen: TestServer["seen"] = []
      const server = http.createServer((request, response) => {
        seen.push({ path: request.url ?? "", host: request.headers.host })
        const handler = routes[new URL(request.url ?? "/", "http://x").pathname]
        if (handler === undefined) {
          response.writeHead(404, { "content-type": "text/plain" }).end("not found")
          return
        }
        handler(request, response)
      })
      server.listen(0, "127.0.0.1", () => {
        const port = portOf(server)
        resume(Effect.succeed({ server, state: { port, origin: `http://127.0.0.1:${port}`, seen } }))
      })
    }),
    ({ server }) =>
      Effect.async<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  ).pipe(Effect.map(({ state }) => state))

const tlsFixture = (name: string) => fs.readFileSync(new URL(`../fixtures/tls/${name}`, import.meta.url), "utf8")
const certificate = tlsFixture("secure.test.crt")

/** A loopback HTTPS server presenting the certificate of `secure.test`; records the TLS server name asked for. */
const serveTls = (body: string) =>
  Effect.acquireRelease(
    Effect.async<{ server: https.Server; port: number; names: Array<string | false> }>((resume) => {
      const names: Array<string | false> = []
      const server = https.createServer(
        { key: tlsFixture("secure.test.key"), cert: certificate },
        (request, response) => {
          const socket = request.socket
          names.push("servername" in socket && typeof socket.servername === "string" ? socket.servername : false)
          response.writeHead(200, { "content-type": "text/plain" }).end(body)
        }
      )
      server.listen(0, "127.0.0.1", () => {
        const port = portOf(server)
        resume(Effect.succeed({ server, port, names }))
      })
    }),
    ({ server }) =>
      Effect.async<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  )

const toLoopback = () => Promise.resolve([{ address: "127.0.0.1", family: 4 }])

const send =
  (contentType: string, body: string | Buffer, headers: Record<string, string> = {}): Handler =>
  (_request, response) => {
    response.writeHead(200, { "content-type": contentType, ...headers }).end(body)
  }

const redirect =
  (location: string, status = 302): Handler =>
  (_request, response) => {
    response.writeHead(status, { location }).end()
  }

const article = `<!doctype html><html><head><title>Zebra facts</title><script>var secret = "tracking code"</script></head>
<body><nav><a href="/">Home</a> | <a href="/menu">Menu</a></nav>
<article><h1>Zebras</h1>
<p>Zebras are African equines with distinctive black-and-white striped coats. There are three living species: the
Grevy's zebra, the plains zebra and the mountain zebra. Stripes deter biting flies, which fail to land on them.</p>
<p>Zebras share the genus Equus with horses and asses. Each zebra's stripe pattern is unique to the individual, and
foals recognise their mother by it. See <a href="/more">the longer article</a> for details.</p>
<h2>Habitat</h2><ul><li>Savannas</li><li>Grasslands</li></ul></article>
<footer>Copyright</footer></body></html>`

const pdfFixture = fs.readFileSync(new URL("../fixtures/corpus/mantis-shrimp.pdf", import.meta.url))

const fetchEither = (url: string, options?: HttpExtractor.Options) =>
  Effect.either(HttpExtractor.fetchPage(url, options))

const blockedReason = (result: Either.Either<unknown, { readonly _tag: string; readonly message: string }>) => {
  assert.isTrue(Either.isLeft(result), "expected a failure")
  if (Either.isRight(result)) return ""
  assert.strictEqual(result.left._tag, "UrlBlocked", result.left.message)
  return result.left.message
}

describe("HttpExtractor", () => {
  describe("refusals", () => {
    it.effect("refuses schemes other than http and https", () =>
      Effect.gen(function* () {
        for (const url of ["file:///etc/passwd", "ftp://example.com/file.txt", "gopher://example.com/"]) {
          assert.include(blockedReason(yield* fetchEither(url)), "not http(s)", url)
        }
      })
    )

    it.scopedLive("refuses a loopback server that is not allowed, without connecting to it", () =>
      Effect.gen(function* () {
        const server = yield* serve({ "/": send("text/plain", "secret") })
        assert.include(blockedReason(yield* fetchEither(`${server.origin}/`)), "loopback")
        assert.strictEqual(server.seen.length, 0)
      })
    )

    it.scopedLive("refuses loopback written in decimal, octal, hex and IPv4-mapped IPv6", () =>
      Effect.gen(function* () {
        const server = yield* serve({ "/": send("text/plain", "secret") })
        const forms = [
          `http://2130706433:${server.port}/`,
          `http://0177.0.0.1:${server.port}/`,
          `http://0x7f.0.0.1:${server.port}/`,
          `http://0x7f000001:${server.port}/`,
          `http://127.1:${server.port}/`,
          `http://[::ffff:127.0.0.1]:${server.port}/`,
          `http://[::1]:${server.port}/`
        ]
        for (const url of forms) assert.include(blockedReason(yield* fetchEither(url)), "loopback", url)
        assert.strictEqual(server.seen.length, 0)
      })
    )

    it.effect("refuses private, link-local, CGNAT, multicast, unspecified and broadcast addresses", () =>
      Effect.gen(function* () {
        const cases: ReadonlyArray<readonly [string, string]> = [
          ["http://10.0.0.1/", "private"],
          ["http://172.16.5.4/", "private"],
          ["http://192.168.1.1/admin", "private"],
          ["http://169.254.1.1/", "link-local"],
          ["http://[fe80::1]/", "link-local"],
          ["http://100.64.0.1/", "carrier-grade NAT"],
          ["http://224.0.0.1/", "multicast"],
          ["http://[ff02::1]/", "multicast"],
          ["http://0.0.0.0/", "unspecified"],
          ["http://[::]/", "unspecified"],
          ["http://255.255.255.255/", "broadcast"],
          ["http://[fd12:3456::1]/", "unique-local"]
        ]
        for (const [url, kind] of cases) assert.include(blockedReason(yield* fetchEither(url)), kind, url)
      })
    )

    it.effect("refuses cloud metadata endpoints by address and by name", () =>
      Effect.gen(function* () {
        for (const url of [
          "http://169.254.169.254/latest/meta-data/",
          "http://[fd00:ec2::254]/latest/meta-data/",
          "http://metadata.google.internal/computeMetadata/v1/",
          "http://metadata.google.internal./computeMetadata/v1/",
          "http://[::ffff:169.254.169.254]/"
        ]) {
          assert.include(blockedReason(yield* fetchEither(url)), "metadata", url)
        }
      })
    )

    it.effect("refuses localhost by name", () =>
      Effect.gen(function* () {
        assert.include(blockedReason(yield* fetchEither("http://localhost:1/")), "loopback")
      })
    )

    it.effect("refuses a host name that resolves to a private address", () =>
      Effect.gen(function* () {
        const lookup = (hostname: string) =>
          Promise.resolve(hostname === "intranet.test" ? [{ address: "10.1.2.3", family: 4 }] : [])
        const reason = blockedReason(yield* fetchEither("http://intranet.test/", { lookup }))
        assert.include(reason, "resolves to a private address (10.1.2.3)")
      })
    )

    it.effect("refuses a host name when any one of its addresses is private", () =>
      Effect.gen(function* () {
        const lookup = () =>
          Promise.resolve([
            { address: "93.184.216.34", family: 4 },
            { address: "::1", family: 6 }
          ])
        assert.include(blockedReason(yield* fetchEither("https://mixed.test/", { lookup })), "loopback")
      })
    )

    it.scopedLive("re-checks redirects and refuses one that leads to a forbidden address", () =>
      Effect.gen(function* () {
        const server = yield* serve({
          "/to-localhost": redirect(`http://localhost:${0}/`),
          "/to-metadata": redirect("http://169.254.169.254/latest/meta-data/", 301),
          "/to-file": redirect("file:///etc/passwd")
        })
        const options = { allowedHosts: ["127.0.0.1"] }
        assert.include(blockedReason(yield* fetchEither(`${server.origin}/to-localhost`, options)), "loopback")
        assert.include(blockedReason(yield* fetchEither(`${server.origin}/to-metadata`, options)), "metadata")
        assert.include(blockedReason(yield* fetchEither(`${server.origin}/to-file`, options)), "not http(s)")
      })
    )

    it.scopedLive("follows at most five redirects", () =>
      Effect.gen(function* () {
        const hops: Record<string, Handler> = {}
        for (let n = 0; n < 6; n++) hops[`/hop${n}`] = redirect(`/hop${n + 1}`)
        hops["/hop6"] = send("text/plain", "arrived after six redirects")
        hops["/short5"] = redirect("/hop2")
        const server = yield* serve(hops)
        const options = { allowedHosts: ["127.0.0.1"] }
        const tooMany = yield* fetchEither(`${server.origin}/hop0`, options)
        assert.isTrue(Either.isLeft(tooMany) && tooMany.left.message.includes("more than 5 redirects"))
        // /short5 -> hop2 -> hop3 -> hop4 -> hop5 -> hop6: five redirects, allowed
        const page = yield* HttpExtractor.fetchPage(`${server.origin}/short5`, options)
        assert.strictEqual(page.content, "arrived after six redirects")
      })
    )

    it.scopedLive("refuses a body larger than the cap while streaming it", () =>
      Effect.gen(function* () {
        const server = yield* serve({
          "/stream": (_request, response) => {
            response.writeHead(200, { "content-type": "text/plain" })
            for (let i = 0; i < 50; i++) response.write("x".repeat(1000))
            response.end()
          }
        })
        const reason = blockedReason(
          yield* fetchEither(`${server.origin}/stream`, { allowedHosts: ["127.0.0.1"], maxBytes: 10_000 })
        )
        assert.include(reason, "larger than 10000 bytes")
      })
    )

    it.scopedLive("refuses a body whose declared length exceeds the cap", () =>
      Effect.gen(function* () {
        const server = yield* serve({ "/big": send("text/plain", "y".repeat(20_000), { "content-length": "20000" }) })
        const reason = blockedReason(
          yield* fetchEither(`${server.origin}/big`, { allowedHosts: ["127.0.0.1"], maxBytes: 10_000 })
        )
        assert.include(reason, "(20000)", reason)
      })
    )

    it.scopedLive("refuses a compressed body that inflates past the cap", () =>
      Effect.gen(function* () {
        const bomb = zlib.gzipSync(Buffer.alloc(200_000, 0x61))
        const server = yield* serve({ "/bomb": send("text/plain", bomb, { "content-encoding": "gzip" }) })
        const reason = blockedReason(
          yield* fetchEither(`${server.origin}/bomb`, { allowedHosts: ["127.0.0.1"], maxBytes: 50_000 })
        )
        assert.include(reason, "larger than 50000 bytes")
      })
    )

    it.scopedLive("refuses content types other than text, HTML and PDF", () =>
      Effect.gen(function* () {
        const server = yield* serve({
          "/image": send("image/png", Buffer.from([0x89, 0x50, 0x4e, 0x47])),
          "/binary": send("application/octet-stream", "bytes"),
          "/json": send("application/json", "{}")
        })
        const options = { allowedHosts: ["127.0.0.1"] }
        assert.include(blockedReason(yield* fetchEither(`${server.origin}/image`, options)), "image/png")
        assert.include(blockedReason(yield* fetchEither(`${server.origin}/binary`, options)), "octet-stream")
        assert.include(blockedReason(yield* fetchEither(`${server.origin}/json`, options)), "application/json")
      })
    )

    it.scopedLive("refuses PDF when PDF reading is turned off", () =>
      Effect.gen(function* () {
        const server = yield* serve({ "/paper.pdf": send("application/pdf", pdfFixture) })
        const reason = blockedReason(
          yield* fetchEither(`${server.origin}/paper.pdf`, { allowedHosts: ["127.0.0.1"], pdf: false })
        )
        assert.include(reason, "application/pdf")
      })
    )

    it.scopedLive("reports a server that drops the connection in the middle of the page", () =>
      Effect.gen(function* () {
        const server = yield* serve({
          "/cut": (_request, response) => {
            response.writeHead(200, { "content-type": "text/plain", "content-length": "1000" })
            response.write("the beginning of a longer text")
            setTimeout(() => response.socket?.destroy(), 20)
          }
        })
        const result = yield* fetchEither(`${server.origin}/cut`, { allowedHosts: ["127.0.0.1"] })
        assert.isTrue(Either.isLeft(result))
        if (Either.isLeft(result)) {
          assert.strictEqual(result.left._tag, "FetchFailed")
          assert.include(result.left.message, "closed the connection before the page was complete")
        }
      })
    )

    it.scopedLive("gives up on a server that does not answer within the time limit", () =>
      Effect.gen(function* () {
        const server = yield* serve({ "/hang": () => {} })
        const result = yield* fetchEither(`${server.origin}/hang`, {
          allowedHosts: ["127.0.0.1"],
          timeout: "200 millis"
        })
        assert.isTrue(Either.isLeft(result))
        if (Either.isLeft(result)) {
          assert.strictEqual(result.left._tag, "FetchFailed")
          assert.include(result.left.message, "no answer within")
        }
      })
    )
  })

  describe("reading", () => {
    it.scopedLive("extracts the main content of an HTML page as markdown without scripts or navigation", () =>
      Effect.gen(function* () {
        const server = yield* serve({ "/zebras": send("text/html; charset=utf-8", article) })
        const page = yield* HttpExtractor.fetchPage(`${server.origin}/zebras`, { allowedHosts: ["127.0.0.1"] })
        assert.strictEqual(page.title, "Zebra facts")
        assert.strictEqual(page.contentType, "text/html")
        assert.include(page.content, "Stripes deter biting flies")
        assert.include(page.content, "## Habitat")
        assert.match(page.content, /- +Savannas/)
        assert.include(page.content, `[the longer article](${server.origin}/more)`)
        assert.notInclude(page.content, "tracking code")
        assert.notInclude(page.content, "Copyright")
      })
    )

    it.scopedLive("passes plain text and markdown through", () =>
      Effect.gen(function* () {
        const server = yield* serve({
          "/notes.txt": send("text/plain; charset=utf-8", "Plain notes about zebras.\nSecond line."),
          "/readme.md": send("text/markdown", "# Read me\n\nSome *markdown* text.")
        })
        const options = { allowedHosts: ["127.0.0.1"] }
        const text = yield* HttpExtractor.fetchPage(`${server.origin}/notes.txt`, options)
        assert.strictEqual(text.content, "Plain notes about zebras.\nSecond line.")
        assert.strictEqual(text.title, "notes.txt")
        const markdown = yield* HttpExtractor.fetchPage(`${server.origin}/readme.md`, options)
        assert.strictEqual(markdown.content, "# Read me\n\nSome *markdown* text.")
        assert.strictEqual(markdown.title, "Read me")
        assert.strictEqual(markdown.contentType, "text/markdown")
      })
    )

    it.scopedLive("decodes the charset the server declares", () =>
      Effect.gen(function* () {
        const server = yield* serve({
          "/latin1": send("text/plain; charset=iso-8859-1", Buffer.from("café crème", "latin1"))
        })
        const page = yield* HttpExtractor.fetchPage(`${server.origin}/latin1`, { allowedHosts: ["127.0.0.1"] })
        assert.strictEqual(page.content, "café crème")
      })
    )

    it.scopedLive("reads gzip-compressed pages", () =>
      Effect.gen(function* () {
        const server = yield* serve({
          "/zebras": send("text/html", zlib.gzipSync(Buffer.from(article)), { "content-encoding": "gzip" })
        })
        const page = yield* HttpExtractor.fetchPage(`${server.origin}/zebras`, { allowedHosts: ["127.0.0.1"] })
        assert.include(page.content, "Stripes deter biting flies")
      })
    )

    it.scopedLive("reads the text of a PDF document", () =>
      Effect.gen(function* () {
        const server = yield* serve({ "/paper.pdf": send("application/pdf", pdfFixture) })
        const page = yield* HttpExtractor.fetchPage(`${server.origin}/paper.pdf`, { allowedHosts: ["127.0.0.1"] })
        assert.strictEqual(page.title, "Mantis shrimp vision")
        assert.strictEqual(page.contentType, "application/pdf")
        assert.include(page.content, "sixteen types of photoreceptor cells")
      })
    )

    it.scopedLive("follows a relative redirect on an allowed host", () =>
      Effect.gen(function* () {
        const server = yield* serve({ "/old": redirect("/new", 301), "/new": send("text/plain", "moved here") })
        const page = yield* HttpExtractor.fetchPage(`${server.origin}/old`, { allowedHosts: ["127.0.0.1"] })
        assert.strictEqual(page.content, "moved here")
        assert.deepStrictEqual(
          server.seen.map((r) => r.path),
          ["/old", "/new"]
        )
      })
    )

    it.scopedLive("connects to the address it checked and sends the original host name", () =>
      Effect.gen(function* () {
        const server = yield* serve({ "/page": send("text/plain", "served by name") })
        const lookups: Array<string> = []
        const lookup = (hostname: string) => {
          lookups.push(hostname)
          return Promise.resolve([{ address: "127.0.0.1", family: 4 }])
        }
        const page = yield* HttpExtractor.fetchPage(`http://docs.test:${server.port}/page`, {
          allowedHosts: ["docs.test"],
          lookup
        })
        assert.strictEqual(page.content, "served by name")
        assert.deepStrictEqual(lookups, ["docs.test"])
        assert.strictEqual(server.seen[0]?.host, `docs.test:${server.port}`)
      })
    )

    it.scopedLive("an allowed host:port entry allows only that port", () =>
      Effect.gen(function* () {
        const server = yield* serve({ "/": send("text/plain", "ok") })
        const allowed = yield* fetchEither(`${server.origin}/`, { allowedHosts: [`127.0.0.1:${server.port}`] })
        assert.isTrue(Either.isRight(allowed))
        const other = yield* fetchEither(`http://127.0.0.1:${server.port + 1}/`, {
          allowedHosts: [`127.0.0.1:${server.port}`]
        })
        assert.include(blockedReason(other), "loopback")
      })
    )
  })

  describe("https", () => {
    it.scopedLive("connects to the checked address with the host name as TLS server name and verifies it", () =>
      Effect.gen(function* () {
        const server = yield* serveTls("secret over TLS")
        const page = yield* HttpExtractor.fetchPage(`https://secure.test:${server.port}/doc.txt`, {
          allowedHosts: ["secure.test"],
          lookup: toLoopback,
          extraCertificates: [certificate]
        })
        assert.strictEqual(page.content, "secret over TLS")
        assert.deepStrictEqual(server.names, ["secure.test"])
      })
    )

    it.scopedLive("refuses a certificate that does not name the host", () =>
      Effect.gen(function* () {
        const server = yield* serveTls("should not be read")
        const result = yield* fetchEither(`https://other.test:${server.port}/`, {
          allowedHosts: ["other.test"],
          lookup: toLoopback,
          extraCertificates: [certificate]
        })
        assert.isTrue(Either.isLeft(result))
        if (Either.isLeft(result)) {
          assert.strictEqual(result.left._tag, "FetchFailed")
          assert.include(result.left.message, "other.test")
        }
        assert.deepStrictEqual(server.names, [])
      })
    )

    it.scopedLive("refuses a certificate no trusted authority signed", () =>
      Effect.gen(function* () {
        const server = yield* serveTls("should not be read")
        const result = yield* fetchEither(`https://secure.test:${server.port}/`, {
          allowedHosts: ["secure.test"],
          lookup: toLoopback
        })
        assert.isTrue(Either.isLeft(result))
        if (Either.isLeft(result)) assert.include(result.left.message, "self-signed")
      })
    )
  })

  describe("against the emulator's web pages", () => {
    it.scopedLive("reads a page the emulator serves and reports its 404 as a failure", () =>
      Effect.gen(function* () {
        const emulator = yield* Emulator.start()
        yield* emulator.respond("web.page", Emulator.webPages({ "/zebras.html": article }))
        const extractor = HttpExtractor.make({ allowedHosts: ["127.0.0.1"] })
        const [page, missing] = yield* extractor.extract([
          `${emulator.baseUrl("web")}/zebras.html`,
          `${emulator.baseUrl("web")}/missing.html`
        ])
        assert.strictEqual(page?._tag, "ExtractedPage")
        if (page?._tag === "ExtractedPage") assert.include(page.content, "Stripes deter biting flies")
        assert.strictEqual(missing?._tag, "ExtractFailure")
        if (missing?._tag === "ExtractFailure") assert.include(missing.reason, "status 404")
      })
    )
  })

  describe("extract", () => {
    it.scopedLive("returns one result per URL in order, failures alongside pages", () =>
      Effect.gen(function* () {
        const server = yield* serve({ "/zebras": send("text/html", article), "/image": send("image/png", "png") })
        const extractor = HttpExtractor.make({ allowedHosts: ["127.0.0.1"] })
        const results = yield* extractor.extract([
          `${server.origin}/zebras`,
          "http://169.254.169.254/latest/meta-data/",
          `${server.origin}/missing`,
          `${server.origin}/image`,
          "not a url"
        ])
        assert.deepStrictEqual(
          results.map((r) => r._tag),
          ["ExtractedPage", "ExtractFailure", "ExtractFailure", "ExtractFailure", "ExtractFailure"]
        )
        assert.deepStrictEqual(
          results.map((r) => r.url),
          [
            `${server.origin}/zebras`,
            "http://169.254.169.254/latest/meta-data/",
            `${server.origin}/missing`,
            `${server.origin}/image`,
            "not a url"
          ]
        )
        const reasons = results.flatMap((r) => (r._tag === "ExtractFailure" ? [r.reason] : []))
        assert.include(reasons[0], "blocked: 169.254.169.254 is a cloud metadata address")
        assert.include(reasons[1], "status 404")
        assert.include(reasons[2], "image/png")
        assert.include(reasons[3], "not a valid URL")
      })
    )
  })
})
