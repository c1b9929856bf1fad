/**
 * What the HTTP extractor's parts share: its settings once resolved, the content types it reads, and the failure of a
 * URL that was allowed but could not be read. Below the extractor, its connection and its body reader, so none of
 * them imports another in a circle.
 */
import * as Data from "effect/Data"
import type * as Duration from "effect/Duration"

/** One address a host name resolves to. */
export interface ResolvedAddress {
  readonly address: string
  readonly family: number
}

/** A URL that was allowed but could not be read (status, network, timeout, undecodable body). */
export class FetchFailed extends Data.TaggedError("FetchFailed")<{ readonly url: string; readonly reason: string }> {
  override get message(): string {
    return `Could not read ${this.url}: ${this.reason}`
  }
}

/** The extractor's options with their defaults filled in. */
export interface Settings {
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

/** The kinds of content the extractor reads. */
export type Kind = "html" | "text" | "markdown" | "pdf"

/** The content types read, by their MIME type. */
export const contentKinds: ReadonlyMap<string, Kind> = new Map([
  ["text/html", "html"],
  ["application/xhtml+xml", "html"],
  ["text/plain", "text"],
  ["text/markdown", "markdown"],
  ["text/x-markdown", "markdown"],
  ["application/pdf", "pdf"]
])
