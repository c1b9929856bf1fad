import { ContentExtractor, SearchProvider } from "@deep-research/core"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Duration, Effect, Exit, Fiber, Layer, Redacted, Schedule } from "effect"
import { fromError } from "../../src/search/tavilyErrors.js"
import { Emulator } from "@deep-research/emulator"
import * as Tavily from "../../src/search/Tavily.js"

const context = { provider: "tavily" }
const tagOf = (message: string) => fromError(new Error(message), context)._tag

describe("Tavily error mapping", () => {
  it("classifies the documented texts (the SDK drops the status)", () => {
    assert.strictEqual(tagOf("Unauthorized: missing or invalid API key."), "ProviderAuthenticationFailed")
    assert.strictEqual(
      tagOf("Your request has been blocked due to excessive requests. Please reduce rate of requests."),
      "ProviderRateLimited"
    )
    assert.strictEqual(
      tagOf("This request exceeds your plan's set usage limit. Please upgrade your plan or contact support@tavily.com"),
      "ProviderQuotaExhausted"
    )
    assert.strictEqual(
      tagOf("This request exceeds the pay-as-you-go limit. You can increase your limit on the Tavily dashboard"),
      "ProviderQuotaExhausted"
    )
    assert.strictEqual(tagOf("Internal Server Error"), "ProviderUnavailable")
  })

  it("classifies errors the SDK reports as '<status> Error: <body>'", () => {
    assert.strictEqual(tagOf('401 Error: {"message":"nope"}'), "ProviderAuthenticationFailed")
    assert.strictEqual(tagOf('429 Error: {"message":"slow"}'), "ProviderRateLimited")
    assert.strictEqual(tagOf('432 Error: {"message":"plan"}'), "ProviderQuotaExhausted")
    assert.strictEqual(tagOf('433 Error: {"message":"payg"}'), "ProviderQuotaExhausted")
    assert.strictEqual(tagOf("502 Error: <html>bad gateway</html>"), "ProviderUnavailable")
    assert.strictEqual(tagOf('422 Error: {"message":"bad field"}'), "ProviderInvalidRequest")
  })

  it("maps the SDK's own timeout to ProviderTimeout with its duration", () => {
    const error = fromError(new Error("Request timed out after 60 seconds."), context)
    if (error._tag === "ProviderTimeout") assert.deepStrictEqual(error.after, Duration.seconds(60))
    else assert.fail(`expected ProviderTimeout, got ${error._tag}`)
  })

  it("maps transport failures and unreadable answers to ProviderUnavailable", () => {
    assert.strictEqual(
      tagOf("An unexpected error occurred while making the request. Error: AxiosError: socket hang up"),
      "ProviderUnavailable"
    )
    assert.strictEqual(
      tagOf(
        "An unexpected error occurred while making the request. Error: TypeError: Cannot read properties of undefined (reading 'map')"
      ),
      "ProviderUnavailable"
    )
  })

  it("maps any other refusal text to ProviderInvalidRequest with the text", () => {
    const error = fromError(new Error("Invalid topic. Must be 'general', 'news' or 'finance'."), context)
    assert.strictEqual(error._tag, "ProviderInvalidRequest")
    const text = "Invalid topic. Must be 'general', 'news' or 'finance'."
    assert.strictEqual(error._tag === "ProviderInvalidRequest" ? error.detail : "", text)
    assert.strictEqual(error.message, `${context.provider} rejected the request: ${text}`)
  })
})

