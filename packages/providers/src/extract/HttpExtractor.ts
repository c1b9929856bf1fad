/**
 * A `ContentExtractor` that reads pages itself, without a paid extract API. Pages are untrusted, so fetching is
 * safe by default: http(s) only; the host is resolved and every address it resolves to is checked (no loopback,
 * private, link-local, CGNAT, multicast or metadata addresses); the connection then goes to the checked address,
 * with the Host header and TLS server name set to the original host, so a second DNS answer cannot redirect it
 * (DNS rebinding); each redirect is checked the same way, at most 5; bodies are capped at 5 MB while streaming and
 * each URL has a time limit; only HTML, plain text, markdown and PDF are read. Each URL succeeds or fails on its
 * own.
 */
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as dns from "node:dns"
import * as http from "node:http"
import * as https from "node:https"
import type { Readable, Transform } from "node:stream"
import * as tls from "node:tls"
import * as zlib from "node:zlib"
import { ContentExtractor, Errors, Source } from "@deep-research/core"
import { addressBlockReason, hostnameBlockReason, literalAddress, normalizeHostname } from "./addressPolicy.js"
import { htmlToText } from "./htmlToText.js"
import { pdfToText } from "./pdfText.js"

// =============================================================================
// Options
// =============================================================================

/** One address a host name resolves to. */
export interface ResolvedAddress {
  readonly address: string
  readonly family: number
}

/** Options of the HTTP extractor. */
export interface Options {
  /**
   * Hosts exempt from the address checks, as `host` or `host:port` (for example a test's loopback server). Scheme,
   * size, time, redirect and content-type limits still apply.
   */
  readonly allowedHosts?: ReadonlyArray<string> | undefined
  /** Largest body read, after decompression; 5 MB by default. */
  readonly maxBytes?: number | undefined
  /** Time limit per URL, redirects included; 20 seconds by default. */
  readonly timeout?: Duration.DurationInput | undefined
  /** Redirects followed per URL; 5 by default. */
  readonly maxRedirects?: number | undefined
  /** URLs of one batch fetched at once; 4 by default. */
  readonly concurrency?: number | undefined
  /** Read PDF documents; on by default. */
  readonly pdf?: boolean | undefined
  readonly userAgent?: string | undefined
  /** Certificate authorities (PEM) trusted besides the system's, e.g. a corporate CA or a test's own. */
  readonly extraCertificates?: ReadonlyArray<string> | undefined
  /** Resolves a host name to all its addresses; `dns.lookup` with `all: true` by default. */
  readonly lookup?: ((hostname: string) => Promise<ReadonlyArray<ResolvedAddress>>) | undefined
}

/** The defaults of the HTTP extractor. */
export const defaults = {
  maxBytes: 5 * 1024 * 1024,
  timeout: Duration.seconds(20),
  maxRedirects: 5,
  concurrency: 4,
  userAgent: "deep-research/0.1 (content extractor)"
} as const

/** A URL that was allowed but could not be read (status, network, timeout, undecodable body). */
export class FetchFailed extends Data.TaggedError("FetchFailed")<{ readonly url: string; readonly reason: string }> {
  override get message(): string {
    return `Could not read ${this.url}: ${this.reason}`
  }
}

interface Settings {
  readonly allowedHosts: ReadonlySet<string>
  readonly maxBytes: number
  readonly timeout: Duration.Duration
  readonly maxRedirects: number
  readonly concurrency: number
  readonly pdf: boolean
  readonly userAgent: string
  readonly ca: ReadonlyArray<string> | undefined
  readonly lookup: (hostname: string) => Promise<ReadonlyArray<ResolvedAddress>>
}

const systemLookup = (hostname: string): Promise<ReadonlyArray<ResolvedAddress>> =>
  dns.promises.lookup(hostname, { all: true, verbatim: true })

const settingsOf = (options: Options | undefined): Settings => ({
  allowedHosts: new Set((options?.allowedHosts ?? []).map((host) => host.toLowerCase())),
  maxBytes: options?.maxBytes ?? defaults.maxBytes,
  timeout: Duration.decode(options?.timeout ?? defaults.timeout),
  maxRedirects: options?.maxRedirects ?? defaults.maxRedirects,
  concurrency: options?.concurrency ?? defaults.concurrency,
  pdf: options?.pdf ?? true,
  userAgent: options?.userAgent ?? defaults.userAgent,
  // `ca` replaces Node's trusted roots, so the extra certificates are added to them
  ca:
    options?.extraCertificates !== undefined && options.extraCertificates.length > 0
      ? [...tls.rootCertificates, ...options.extraCertificates]
      : undefined,
  lookup: options?.lookup ?? systemLookup
})

