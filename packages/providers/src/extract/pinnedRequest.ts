/**
 * One request of the HTTP extractor, to an address it has checked: the scheme, the host name and every address the
 * host resolves to are checked (see `addressPolicy.ts`), then the connection goes to the checked address with the
 * Host header and TLS server name of the original host, so a second DNS answer cannot redirect it. The body is read
 * only for a 2xx answer of an accepted type, decompressed and capped while it streams.
 */
import * as Effect from "effect/Effect"
import * as http from "node:http"
import * as https from "node:https"
import type { Readable, Transform } from "node:stream"
import * as zlib from "node:zlib"
import { Errors } from "@deep-research/core"
import { addressBlockReason, hostnameBlockReason, literalAddress, normalizeHostname } from "./addressPolicy.js"
import { contentKinds, FetchFailed, type ResolvedAddress, type Settings } from "./extractorSettings.js"

/** The checked address a URL is fetched from. */
export interface Target {
  readonly url: URL
  readonly address: string
  readonly family: 4 | 6
}

/**
 * Checks the scheme, the host name and every address it resolves to; returns the address to connect to. The keyless
 * search client checks its redirects with it too.
 */
export const resolveTarget = (
  url: URL,
  settings: Pick<Settings, "allowedHosts" | "lookup">
): Effect.Effect<Target, Errors.UrlBlocked | FetchFailed> =>
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

/** What one request came to: a redirect, a refusal or failure, or the body of an accepted page. */
export type Outcome =
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
export const requestOnce = (target: Target, settings: Settings, signal: AbortSignal): Promise<Outcome> =>
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
