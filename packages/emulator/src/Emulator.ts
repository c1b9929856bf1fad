/**
 * A local HTTP server on 127.0.0.1 that speaks the vendors' wire protocols (OpenAI chat completions and responses,
 * Anthropic messages, Tavily, Exa, Perplexity, Semantic Scholar, the keyless search APIs, plain web pages), so the
 * real SDKs can be tested
 * without a network. Answers are scripted per endpoint, faults are played in each vendor's shape, every request is
 * logged, and recorded vendor cassettes can be replayed byte for byte. The package's public module.
 */
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { readFile } from "node:fs/promises"
import { listen, type Fallback, type State } from "./wire/server.js"
import { type SimulateOptions, simulator } from "./world/simulate.js"
import type { Endpoint, RecordedRequest, Reply, Responder, Vendor } from "./wire/types.js"
import { keylessVendorPaths } from "./wire/keyless.js"

export type { Endpoint, Fault, RecordedRequest, Reply, Responder, Vendor } from "./wire/types.js"
export { endpoints } from "./wire/types.js"
export { texts as errorTexts } from "./wire/faults.js"
export type { SimulateOptions } from "./world/simulate.js"

// =============================================================================
// Handle and Tag
// =============================================================================

/** A running emulator. */
export interface Handle {
  /** `http://127.0.0.1:PORT` */
  readonly url: string
  /** The base URL to give a vendor's SDK (`/openai/v1`, `/anthropic`, `/tavily`, ...). */
  readonly baseUrl: (vendor: Vendor) => string
  /** Sets how an endpoint answers from now on; arrays answer in order and the last reply repeats. */
  readonly respond: (endpoint: Endpoint, responder: Responder) => Effect.Effect<void>
  /** Queues one-shot replies, served before the endpoint's responder. */
  readonly enqueue: (endpoint: Endpoint, ...replies: ReadonlyArray<Reply>) => Effect.Effect<void>
  /** Queues the recorded response of a vendor-cassettes file (JSON body, or the SSE text byte for byte). */
  readonly replay: (cassettePath: string) => Effect.Effect<void>
  /** Delays every answer of an endpoint (or of all endpoints). */
  readonly setLatency: (endpoint: Endpoint | "all", latency: Duration.DurationInput) => Effect.Effect<void>
  /** The requests received so far, oldest first, optionally of one endpoint. */
  readonly requests: (endpoint?: Endpoint) => Effect.Effect<ReadonlyArray<RecordedRequest>>
  /** The requests whose client went away before an answer (a hang or a long latency), oldest first. */
  readonly abandoned: (endpoint?: Endpoint) => Effect.Effect<ReadonlyArray<RecordedRequest>>
  /** Answers unscripted requests (used by the simulated research mode); `undefined` answers leave the 501. */
  readonly setFallback: (fallback: Fallback | undefined) => Effect.Effect<void>
}

/** The emulator in context. */
export class Emulator extends Context.Tag("@deep-research/emulator/Emulator")<Emulator, Handle>() {}

/** Options of the emulator. */
export interface Options {
  /** 0 (the default) picks a free port. */
  readonly port?: number | undefined
}

// =============================================================================
// Constructors
// =============================================================================

const vendorPaths: Readonly<Record<Vendor, string>> = {
  openai: "/openai/v1",
  anthropic: "/anthropic",
  tavily: "/tavily",
  exa: "/exa",
  perplexity: "/perplexity",
  semanticScholar: "/semantic-scholar/graph/v1",
  web: "/web",
  ...keylessVendorPaths
}

const makeHandle = (url: string, state: State): Handle => ({
  url,
  baseUrl: (vendor) => `${url}${vendorPaths[vendor]}`,
  respond: (endpoint, responder) =>
    Effect.sync(() => {
      state.responders.set(endpoint, { responder, next: 0 })
    }),
  enqueue: (endpoint, ...replies) =>
    Effect.sync(() => {
      const queue = state.queues.get(endpoint) ?? []
      queue.push(...replies)
      state.queues.set(endpoint, queue)
    }),
  replay: (cassettePath) =>
    Effect.flatMap(loadCassette(cassettePath), ({ endpoint, reply }) =>
      Effect.sync(() => {
        const queue = state.queues.get(endpoint) ?? []
        queue.push(reply)
        state.queues.set(endpoint, queue)
      })
    ),
  setLatency: (endpoint, latency) =>
    Effect.sync(() => {
      state.latency.set(endpoint, Duration.toMillis(Duration.decode(latency)))
    }),
  requests: (endpoint) =>
    Effect.sync(() => state.log.filter((request) => endpoint === undefined || request.endpoint === endpoint)),
  abandoned: (endpoint) =>
    Effect.sync(() => state.abandoned.filter((request) => endpoint === undefined || request.endpoint === endpoint)),
  setFallback: (fallback) =>
    Effect.sync(() => {
      state.fallback = fallback
    })
})

