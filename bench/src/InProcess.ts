/**
 * The emulator's simulated world without sockets, for the many-sessions benchmark: the real OpenAI SDK and provider
 * code with a `fetch` that asks the simulator in process and answers after the injected latency, and a search
 * provider that maps the simulator's Tavily answers through the provider's own decoding (`Tavily.SearchResponse`,
 * `Tavily.toSearchResults`). What it leaves out is the HTTP stack on both sides (undici, axios, the server).
 */
import { Errors, SearchProvider, Source } from "@deep-research/core"
import { Tavily } from "@deep-research/providers"
import type { Emulator } from "@deep-research/emulator"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

/** The simulator as `Emulator.simulate` installs it. */
export type Simulator = (
  request: Emulator.RecordedRequest
) => Emulator.Reply | undefined | Promise<Emulator.Reply | undefined>

const sleep = (millis: number) => new Promise<void>((resolve) => setTimeout(resolve, millis))

const bodyOf = (reply: Emulator.Reply | undefined): { readonly status: number; readonly text: string } => {
  if (reply === undefined) return { status: 501, text: JSON.stringify({ error: { message: "unscripted" } }) }
  switch (reply.kind) {
    case "json":
      return { status: reply.status ?? 200, text: JSON.stringify(reply.body) }
    case "raw":
      return { status: reply.status ?? 200, text: reply.body }
    case "sse":
      return { status: reply.status ?? 200, text: reply.text }
    case "fault":
      return { status: 500, text: JSON.stringify({ error: { message: `fault ${reply.fault.type}` } }) }
  }
}

const request = (endpoint: Emulator.Endpoint, path: string, body: unknown): Emulator.RecordedRequest => ({
  endpoint,
  method: "POST",
  path,
  query: {},
  headers: {},
  body,
  at: Date.now()
})

/** A `fetch` for the OpenAI SDK that answers chat completions from the simulator after `latencyMillis`. */
export const openaiFetch =
  (simulator: Simulator, latencyMillis: number): typeof fetch =>
  async (input, init) => {
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url
    const text = typeof init?.body === "string" ? init.body : ""
    const reply = await simulator(request("openai.chat", new URL(url).pathname, JSON.parse(text)))
    await sleep(latencyMillis)
    const { status, text: body } = bodyOf(reply)
    return new Response(body, { status, headers: { "content-type": "application/json" } })
  }

/** Snake case wire fields as the Tavily SDK hands them over (camel case). */
const camel = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(camel)
  if (typeof value !== "object" || value === null) return value
  return Object.fromEntries(
    Object.entries(value).map(([key, field]) => [
      key.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase()),
      camel(field)
    ])
  )
}

/** Tavily search through the simulator, decoded by the provider's own code, after `latencyMillis`. */
export const search = (simulator: Simulator, latencyMillis: number): SearchProvider.Service => ({
  name: "tavily",
  search: (query, options) =>
    Effect.gen(function* () {
      const reply = yield* Effect.promise(async () => {
        const answer = await simulator(
          request("tavily.search", "/tavily/search", {
            query,
            max_results: options.maxResults,
            include_raw_content: options.includeRawContent === true ? "markdown" : false
          })
        )
        await sleep(latencyMillis)
        return bodyOf(answer)
      })
      const response = yield* Schema.decodeUnknown(Tavily.SearchResponse)(camel(JSON.parse(reply.text))).pipe(
        Effect.mapError((error) => new Errors.ProviderUnavailable({ provider: "tavily", detail: error.message }))
      )
      return response.results.map(
        (result) =>
          new Source.SearchResult({
            url: result.url,
            title: result.title ?? result.url,
            snippet: result.content ?? "",
            provider: "tavily",
            ...(typeof result.rawContent === "string" && result.rawContent !== ""
              ? { rawContent: result.rawContent }
              : {}),
            ...(typeof result.score === "number" ? { score: result.score } : {})
          })
      )
    })
})
