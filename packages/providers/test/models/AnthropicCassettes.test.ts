/**
 * Every recorded Anthropic payload in `fixtures/vendor-cassettes/anthropic/`, replayed through the emulator into the
 * real SDK and the providers: text, tool calls, streams, usage and web-search results decode to the recorded values,
 * and the error recordings become the right tagged errors.
 */
import { LanguageModel } from "@deep-research/core"
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Redacted } from "effect"
import { readdirSync } from "node:fs"
import { fileURLToPath } from "node:url"
import * as AnthropicLanguageModel from "../../src/models/AnthropicLanguageModel.js"
import * as AnthropicWebSearch from "../../src/search/AnthropicWebSearch.js"
import { Emulator } from "@deep-research/emulator"

const directory = fileURLToPath(new URL("../fixtures/vendor-cassettes/anthropic/", import.meta.url))

const replayed = {
  text: "messages-text.json",
  parallelToolUse: "messages-parallel-tool-use.json",
  textAndToolUse: "messages-text-and-tool-use.json",
  streamText: "messages-stream-text.json",
  streamToolUse: "messages-stream-tool-use.json",
  error401: "messages-error-401-authentication.json",
  promptTooLong: "messages-error-400-prompt-too-long.json",
  webSearch: "messages-web-search.json",
  webSearchStream: "messages-web-search-stream.json"
} as const

const key = Redacted.make("sk-ant-emulator")

/** Replays one cassette and makes one call to the language model, streamed when the recording is a stream. */
const generateFrom = (file: string, options: { readonly stream?: boolean } = {}) =>
  Effect.gen(function* () {
    const emulator = yield* Emulator.start()
    yield* emulator.replay(`${directory}${file}`)
    const model = yield* AnthropicLanguageModel.make({
      apiKey: key,
      model: "claude-haiku-4-5",
      baseUrl: emulator.baseUrl("anthropic"),
      stream: options.stream ?? false
    })
    return yield* model.generate({ messages: [LanguageModel.user("replayed")] })
  })

const searchFrom = (file: string, options: { readonly stream?: boolean; readonly maxResults?: number } = {}) =>
  Effect.gen(function* () {
    const emulator = yield* Emulator.start()
    yield* emulator.replay(`${directory}${file}`)
    const provider = yield* AnthropicWebSearch.make({
      apiKey: key,
      baseUrl: emulator.baseUrl("anthropic"),
      stream: options.stream ?? false
    })
    return yield* provider.search("What is the weather in San Francisco today?", {
      maxResults: options.maxResults ?? 20
    })
  })