// =============================================================================
// Constructors
// =============================================================================

/** The HTTP extractor. */
export const make = (options?: Options | undefined): ContentExtractor.Service => {
  const settings = settingsOf(options)
  return {
    name: "http",
    extract: Effect.fn("HttpExtractor.extract")(function* (urls: ReadonlyArray<string>) {
      return yield* Effect.forEach(
        urls,
        (url) =>
          fetchWith(url, settings).pipe(
            Effect.catchAll((error) =>
              Effect.succeed<Source.ExtractResult>(new Source.ExtractFailure({ url, reason: reasonOf(error) }))
            )
          ),
        { concurrency: settings.concurrency }
      )
    })
  }
}

/** The HTTP extractor as the `ContentExtractor` in context. */
export const layer = (options?: Options | undefined): Layer.Layer<ContentExtractor.ContentExtractor> =>
  Layer.succeed(ContentExtractor.ContentExtractor, make(options))

// =============================================================================
// Fetching
// =============================================================================

/** Fetches one URL and reads its text, or says why it was refused or could not be read. */
export const fetchPage = (
  url: string,
  options?: Options | undefined
): Effect.Effect<Source.ExtractedPage, Errors.UrlBlocked | FetchFailed> => fetchWith(url, settingsOf(options))

const reasonOf = (error: Errors.UrlBlocked | FetchFailed): string =>
  error._tag === "UrlBlocked" ? `blocked: ${error.reason}` : error.reason

interface Target {
  readonly url: URL
  readonly address: string
  readonly family: 4 | 6
}

const parseUrl = (text: string, base?: URL | undefined): Effect.Effect<URL, Errors.UrlBlocked> =>
  Effect.try({
    try: () => new URL(text, base),
    catch: () => new Errors.UrlBlocked({ url: text, reason: "not a valid URL" })
  })

/** Checks the scheme, the host name and every address it resolves to; returns the address to connect to. */
const resolveTarget = (url: URL, settings: Settings): Effect.Effect<Target, Errors.UrlBlocked | FetchFailed> =>
  Effect.gen(function* () {
    const href = url.href
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      return yield* new Errors.UrlBlocked({ url: href, reason: `the scheme ${url.protocol} is not http(s)` })
    }
    const hostname = normalizeHostname(url.hostname)
    const port = url.port !== "" ? url.port : url.protocol === "https:" ? "443" : "80"
    const allowed = settings.allowedHosts.has(hostname) || settings.allowedHosts.has(`${hostname}:${port}`)
    if (!allowed) {
      const named = hostnameBlockReason(hostname)
      if (named !== undefined) return yield* new Errors.UrlBlocked({ url: href, reason: `${hostname} is ${named}` })
    }
    const literal = literalAddress(hostname)
    const addresses: ReadonlyArray<ResolvedAddress> =
      literal !== undefined
        ? [literal]
        : yield* Effect.tryPromise({
            try: () => settings.lookup(hostname),
            catch: () => new FetchFailed({ url: href, reason: `the host ${hostname} could not be resolved` })
          })
    const first = addresses[0]
    if (first === undefined) {
      return yield* new FetchFailed({ url: href, reason: `the host ${hostname} has no address` })
    }
    if (!allowed) {
      for (const { address } of addresses) {
        const reason = addressBlockReason(address)
        if (reason !== undefined) {
          const what =
            literal !== undefined ? `${hostname} is ${reason}` : `${hostname} resolves to ${reason} (${address})`
          return yield* new Errors.UrlBlocked({ url: href, reason: what })
        }
      }
    }
    return { url, address: first.address, family: first.family === 6 ? 6 : 4 }
  })

type Kind = "html" | "text" | "markdown" | "pdf"

const contentKinds: ReadonlyMap<string, Kind> = new Map([
  ["text/html", "html"],
  ["application/xhtml+xml", "html"],
  ["text/plain", "text"],
  ["text/markdown", "markdown"],
  ["text/x-markdown", "markdown"],
  ["application/pdf", "pdf"]
])