/** Starts an emulator for the life of the scope. */
export const start = (options?: Options): Effect.Effect<Handle, never, Scope.Scope> =>
  Effect.map(
    Effect.acquireRelease(
      Effect.orDieWith(
        Effect.tryPromise(() => listen(options?.port ?? 0)),
        (error) => new Error(`The emulator could not listen on 127.0.0.1: ${String(error.error)}`)
      ),
      (running) => Effect.promise(() => running.close())
    ),
    (running) => makeHandle(running.url, running.state)
  )

/** An emulator for the life of the layer. */
export const layer = (options?: Options): Layer.Layer<Emulator> => Layer.scoped(Emulator, start(options))

/**
 * Turns on the simulated research world: every request no script answers gets a plausible answer. Model endpoints
 * read the tools and response format offered (the supervisor delegates `conductResearch` directives then calls
 * `researchComplete`, researchers call `webSearch` then `researchComplete` citing the results, structured requests
 * get valid JSON, anything else a cited report), and search endpoints serve deterministic pages under `/web/sim/`.
 */
export const simulate = (handle: Handle, options?: SimulateOptions): Effect.Effect<void> =>
  handle.setFallback(simulator(handle.url, options))

// =============================================================================
// Cassettes
// =============================================================================

const Cassette = Schema.Struct({
  vendor: Schema.String,
  endpoint: Schema.String,
  response: Schema.Struct({
    status: Schema.Number,
    headers: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Schema.String }), { default: () => ({}) }),
    body: Schema.optional(Schema.Unknown),
    sse: Schema.optional(Schema.String)
  })
})

const cassetteEndpoint = (vendor: string, path: string): Endpoint | undefined => {
  const key = `${vendor} ${path.replace(/\?.*$/, "")}`
  switch (key) {
    case "openai /v1/chat/completions":
      return "openai.chat"
    case "openai /v1/responses":
      return "openai.responses"
    case "anthropic /v1/messages":
      return "anthropic.messages"
    case "tavily /search":
      return "tavily.search"
    case "tavily /extract":
      return "tavily.extract"
    case "exa /search":
      return "exa.search"
    case "exa /contents":
      return "exa.contents"
    case "perplexity /chat/completions":
      return "perplexity.chat"
    default:
      return undefined
  }
}

/** Reads a vendor-cassettes file into the endpoint it belongs to and the reply it recorded. */
export const loadCassette = (
  cassettePath: string
): Effect.Effect<{ readonly endpoint: Endpoint; readonly reply: Reply }> =>
  Effect.gen(function* () {
    const text = yield* Effect.tryPromise(() => readFile(cassettePath, "utf8"))
    const cassette = yield* Schema.decodeUnknown(Schema.parseJson(Cassette))(text)
    const endpoint = cassetteEndpoint(cassette.vendor, cassette.endpoint)
    if (endpoint === undefined) {
      return yield* Effect.dieMessage(
        `The cassette ${cassettePath} is for ${cassette.vendor} ${cassette.endpoint}, which the emulator does not serve`
      )
    }
    const { status, headers, body, sse } = cassette.response
    const reply: Reply =
      sse !== undefined
        ? { kind: "sse", status, headers, text: sse }
        : { kind: "json", status, headers: { "content-type": "application/json", ...headers }, body }
    return { endpoint, reply }
  }).pipe(Effect.orDieWith((error) => new Error(`The cassette ${cassettePath} could not be read: ${String(error)}`)))

// The reply builders (json, fault, sse, openaiText, anthropicText, tavilyResults, webPages ...).
export * from "./wire/replies.js"
// The keyless search APIs' answers (wikipediaApi, arxivFeed, openalexWorks, pubmedArticles, searxngResults ...).
export { searxngResults, type SearxngResult, type WikiArticle, wikipediaApi, wikipediaError } from "./wire/keyless.js"
export {
  arxivErrorFeed,
  arxivFeed,
  type ArxivEntry,
  invertedIndex,
  openalexWork,
  type OpenAlexWorkInput,
  openalexWorks
} from "./wire/keylessPapers.js"
export {
  pubmedArticles,
  type PubmedArticle,
  type PubmedBook,
  type PubmedReference,
  pubmedSearch,
  pubmedSearchError
} from "./wire/keylessPubmed.js"
export { ncbiRateLimit } from "./wire/keylessFaults.js"