describe("Tavily mapping", () => {
  it("maps every search option to the SDK's names, leaving out what was not asked", () => {
    assert.deepStrictEqual(
      Tavily.toSearchOptions({
        maxResults: 7,
        depth: "advanced",
        includeRawContent: true,
        topic: "news",
        timeRange: "week",
        includeDomains: ["nature.com"],
        excludeDomains: ["example.com"]
      }),
      {
        maxResults: 7,
        searchDepth: "advanced",
        includeRawContent: "markdown",
        topic: "news",
        timeRange: "week",
        includeDomains: ["nature.com"],
        excludeDomains: ["example.com"]
      }
    )
    assert.deepStrictEqual(Tavily.toSearchOptions({ maxResults: 50 }), { maxResults: 20 })
  })

  it("answers one extract result per URL in the order asked, matching a normalised echo", () => {
    const results = Tavily.toExtractResults(["https://a.org/x/", "https://b.org/y", "https://c.org/z"], {
      results: [{ url: "https://a.org/x", title: "A", rawContent: "# A" }],
      failedResults: [{ url: "https://b.org/y", error: "Failed to fetch url" }]
    })
    assert.deepStrictEqual(
      results.map((r) => (r._tag === "ExtractedPage" ? [r.url, r.title, r.content] : [r.url, r.reason])),
      [
        ["https://a.org/x/", "A", "# A"],
        ["https://b.org/y", "Failed to fetch url"],
        ["https://c.org/z", "Tavily did not return this URL"]
      ]
    )
  })

  it("treats a page with empty content as a failure", () => {
    const [result] = Tavily.toExtractResults(["https://a.org"], {
      results: [{ url: "https://a.org", title: "A", rawContent: "  " }],
      failedResults: []
    })
    assert.strictEqual(result?._tag, "ExtractFailure")
  })
})

// =============================================================================
// Against the emulator, through the real SDK
// =============================================================================

const servicesAt = (emulator: Emulator.Handle, options: Partial<Tavily.Options> = {}) =>
  Tavily.make({ apiKey: Redacted.make("tvly-emulator"), baseUrl: emulator.baseUrl("tavily"), ...options })

const searchFailure = (emulator: Emulator.Handle, reply: Emulator.Reply) =>
  Effect.gen(function* () {
    yield* emulator.respond("tavily.search", reply)
    const { search } = yield* servicesAt(emulator)
    return yield* Effect.flip(search.search("q", { maxResults: 5 }))
  })