type Outcome =
  | { readonly kind: "redirect"; readonly location: string }
  | { readonly kind: "status"; readonly status: number }
  | { readonly kind: "blocked"; readonly reason: string }
  | { readonly kind: "failed"; readonly reason: string }
  | {
      readonly kind: "body"
      readonly mime: string | undefined
      readonly charset: string | undefined
      readonly body: Buffer
    }

const parseContentType = (header: string | undefined): { mime: string | undefined; charset: string | undefined } => {
  if (header === undefined || header.trim() === "") return { mime: undefined, charset: undefined }
  const [mime = "", ...params] = header.split(";")
  const charset = params
    .map((p) => p.trim().split("="))
    .find(([key]) => key?.toLowerCase() === "charset")?.[1]
    ?.replace(/^"|"$/g, "")
  return { mime: mime.trim().toLowerCase(), charset }
}

const decompressor = (encoding: string | undefined): Transform | "identity" | undefined => {
  switch ((encoding ?? "identity").trim().toLowerCase()) {
    case "":
    case "identity":
      return "identity"
    case "gzip":
    case "x-gzip":
      return zlib.createGunzip()
    case "deflate":
      return zlib.createInflate()
    case "br":
      return zlib.createBrotliDecompress()
    default:
      return undefined
  }
}

/** One request to the checked address; reads the body only for a 2xx answer of an accepted type. */
const requestOnce = (target: Target, settings: Settings, signal: AbortSignal): Promise<Outcome> =>
  new Promise<Outcome>((resolve, reject) => {
    const { url } = target
    const client = url.protocol === "https:" ? https : http
    const hostname = normalizeHostname(url.hostname)
    const request = client.request({
      host: target.address,
      family: target.family,
      port: url.port !== "" ? Number(url.port) : url.protocol === "https:" ? 443 : 80,
      path: `${url.pathname}${url.search}`,
      method: "GET",
      // SNI may not carry an IP address; certificates are then checked against the address itself
      ...(url.protocol === "https:" && literalAddress(hostname) === undefined ? { servername: hostname } : {}),
      ...(url.protocol === "https:" && settings.ca !== undefined ? { ca: [...settings.ca] } : {}),
      headers: {
        host: url.host,
        "user-agent": settings.userAgent,
        accept: "text/html,application/xhtml+xml,text/markdown;q=0.9,text/plain;q=0.9,application/pdf;q=0.8",
        "accept-encoding": "gzip, deflate, br"
      },
      agent: false,
      signal
    })
    request.on("error", reject)
    request.on("response", (response) => {
      response.on("error", reject)
      const status = response.statusCode ?? 0
      const done = (outcome: Outcome) => {
        response.destroy()
        resolve(outcome)
      }
      if (status >= 300 && status < 400 && response.headers.location !== undefined) {
        return done({ kind: "redirect", location: response.headers.location })
      }
      if (status < 200 || status >= 300) return done({ kind: "status", status })
      const { charset, mime } = parseContentType(response.headers["content-type"])
      if (mime !== undefined) {
        const kind = contentKinds.get(mime)
        if (kind === undefined || (kind === "pdf" && !settings.pdf)) {
          return done({ kind: "blocked", reason: `the content type ${mime} is not text, HTML or PDF` })
        }
      }
      const declared = Number(response.headers["content-length"] ?? "0")
      if (declared > settings.maxBytes) {
        return done({ kind: "blocked", reason: `the page is larger than ${settings.maxBytes} bytes (${declared})` })
      }
      const decoder = decompressor(response.headers["content-encoding"])
      if (decoder === undefined) {
        return done({ kind: "failed", reason: `unsupported content encoding ${response.headers["content-encoding"]}` })
      }
      const body: Readable = decoder === "identity" ? response : response.pipe(decoder)
      if (decoder !== "identity") decoder.on("error", (error) => done({ kind: "failed", reason: error.message }))
      const chunks: Array<Buffer> = []
      let size = 0
      body.on("data", (chunk: Buffer) => {
        size += chunk.length
        if (size > settings.maxBytes) {
          if (decoder !== "identity") decoder.destroy()
          return done({ kind: "blocked", reason: `the page is larger than ${settings.maxBytes} bytes` })
        }
        chunks.push(chunk)
      })
      body.on("end", () => resolve({ kind: "body", mime, charset, body: Buffer.concat(chunks) }))
    })
    request.end()
  })

