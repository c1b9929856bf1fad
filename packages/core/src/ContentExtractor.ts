/**
 * The extraction port: read pages by URL. Each URL succeeds or fails on its own.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { ProviderError } from "./Errors.js"
import type { ExtractResult } from "./Source.js"

/** A content extractor. */
export interface Service {
  readonly name: string
  /** One result per URL, in order: a page or a failure with its reason. Fails only when the whole call fails. */
  readonly extract: (urls: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<ExtractResult>, ProviderError>
}

/** The content extractor in context. */
export class ContentExtractor extends Context.Tag("@deep-research/core/ContentExtractor")<
  ContentExtractor,
  Service
>() {}
