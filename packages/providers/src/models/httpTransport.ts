/**
 * The `fetch` the vendors' SDKs are given: a request over Node's `http` and `https` modules, answered with a standard
 * `Response`, in place of Node's own `fetch`, whose web streams cost CPU at every request (BENCHMARKS.md, "Home-made
 * parts"). The SDKs stay the clients: they build every request and read every answer as before; only the bytes travel
 * another way.
 *
 * It behaves as the platform's `fetch` for what the SDKs send: a string or byte body, request headers as given (and
 * `accept-encoding` as `fetch` adds it, with the body decoded), the answer's status, status text and headers (repeated
 * ones kept), a null body where the status has none, an event stream handed on as it arrives (other bodies are read
 * whole first), `AbortError` on abort, before or during the answer, and `TypeError("fetch failed")` with the cause on a
 * network error. What it does not cover goes to the platform's `fetch` unchanged: another body (a stream, a form), a
 * `Request` object, a protocol other than HTTP(S), options of the platform's own client (a proxy's dispatcher), and
 * every redirect, which is sent again there to be followed as `fetch` follows it.
 */
import * as http from "node:http"
import * as https from "node:https"
import { pipeline, Readable } from "node:stream"
import * as zlib from "node:zlib"

// Kept-alive connections, shared as `fetch` shares its own; an idle one does not keep the process alive.
const agents = {
  "http:": new http.Agent({ keepAlive: true }),
  "https:": new https.Agent({ keepAlive: true })
} as const

/** The options of `RequestInit` this transport honours; any other given one sends the request to `fetch`. */
const handledOptions = new Set(["method", "headers", "body", "signal", "duplex", "redirect", "keepalive"])

const redirectStatuses = new Set([301, 302, 303, 307, 308])
const nullBodyStatuses = new Set([101, 103, 204, 205, 304])

type Body = string | Uint8Array | undefined

/** The request's body as bytes or text, or `null` when it is of a kind this transport leaves to `fetch`. */
const bodyOf = (body: RequestInit["body"]): Body | null => {
  if (body === undefined || body === null) return undefined
  if (typeof body === "string" || body instanceof Uint8Array) return body
  if (body instanceof ArrayBuffer) return new Uint8Array(body)
  return null
}

const handles = (input: Parameters<typeof fetch>[0], init: RequestInit | undefined): URL | undefined => {
  if (typeof input !== "string" && !(input instanceof URL)) return undefined
  const url = new URL(input)
  if (url.protocol !== "http:" && url.protocol !== "https:") return undefined
  if (init !== undefined) {
    for (const [key, value] of Object.entries(init)) {
      if (value !== undefined && !handledOptions.has(key)) return undefined
    }
    if (init.redirect !== undefined && init.redirect !== "follow") return undefined
    if (bodyOf(init.body) === null) return undefined
  }
  return url
}

const abortReason = (signal: AbortSignal): unknown =>
  signal.reason ?? new DOMException("This operation was aborted", "AbortError")

/** The decoder of a content encoding `fetch` decodes. */
const decoderOf = (encoding: string | undefined): zlib.Gunzip | zlib.Inflate | zlib.BrotliDecompress | undefined => {
  switch (encoding?.trim().toLowerCase()) {
    case "gzip":
    case "x-gzip":
      return zlib.createGunzip({ flush: zlib.constants.Z_SYNC_FLUSH, finishFlush: zlib.constants.Z_SYNC_FLUSH })
    case "deflate":
      return zlib.createInflate({ flush: zlib.constants.Z_SYNC_FLUSH, finishFlush: zlib.constants.Z_SYNC_FLUSH })
    case "br":
      return zlib.createBrotliDecompress({
        flush: zlib.constants.BROTLI_OPERATION_FLUSH,
        finishFlush: zlib.constants.BROTLI_OPERATION_FLUSH
      })
    default:
      return undefined
  }
}

/** The answer's body, decoded as `fetch` decodes it; a connection lost mid-body fails it. */
const decoded = (message: http.IncomingMessage): Readable => {
  const decoder = decoderOf(message.headers["content-encoding"])
  return decoder === undefined ? message : pipeline(message, decoder, () => {})
}

const headersOf = (message: http.IncomingMessage): Headers => {
  const headers = new Headers()
  const raw = message.rawHeaders
  for (let i = 0; i + 1 < raw.length; i += 2) headers.append(raw[i]!, raw[i + 1]!)
  return headers
}

const isEventStream = (message: http.IncomingMessage): boolean =>
  (message.headers["content-type"] ?? "").toLowerCase().startsWith("text/event-stream")

/** How an answer ends: a response, a failure, or a redirect (to be sent again by the platform's `fetch`). */
interface Outcome {
  /** The body is read from this from now on (and ended from it on abort). */
  readonly reading: (body: Readable) => void
  readonly respond: (response: Response) => void
  readonly fail: (error: unknown) => void
  readonly redirect: () => void
}