describe("Tavily against the emulator", () => {
  it.scopedLive("searches with the options in Tavily's wire names and decodes the results", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond(
        "tavily.search",
        Emulator.tavilyResults([
          {
            url: "https://a.org/1",
            title: "One",
            content: "snippet one",
            score: 0.91,
            rawContent: "# One\n\nfull text",
            publishedDate: "2025-03-01"
          },
          { url: "https://b.org/2", title: "Two", content: "snippet two", score: 0.5 }
        ])
      )
      const { search } = yield* servicesAt(emulator)
      const results = yield* search.search("coral reefs", {
        maxResults: 4,
        depth: "advanced",
        includeRawContent: true,
        topic: "news",
        timeRange: "month",
        includeDomains: ["a.org", "b.org"],
        excludeDomains: ["c.org"]
      })
      assert.deepStrictEqual(
        results.map((r) => [r.url, r.title, r.snippet, r.rawContent, r.score, r.publishedDate, r.provider]),
        [
          ["https://a.org/1", "One", "snippet one", "# One\n\nfull text", 0.91, "2025-03-01", "tavily"],
          ["https://b.org/2", "Two", "snippet two", undefined, 0.5, undefined, "tavily"]
        ]
      )
      const [request] = yield* emulator.requests("tavily.search")
      assert.deepStrictEqual(request?.body, {
        query: "coral reefs",
        search_depth: "advanced",
        topic: "news",
        max_results: 4,
        include_raw_content: "markdown",
        include_domains: ["a.org", "b.org"],
        exclude_domains: ["c.org"],
        time_range: "month"
      })
      assert.strictEqual(request?.headers["authorization"], "Bearer tvly-emulator")
    })
  )

  it.scopedLive("extracts pages and maps per-URL failures to ExtractFailure", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond(
        "tavily.extract",
        Emulator.tavilyExtract(
          [{ url: "https://a.org/1", rawContent: "# One", title: "One" }],
          [{ url: "https://b.org/2", error: "Failed to fetch url" }]
        )
      )
      const { extractor } = yield* servicesAt(emulator, { extractDepth: "advanced" })
      const results = yield* extractor.extract(["https://a.org/1", "https://b.org/2"])
      assert.deepStrictEqual(
        results.map((r) =>
          r._tag === "ExtractedPage" ? [r._tag, r.url, r.title, r.content] : [r._tag, r.url, r.reason]
        ),
        [
          ["ExtractedPage", "https://a.org/1", "One", "# One"],
          ["ExtractFailure", "https://b.org/2", "Failed to fetch url"]
        ]
      )
      const [request] = yield* emulator.requests("tavily.extract")
      assert.deepInclude(request?.body, {
        urls: ["https://a.org/1", "https://b.org/2"],
        extract_depth: "advanced",
        format: "markdown"
      })
    })
  )

  it.scopedLive("extracting no URL makes no request", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      const { extractor } = yield* servicesAt(emulator)
      assert.deepStrictEqual(yield* extractor.extract([]), [])
      assert.strictEqual((yield* emulator.requests("tavily.extract")).length, 0)
    })
  )

  it.scopedLive("a 401 becomes ProviderAuthenticationFailed", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      assert.strictEqual(
        (yield* searchFailure(emulator, Emulator.fault({ type: "auth" })))._tag,
        "ProviderAuthenticationFailed"
      )
    })
  )

  it.scopedLive("a 429 becomes ProviderRateLimited", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      const error = yield* searchFailure(emulator, Emulator.fault({ type: "rate_limit", retryAfterSeconds: 3 }))
      assert.strictEqual(error._tag, "ProviderRateLimited")
    })
  )

  it.scopedLive("a 432 plan limit becomes ProviderQuotaExhausted", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      assert.strictEqual(
        (yield* searchFailure(emulator, Emulator.fault({ type: "quota" })))._tag,
        "ProviderQuotaExhausted"
      )
    })
  )

  it.scopedLive("a 433 pay-as-you-go limit becomes ProviderQuotaExhausted", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      const reply = Emulator.json({ detail: { error: Emulator.errorTexts.tavilyPayAsYouGoLimit } }, { status: 433 })
      assert.strictEqual((yield* searchFailure(emulator, reply))._tag, "ProviderQuotaExhausted")
    })
  )

  it.scopedLive("a 500 becomes ProviderUnavailable", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      const error = yield* searchFailure(emulator, Emulator.fault({ type: "server_error", status: 500 }))
      assert.strictEqual(error._tag, "ProviderUnavailable")
      if (error._tag === "ProviderUnavailable") assert.strictEqual(error.status, 500)
    })
  )

  it.scopedLive("a 502 without Tavily's error body keeps its status", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      const error = yield* searchFailure(emulator, Emulator.json({ message: "upstream down" }, { status: 502 }))
      if (error._tag === "ProviderUnavailable") assert.strictEqual(error.status, 502)
      else assert.fail(`expected ProviderUnavailable, got ${error._tag}`)
    })
  )

  it.scopedLive("a reset connection becomes ProviderUnavailable", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      assert.strictEqual(
        (yield* searchFailure(emulator, Emulator.fault({ type: "reset" })))._tag,
        "ProviderUnavailable"
      )
    })
  )

  it.scopedLive("a malformed JSON answer becomes ProviderUnavailable", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      const error = yield* searchFailure(emulator, Emulator.fault({ type: "malformed_json" }))
      assert.strictEqual(error._tag, "ProviderUnavailable")
    })
  )

  it.scopedLive("a failed extract call fails the whole batch with the mapped error", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("tavily.extract", Emulator.fault({ type: "quota" }))
      const { extractor } = yield* servicesAt(emulator)
      const error = yield* Effect.flip(extractor.extract(["https://a.org/1"]))
      assert.strictEqual(error._tag, "ProviderQuotaExhausted")
    })
  )

  it.scopedLive("a hanging search ends when the fiber is interrupted", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("tavily.search", Emulator.fault({ type: "hang" }))
      const { search } = yield* servicesAt(emulator)
      const fiber = yield* Effect.fork(search.search("q", { maxResults: 5 }))
      yield* emulator
        .requests("tavily.search")
        .pipe(
          Effect.repeat({ schedule: Schedule.spaced("10 millis"), until: (requests) => requests.length > 0 }),
          Effect.timeoutFail({ duration: "5 seconds", onTimeout: () => new Error("the request never arrived") })
        )
      const exit = yield* Fiber.interrupt(fiber)
      assert.isTrue(Exit.isInterrupted(exit))
    })
  )

  it.scopedLive("a hanging search fails with ProviderTimeout after the configured time limit", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("tavily.search", Emulator.fault({ type: "hang" }))
      const { search } = yield* servicesAt(emulator, { searchTimeout: "200 millis" })
      const error = yield* Effect.flip(search.search("q", { maxResults: 5 }))
      if (error._tag === "ProviderTimeout") assert.deepStrictEqual(error.after, Duration.millis(200))
      else assert.fail(`expected ProviderTimeout, got ${error._tag}`)
      // The SDK itself gave the request up (it cannot be interrupted): nothing is left open behind the failure.
      const abandoned = yield* emulator.abandoned("tavily.search").pipe(
        Effect.filterOrFail((requests) => requests.length > 0),
        Effect.retry(Schedule.spaced("10 millis").pipe(Schedule.upTo("5 seconds"))),
        Effect.orElseFail(() => new Error("the SDK kept the request open"))
      )
      assert.strictEqual(abandoned[0]?.endpoint, "tavily.search")
    })
  )

  it("by default the SDK's limits are the default policy's attempt timeouts, so a request ends with its attempt", () => {
    assert.deepStrictEqual(Tavily.defaultTimeout("tavily", "search"), Duration.seconds(30))
    assert.deepStrictEqual(Tavily.defaultTimeout("tavily", "extract"), Duration.seconds(60))
  })

  it.scopedLive("an empty key fails with ProviderAuthenticationFailed instead of going keyless", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      const { search } = yield* servicesAt(emulator, { apiKey: Redacted.make("") })
      const error = yield* Effect.flip(search.search("q", { maxResults: 5 }))
      assert.strictEqual(error._tag, "ProviderAuthenticationFailed")
      assert.strictEqual((yield* emulator.requests("tavily.search")).length, 0)
    })
  )

  it.scopedLive("layerConfig reads TAVILY_API_KEY and TAVILY_BASE_URL and provides search and extraction", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond(
        "tavily.search",
        Emulator.tavilyResults([{ url: "https://a.org", title: "A", content: "a" }])
      )
      yield* emulator.respond("tavily.extract", Emulator.tavilyExtract([{ url: "https://a.org", rawContent: "# A" }]))
      const provided = Tavily.layerConfig().pipe(
        Layer.provide(
          Layer.setConfigProvider(
            ConfigProvider.fromMap(
              new Map([
                ["TAVILY_API_KEY", "tvly-from-config"],
                ["TAVILY_BASE_URL", emulator.baseUrl("tavily")]
              ])
            )
          )
        )
      )
      const [results, pages] = yield* Effect.all([
        Effect.flatMap(SearchProvider.SearchProvider, (provider) => provider.search("q", { maxResults: 1 })),
        Effect.flatMap(ContentExtractor.ContentExtractor, (extractor) => extractor.extract(["https://a.org"]))
      ]).pipe(Effect.provide(provided))
      assert.strictEqual(results[0]?.url, "https://a.org")
      assert.strictEqual(pages[0]?._tag, "ExtractedPage")
      const [request] = yield* emulator.requests("tavily.search")
      assert.strictEqual(request?.headers["authorization"], "Bearer tvly-from-config")
    })
  )
})
