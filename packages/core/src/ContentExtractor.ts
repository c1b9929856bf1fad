/**
 * The extraction port: read pages by URL. Each URL succeeds or fails on its own. A backend that only searches takes
 * `layerNone`: the researcher then works from what the search results carry.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { ProviderError } from "./Errors.js"
import { ExtractFailure, type ExtractResult } from "./Source.js"

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

/** An extractor that reads nothing: each URL is a failure that says so, and no request is made. */
export const none: Service = {
  name: "none",
  extract: (urls) =>
    Effect.succeed(
      urls.map((url) => new ExtractFailure({ url, reason: "pages are not read in full here; use the search results" }))
    )
}

/** `none` in context, for a search backend that has no extractor. */
export const layerNone: Layer.Layer<ContentExtractor> = Layer.succeed(ContentExtractor, none)