/**
 * Turns an answer into a `Response`: at once when it has no body or carries an event stream, when its body has been
 * read otherwise.
 */
const receive = (message: http.IncomingMessage, method: string, outcome: Outcome): void => {
  const status = message.statusCode ?? 0
  if (redirectStatuses.has(status) && message.headers.location !== undefined) {
    message.resume()
    outcome.redirect()
    return
  }
  const init = { status, statusText: message.statusMessage ?? "", headers: headersOf(message) }
  if (nullBodyStatuses.has(status) || method === "HEAD") {
    message.resume()
    outcome.respond(new Response(null, init))
    return
  }
  const body = decoded(message)
  outcome.reading(body)
  body.on("error", outcome.fail)
  if (isEventStream(message)) {
    outcome.respond(new Response(Readable.toWeb(body) as ReadableStream<Uint8Array>, init))
    return
  }
  const chunks: Array<Buffer> = []
  body.on("data", (chunk: Buffer) => chunks.push(chunk))
  body.on("end", () => {
    try {
      outcome.respond(new Response(Buffer.concat(chunks), init))
    } catch (error) {
      outcome.fail(error)
    }
  })
}

/** Sends one request the transport handles; `redirected` answers instead when the server redirects. */
const send = (url: URL, init: RequestInit | undefined, redirected: () => Promise<Response>): Promise<Response> =>
  new Promise<Response>((resolve, reject) => {
    const signal = init?.signal ?? undefined
    if (signal?.aborted === true) return reject(abortReason(signal))
    const method = (init?.method ?? "GET").toUpperCase()
    // As bytes: Node writes the head with a string body's encoding (UTF-8), where fetch writes header values as
    // Latin-1 bytes. (Written as a string, the body would also be copied again with the head, two bytes a character
    // when it holds any beyond Latin-1.)
    const given = bodyOf(init?.body) ?? undefined
    const body = typeof given === "string" ? Buffer.from(given, "utf8") : given
    // A `Headers` (what the SDKs give) is read as it is; anything else is normalised by one first.
    const givenHeaders = init?.headers instanceof Headers ? init.headers : new Headers(init?.headers)
    const headers: Record<string, string> = {}
    givenHeaders.forEach((value, name) => {
      headers[name] = value
    })
    if (headers["accept-encoding"] === undefined) {
      headers["accept-encoding"] = url.protocol === "https:" ? "br, gzip, deflate" : "gzip, deflate"
    }
    if (body !== undefined) headers["content-length"] = String(body.byteLength)

    // Settled once; an abort after that (an event stream being read) ends the body with the abort's reason.
    let settled = false
    let answer: Readable | undefined
    const stopListening = () => signal?.removeEventListener("abort", onAbort)
    const settle = (f: () => void) => {
      // An event stream is still being read when it is answered: its body stops the listening when it closes.
      if (answer === undefined || answer.readableEnded || answer.destroyed) stopListening()
      if (settled) return
      settled = true
      f()
    }
    const onAbort = () => {
      const reason = abortReason(signal!)
      request.destroy()
      answer?.destroy(reason instanceof Error ? reason : new DOMException("This operation was aborted", "AbortError"))
      settle(() => reject(reason))
    }
    const outcome: Outcome = {
      reading: (body) => {
        answer = body
        body.once("close", stopListening)
      },
      respond: (response) => settle(() => resolve(response)),
      fail: (error) => settle(() => reject(new TypeError("fetch failed", { cause: error }))),
      redirect: () => settle(() => redirected().then(resolve, reject))
    }

    const request = (url.protocol === "https:" ? https : http).request(
      url,
      { method, headers, agent: agents[url.protocol as "http:" | "https:"] },
      (message) => {
        try {
          receive(message, method, outcome)
        } catch (error) {
          message.destroy()
          outcome.fail(error)
        }
      }
    )
    request.on("error", outcome.fail)
    signal?.addEventListener("abort", onAbort, { once: true })
    request.end(body)
  })

/** `fetch` over Node's `http` and `https`, for the SDKs; what it does not cover goes to `platformFetch`. */
export const make =
  (platformFetch: typeof fetch = globalThis.fetch): typeof fetch =>
  (input, init) => {
    let url: URL | undefined
    try {
      url = handles(input, init)
    } catch {
      // Whatever the platform's fetch says of an input this transport cannot read.
      return platformFetch(input, init)
    }
    return url === undefined ? platformFetch(input, init) : send(url, init, () => platformFetch(input, init))
  }

/** The transport over the platform's `fetch` as it is when a request is sent. */
export const fetch: typeof globalThis.fetch = make((input, init) => globalThis.fetch(input, init))
