/**
 * A `ContentExtractor` that reads pages itself, without a paid extract API. Pages are untrusted, so fetching is
 * safe by default: http(s) only; the host is resolved and every address it resolves to is checked (no loopback,
 * private, link-local, CGNAT, multicast or metadata addresses); the connection then goes to the checked address,
 * with the Host header and TLS server name set to the original host, so a second DNS answer cannot redirect it
 * (DNS rebinding); each redirect is checked the same way, at most 5; bodies are capped at 5 MB while streaming and
 * each URL has a time limit; only HTML, plain text, markdown and PDF are read. Each URL succeeds or fails on its
 * own. This module holds the options and the redirect loop; one checked request is in `pinnedRequest.ts`, reading
 * its body into a page in `pageBody.ts`.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as dns from "node:dns"
import * as tls from "node:tls"
import { ContentExtractor, Errors, Source } from "@deep-research/core"
import { FetchFailed, type ResolvedAddress, type Settings } from "./extractorSettings.js"
import { readBody } from "./pageBody.js"
import { requestOnce, resolveTarget } from "./pinnedRequest.js"

export { FetchFailed, type ResolvedAddress } from "./extractorSettings.js"

// =============================================================================
// Options
// =============================================================================

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

const parseUrl = (text: string, base?: URL | undefined): Effect.Effect<URL, Errors.UrlBlocked> =>
  Effect.try({
    try: () => new URL(text, base),
    catch: () => new Errors.UrlBlocked({ url: text, reason: "not a valid URL" })
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
