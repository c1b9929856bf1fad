/**
 * The research library's part of the HTTP API: a search over every source the stored sessions read
 * (`docs/research-library.md`).
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { Authorization, BadRequest, ServiceUnavailable } from "./ApiErrors.js"

/** A passage of the library that matched a search. */
export const LibraryPassage = Schema.Struct({
  sessionId: Schema.String.annotations({ description: "The session that stored the source" }),
  sourceId: Schema.String.annotations({ description: "The source's id in that session" }),
  url: Schema.String,
  title: Schema.String,
  snippet: Schema.String.annotations({ description: "The words around the matches, the matched words in **" }),
  score: Schema.Number.annotations({ description: "How well it matched: higher is better, within one search" })
}).annotations({ identifier: "LibraryPassage" })

const LibrarySearchParams = Schema.Struct({
  q: Schema.String.annotations({ description: "The words to look for; every one must occur (stemmed, in English)" }),
  limit: Schema.optional(
    Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 200)).annotations({
      description: "Passages at most (default 10, at most 200)"
    })
  )
})

/** The library: every source any session stored, searchable across sessions. */
export class Library extends HttpApiGroup.make("library")
  .add(
    HttpApiEndpoint.get("search", "/api/library/search")
      .annotate(OpenApi.Summary, "Search the library")
      .setUrlParams(LibrarySearchParams)
      .addSuccess(Schema.Array(LibraryPassage))
      .addError(BadRequest)
      .annotate(
        OpenApi.Description,
        "The passages of the stored sessions' sources that hold all the words of q, best first, each with its " +
          "session, title, URL and a snippet: of every session, or on a server with a token for each caller, of the " +
          "caller's own and no one's (up to limit of them, however many of other callers' rank higher). A deleted " +
          "session's sources leave the library with it."
      )
  )
  .addError(ServiceUnavailable)
  .middleware(Authorization)
  .annotate(OpenApi.Description, "Full-text search over every source the sessions stored.") {}
