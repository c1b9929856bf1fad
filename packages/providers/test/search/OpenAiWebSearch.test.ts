import type { Errors, SearchProvider } from "@deep-research/core"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Predicate } from "effect"
import { OpenAiWebSearch } from "../../src/index.js"
import { Emulator } from "@deep-research/emulator"

const providerFor = (emulator: Emulator.Handle, options?: Partial<OpenAiWebSearch.Options>) =>
  OpenAiWebSearch.make({ apiKey: "sk-test", baseUrl: emulator.baseUrl("openai"), ...options })

const defaults: SearchProvider.SearchOptions = { maxResults: 5 }

const answer = Emulator.openaiWebSearch({
  query: "solar capacity 2024",
  segments: [
    "Here is what the sources say:\n\n- Global solar capacity passed **2 TW** in 2024.",
    { text: "", url: "https://www.iea.org/reports/solar?utm_source=openai", title: "Solar - IEA" },
    "\n- China installed more than half of it.",
    { text: "", url: "https://ember-energy.org/china-solar?utm_source=openai", title: "China solar | Ember" },
    "\n"
  ],
  sources: [
    "https://www.iea.org/reports/solar?utm_source=openai",
    "https://ember-energy.org/china-solar?utm_source=openai",
    "https://en.wikipedia.org/wiki/Solar_power?utm_source=openai"
  ]
})

const failureOf = <A>(effect: Effect.Effect<A, Errors.ProviderError>) =>
  Effect.map(Effect.either(effect), (either) =>
    Either.isLeft(either) ? either.left : assert.fail("expected a failure")
  )

describe("OpenAiWebSearch", () => {
  it.scoped("asks the Responses API for a web search with its sources included", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("openai.responses", answer)
      const provider = yield* providerFor(emulator, { model: "gpt-4.1", searchContextSize: "high" })
      yield* provider.search("solar capacity 2024", {
        maxResults: 3,
        includeDomains: ["https://iea.org", "ember-energy.org"],
        timeRange: "year"
      })
      const [request] = yield* emulator.requests("openai.responses")
      const body = Predicate.isRecord(request?.body) ? request.body : assert.fail("no JSON body")
      assert.strictEqual(body["model"], "gpt-4.1")
      assert.deepStrictEqual(body["tools"], [
        {
          type: "web_search",
          filters: { allowed_domains: ["iea.org", "ember-energy.org"] },
          search_context_size: "high"
        }
      ])
      assert.deepStrictEqual(body["include"], ["web_search_call.action.sources"])
      assert.include(String(body["input"]), "solar capacity 2024")
      assert.include(String(body["input"]), "the past year")
    })
  )

  it.scoped("returns the cited pages with their cited sentence, then the other sources", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("openai.responses", answer)
      const provider = yield* providerFor(emulator)
      const results = yield* provider.search("solar capacity 2024", defaults)
      assert.deepStrictEqual(
        results.map((r) => [r.url, r.title, r.snippet, r.provider]),
        [
          ["https://www.iea.org/reports/solar", "Solar - IEA", "Global solar capacity passed 2 TW in 2024.", "openai"],
          [
            "https://ember-energy.org/china-solar",
            "China solar | Ember",
            "China installed more than half of it.",
            "openai"
          ],
          ["https://en.wikipedia.org/wiki/Solar_power", "en.wikipedia.org", "", "openai"]
        ]
      )
    })
  )

  it.scoped("keeps at most maxResults and drops excluded domains", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("openai.responses", answer)
      const provider = yield* providerFor(emulator)
      const results = yield* provider.search("solar", { maxResults: 2, excludeDomains: ["iea.org"] })
      assert.deepStrictEqual(
        results.map((r) => r.url),
        ["https://ember-energy.org/china-solar", "https://en.wikipedia.org/wiki/Solar_power"]
      )
    })
  )

  it.scoped("reads the same results from a streamed answer", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("openai.responses", answer)
      const provider = yield* providerFor(emulator, { stream: true })
      const results = yield* provider.search("solar capacity 2024", defaults)
      assert.deepStrictEqual(
        results.map((r) => r.snippet),
        ["Global solar capacity passed 2 TW in 2024.", "China installed more than half of it.", ""]
      )
      const [request] = yield* emulator.requests("openai.responses")
      assert.strictEqual(Predicate.isRecord(request?.body) ? request.body["stream"] : undefined, true)
    })
  )

  it.scoped("maps vendor errors like the language model does", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      const provider = yield* providerFor(emulator)
      const tags: Array<string> = []
      for (const fault of [
        { type: "rate_limit", retryAfterSeconds: 2 },
        { type: "quota" },
        { type: "auth" },
        { type: "context_length" },
        { type: "server_error", status: 503 },
        { type: "reset" }
      ] as const) {
        yield* emulator.enqueue("openai.responses", Emulator.fault(fault))
        tags.push((yield* failureOf(provider.search("q", defaults)))._tag)
      }
      assert.deepStrictEqual(tags, [
        "ProviderRateLimited",
        "ProviderQuotaExhausted",
        "ProviderAuthenticationFailed",
        "ContextWindowExceeded",
        "ProviderUnavailable",
        "ProviderUnavailable"
      ])
    })
  )

  it.scoped("turns a failed response into a provider error", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond(
        "openai.responses",
        Emulator.json({
          id: "resp_1",
          object: "response",
          status: "failed",
          error: { code: "server_error", message: "The search backend failed." },
          output: []
        })
      )
      const provider = yield* providerFor(emulator)
      const error = yield* failureOf(provider.search("q", defaults))
      assert.strictEqual(error._tag, "ProviderUnavailable")
    })
  )

  it.effect("takes the cited span from the line up to the inline link, after any earlier citation", () =>
    Effect.sync(() => {
      const text = "Intro.\nFirst claim. ([a.com](https://a.com)) Second claim. ([b.com](https://b.com))"
      const firstStart = text.indexOf(" ([a.com]") + 1
      const firstEnd = text.indexOf("))") + 2
      const secondStart = text.indexOf(" ([b.com]") + 1
      assert.strictEqual(OpenAiWebSearch.citedSpan(text, firstStart, 0), "First claim.")
      assert.strictEqual(OpenAiWebSearch.citedSpan(text, secondStart, firstEnd), "Second claim.")
    })
  )
})