const sniffKind = (body: Buffer): Kind | undefined => {
  const head = body.subarray(0, 1024).toString("latin1")
  if (head.startsWith("%PDF-")) return "pdf"
  if (/<!doctype html|<html[\s>]/i.test(head)) return "html"
  if (body.includes(0)) return undefined
  return "text"
}

const sniffHtmlCharset = (body: Buffer): string | undefined =>
  /<meta[^>]+charset\s*=\s*["']?([\w-]+)/i.exec(body.subarray(0, 2048).toString("latin1"))?.[1]

const decodeText = (body: Buffer, charset: string | undefined): string => {
  try {
    return new TextDecoder(charset ?? "utf-8").decode(body)
  } catch {
    return new TextDecoder("utf-8").decode(body)
  }
}

const titleOfText = (text: string, url: URL): string => {
  const heading = /^#\s+(.+)$/m.exec(text.slice(0, 2000))?.[1]?.trim()
  if (heading !== undefined && heading !== "") return heading
  const segment = decodeURIComponent(
    url.pathname
      .split("/")
      .filter((s) => s !== "")
      .pop() ?? ""
  )
  return segment !== "" ? segment : url.hostname
}

const readBody = (
  requested: string,
  url: URL,
  mime: string | undefined,
  charset: string | undefined,
  body: Buffer,
  settings: Settings
): Effect.Effect<Source.ExtractedPage, Errors.UrlBlocked | FetchFailed> =>
  Effect.gen(function* () {
    const kind = mime !== undefined ? contentKinds.get(mime) : sniffKind(body)
    if (kind === undefined || (kind === "pdf" && !settings.pdf)) {
      return yield* new Errors.UrlBlocked({ url: requested, reason: "the content is not text, HTML or PDF" })
    }
    const contentType = mime ?? (kind === "html" ? "text/html" : kind === "pdf" ? "application/pdf" : "text/plain")
    const read: { title: string; content: string } =
      kind === "pdf"
        ? yield* Effect.tryPromise({
            try: () => pdfToText(body),
            catch: () => new FetchFailed({ url: requested, reason: "the PDF could not be read" })
          })
        : kind === "html"
          ? htmlToText(decodeText(body, charset ?? sniffHtmlCharset(body)), url.href)
          : (() => {
              const text = decodeText(body, charset).trim()
              return { title: titleOfText(text, url), content: text }
            })()
    if (read.content.trim() === "") {
      return yield* new FetchFailed({ url: requested, reason: "the page has no readable text" })
    }
    return new Source.ExtractedPage({
      url: requested,
      title: read.title !== "" ? read.title : titleOfText("", url),
      content: read.content,
      contentType
    })
  })

const fetchWith = (
  requested: string,
  settings: Settings
): Effect.Effect<Source.ExtractedPage, Errors.UrlBlocked | FetchFailed> =>
  Effect.gen(function* () {
    let url = yield* parseUrl(requested)
    for (let redirects = 0; ; redirects++) {
      const target = yield* resolveTarget(url, settings)
      const outcome = yield* Effect.tryPromise({
        try: (signal) => requestOnce(target, settings, signal),
        catch: (error) => {
          const message = error instanceof Error ? error.message : String(error)
          return new FetchFailed({
            url: requested,
            reason: message === "aborted" ? "the server closed the connection before the page was complete" : message
          })
        }
      })
      switch (outcome.kind) {
        case "redirect": {
          if (redirects >= settings.maxRedirects) {
            return yield* new FetchFailed({ url: requested, reason: `more than ${settings.maxRedirects} redirects` })
          }
          url = yield* parseUrl(outcome.location, url)
          continue
        }
        case "status":
          return yield* new FetchFailed({ url: requested, reason: `the server answered with status ${outcome.status}` })
        case "blocked":
          return yield* new Errors.UrlBlocked({ url: requested, reason: outcome.reason })
        case "failed":
          return yield* new FetchFailed({ url: requested, reason: outcome.reason })
        case "body":
          return yield* readBody(requested, url, outcome.mime, outcome.charset, outcome.body, settings)
      }
    }
  }).pipe(
    Effect.timeoutFail({
      duration: settings.timeout,
      onTimeout: () =>
        new FetchFailed({ url: requested, reason: `no answer within ${Duration.format(settings.timeout)}` })
    })
  )