describe("Anthropic cassettes", () => {
  it("every recorded Anthropic cassette is replayed below", () => {
    assert.deepStrictEqual(readdirSync(directory).sort(), Object.values(replayed).sort())
  })

  it.scopedLive("a plain text answer: text, stop, usage and model", () =>
    Effect.gen(function* () {
      const completion = yield* generateFrom(replayed.text)
      assert.strictEqual(completion.text, "2 + 2 = 4")
      assert.strictEqual(completion.finishReason, "stop")
      assert.strictEqual(completion.model, "claude-haiku-4-5-20251001")
      assert.deepStrictEqual(
        [completion.usage.inputTokens, completion.usage.outputTokens, completion.usage.cachedInputTokens],
        [16, 13, 0]
      )
      assert.strictEqual(completion.toolCalls.length, 0)
    })
  )

  it.scopedLive("two parallel tool_use blocks, one with an empty input", () =>
    Effect.gen(function* () {
      const completion = yield* generateFrom(replayed.parallelToolUse)
      assert.strictEqual(completion.finishReason, "tool_calls")
      assert.strictEqual(completion.text, "")
      assert.deepStrictEqual(
        completion.toolCalls.map((call) => [call.id, call.name, call.arguments]),
        [
          ["toolu_01TjHdHxyQNDy4DipRieJU5n", "weather", { latitude: "52.5200", longitude: "13.4050" }],
          ["toolu_01QHFWAkMuVLb3VgS4EDGUGY", "best_language_to_learn", {}]
        ]
      )
      assert.deepStrictEqual([completion.usage.inputTokens, completion.usage.outputTokens], [701, 98])
    })
  )

  it.scopedLive("text followed by four parallel tool calls", () =>
    Effect.gen(function* () {
      const completion = yield* generateFrom(replayed.textAndToolUse)
      assert.isTrue(completion.text.startsWith("I'll help you find out who is the youngest"))
      assert.deepStrictEqual(
        completion.toolCalls.map((call) => call.arguments),
        [{ name: "Alice" }, { name: "Bob" }, { name: "Charlie" }, { name: "Daisy" }]
      )
      assert.isTrue(completion.toolCalls.every((call) => call.name === "retrieve_entity_info"))
      assert.deepStrictEqual([completion.usage.inputTokens, completion.usage.outputTokens], [423, 202])
    })
  )

  it.scopedLive("a streamed text answer accumulates to the text and the final usage", () =>
    Effect.gen(function* () {
      const completion = yield* generateFrom(replayed.streamText, { stream: true })
      assert.strictEqual(completion.text, "1\n2\n3")
      assert.strictEqual(completion.finishReason, "stop")
      // message_delta's output_tokens is cumulative: 9, not 1 + 9.
      assert.deepStrictEqual([completion.usage.inputTokens, completion.usage.outputTokens], [15, 9])
    })
  )

  it.scopedLive("a caller reading the text as it is written gets the answer streamed, growing to its whole text", () =>
    Effect.gen(function* () {
      const seen: Array<string> = []
      const ended = yield* Deferred.make<void>()
      const progress = {
        start: Effect.succeed((text: string) =>
          Effect.suspend(() => {
            seen.push(text)
            return text === "1\n2\n3" ? Deferred.succeed(ended, undefined) : Effect.void
          })
        )
      }
      const completion = yield* generateFrom(replayed.streamText).pipe(LanguageModel.withTextProgress(progress))
      yield* Deferred.await(ended)
      // The recording sends its text in one delta: the reader was given it (a call not streamed gives it nothing).
      assert.strictEqual(completion.text, "1\n2\n3")
      assert.isTrue(seen.every((text) => "1\n2\n3".startsWith(text)))
    })
  )

  it.scopedLive("a streamed tool call assembles its input from the partial JSON fragments", () =>
    Effect.gen(function* () {
      const completion = yield* generateFrom(replayed.streamToolUse, { stream: true })
      assert.strictEqual(completion.finishReason, "tool_calls")
      assert.deepStrictEqual(
        completion.toolCalls.map((call) => [call.id, call.name, call.arguments]),
        [["toolu_01MKSN7NHsBVKr7Jvw5pqCQq", "weather", { latitude: "52.5200", longitude: "13.4050" }]]
      )
      assert.deepStrictEqual([completion.usage.inputTokens, completion.usage.outputTokens], [633, 75])
    })
  )

  it.scopedLive("the recorded 401 becomes ProviderAuthenticationFailed", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(generateFrom(replayed.error401))
      assert.strictEqual(error._tag, "ProviderAuthenticationFailed")
      if (error._tag === "ProviderAuthenticationFailed") assert.strictEqual(error.detail, "invalid x-api-key")
    })
  )

  it.scopedLive("the recorded prompt-too-long 400 becomes ContextWindowExceeded with both numbers", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(generateFrom(replayed.promptTooLong))
      assert.strictEqual(error._tag, "ContextWindowExceeded")
      if (error._tag === "ContextWindowExceeded") {
        assert.deepStrictEqual([error.requested, error.limit], [200016, 200000])
      }
    })
  )

  it.scopedLive("a web-search answer read as a completion keeps the cited text and no tool calls", () =>
    Effect.gen(function* () {
      const completion = yield* generateFrom(replayed.webSearch)
      assert.isTrue(completion.text.includes("Temperature: 66°F with clear skies"))
      assert.strictEqual(completion.toolCalls.length, 0)
      assert.deepStrictEqual([completion.usage.inputTokens, completion.usage.outputTokens], [8984, 520])
    })
  )

  it.scopedLive("web search: results from the result blocks, cited ones first with their cited text", () =>
    Effect.gen(function* () {
      const results = yield* searchFrom(replayed.webSearch)
      assert.strictEqual(results.length, 10)
      assert.deepStrictEqual(
        results.slice(0, 3).map((result) => result.url),
        [
          "https://www.accuweather.com/en/us/san-francisco/94103/weather-forecast/347629",
          "https://www.wunderground.com/weather/us/ca/san-francisco",
          "https://www.wunderground.com/hourly/us/ca/san-francisco"
        ]
      )
      const [accuweather, wunderground, hourly] = results
      assert.strictEqual(accuweather?.title, "San Francisco, CA Weather Forecast | AccuWeather")
      assert.strictEqual(accuweather?.publishedDate, "6 days ago")
      assert.isTrue(accuweather?.snippet.includes("The air has reached a high level of pollution"))
      assert.isTrue(wunderground?.snippet.includes("Winds W at 10 to 20 mph."))
      assert.strictEqual(
        hourly?.snippet,
        "Some clouds in the morning will give way to mainly sunny skies for the afternoon."
      )
      assert.isUndefined(hourly?.publishedDate)
      const uncited = results.find((result) => result.url === "https://abc7news.com/weather/")
      assert.strictEqual(uncited?.title, "Live Doppler 7 | Bay Area Weather News - ABC7 San Francisco")
      assert.strictEqual(uncited?.snippet, "")
      assert.strictEqual(uncited?.publishedDate, "1 week ago")
      assert.isTrue(results.every((result) => result.provider === "anthropic"))
    })
  )

  it.scopedLive("web search keeps at most maxResults, cited results first", () =>
    Effect.gen(function* () {
      const results = yield* searchFrom(replayed.webSearch, { maxResults: 2 })
      assert.deepStrictEqual(
        results.map((result) => result.url),
        [
          "https://www.accuweather.com/en/us/san-francisco/94103/weather-forecast/347629",
          "https://www.wunderground.com/weather/us/ca/san-francisco"
        ]
      )
    })
  )

  it.scopedLive("a streamed web search with two searches yields the results of both, citations rebuilt", () =>
    Effect.gen(function* () {
      const results = yield* searchFrom(replayed.webSearchStream, { stream: true })
      assert.strictEqual(results.length, 20)
      assert.deepStrictEqual(
        results.slice(0, 4).map((result) => result.url),
        [
          "https://www.accuweather.com/en/us/san-francisco/94103/september-weather/347629",
          "https://en.climate-data.org/north-america/united-states-of-america/california/san-francisco-385/t/september-9/",
          "https://www.weather2travel.com/california/san-francisco/september/",
          "https://www.sfchronicle.com/weather-forecast/article/weather-forecast-san-francisco-21043269.php"
        ]
      )
      const chronicle = results[3]
      assert.strictEqual(chronicle?.snippet, "Average mid-September highs in San Francisco are around 70 degrees.")
      assert.strictEqual(chronicle?.publishedDate, "4 days ago")
    })
  )
})
