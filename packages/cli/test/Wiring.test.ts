import { ContentExtractor, ModelRouter, Pipeline, SearchProvider, SessionStore } from "@deep-research/core"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import * as CliConfig from "../src/CliConfig.js"
import * as Store from "../src/Store.js"
import * as Wiring from "../src/Wiring.js"
import { storedFiles } from "./support/storedSession.js"

const simulated = (flags: CliConfig.Flags, store: string): CliConfig.Resolved => {
  const result = CliConfig.resolve({ ...flags, simulate: true, store, noClarify: true }, {}, undefined)
  if (Either.isLeft(result)) return assert.fail(result.left.message)
  return result.right
}

const tempStore = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(nodePath.join(os.tmpdir(), "deep-research-wiring-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

describe("Wiring", () => {
  it.live(
    "a simulated run reaches every vendor it names through the emulator, with no key in the environment",
    () =>
      Effect.gen(function* () {
        const store = yield* tempStore
        const resolved = simulated(
          { model: "anthropic:claude-sonnet-4-6", search: "exa,semantic-scholar,perplexity" },
          store
        )
        const session = yield* Pipeline.research("What limits battery recycling?", {
          config: resolved.research,
          clarification: "proceed"
        }).pipe(Effect.provide(Wiring.layer(resolved)))
        assert.strictEqual(session.status, "completed")
        const providers = new Set(session.sources.flatMap((source) => source.provider.split(",")))
        assert.includeMembers([...providers], ["exa", "semantic-scholar", "perplexity"])
        assert.isTrue(session.usage.some((usage) => usage.calls > 0))
      }).pipe(Effect.scoped),
    60_000
  )

  it.live(
    "a simulated run's report is stored with the simulated banner, in session.json and report.md",
    () =>
      Effect.gen(function* () {
        const store = yield* tempStore
        const resolved = simulated({}, store)
        const stored = yield* Effect.gen(function* () {
          const session = yield* Pipeline.research("How do tides work?", {
            config: resolved.research,
            clarification: "proceed"
          })
          return yield* Effect.flatMap(SessionStore.SessionStore, (sessions) => sessions.load(session.id))
        }).pipe(Effect.provide(Wiring.layer(resolved)))
        assert.isTrue(Store.isSimulatedReport(stored.report?.markdown ?? ""))
        assert.isTrue(Store.isSimulatedReport(storedFiles(resolved.storeDir, stored.id)["report.md"] ?? ""))
      }).pipe(Effect.scoped),
    60_000
  )

  it.live(
    "every provider the CLI wires goes by a name the config file's resilience.providers takes, and each name is one",
    () =>
      Effect.gen(function* () {
        const store = yield* tempStore
        const corpus = corpusIn(store)
        const names = new Set<string>()
        const collect = (resolved: CliConfig.Resolved) =>
          Effect.gen(function* () {
            names.add((yield* SearchProvider.SearchProvider).name)
            // A corpus run's extractor routes to two, each protected under its own name (the next test).
            for (const half of (yield* ContentExtractor.ContentExtractor).name.split("+")) names.add(half)
            names.add((yield* ModelRouter.ModelRouter).resolve("researcher").provider)
          }).pipe(Effect.provide(Wiring.layer(resolved)))
        for (const backend of CliConfig.SearchBackend.literals) {
          yield* collect(simulated({ search: backend, ...(backend === "local" ? { corpus } : {}) }, store))
        }
        for (const model of ["anthropic:claude-sonnet-4-6", "ollama:qwen3"]) yield* collect(simulated({ model }, store))
        // Without a Tavily key, pages are read by the HTTP extractor.
        const keyless = CliConfig.resolve(
          { search: "semantic-scholar", store },
          { OPENAI_API_KEY: "sk-wiring" },
          undefined
        )
        if (Either.isLeft(keyless)) return assert.fail(keyless.left.message)
        yield* collect(keyless.right)
        assert.deepStrictEqual([...names].sort(), [...CliConfig.resilienceProviders].sort())
      }).pipe(Effect.scoped),
    60_000
  )

  it.live(
    "a corpus run's web extractions are held to the web extractor's own settings (resilience.providers.tavily)",
    () =>
      Effect.gen(function* () {
        const store = yield* tempStore
        const corpus = corpusIn(store)
        const file = CliConfig.decodeFileConfig(
          JSON.stringify({
            resilience: { providers: { tavily: { requestsPerSecond: 0.001, burst: 1, adaptiveRate: false } } }
          }),
          "deep-research.config.json"
        )
        if (Either.isLeft(file)) return assert.fail(file.left.message)
        const resolved = CliConfig.resolve(
          { simulate: true, store, noClarify: true, search: "local,tavily", corpus },
          {},
          file.right
        )
        if (Either.isLeft(resolved)) return assert.fail(resolved.left.message)
        yield* Effect.gen(function* () {
          const extractor = yield* ContentExtractor.ContentExtractor
          const page = "https://example.com/tides"
          yield* extractor.extract([page])
          // Tavily's one token is spent: the next page waits for the next, a thousand seconds on.
          const second = yield* Effect.option(Effect.timeout(extractor.extract([page]), "300 millis"))
          assert.isTrue(Option.isNone(second), "the second page waited for Tavily's limit")
        }).pipe(Effect.provide(Wiring.layer(resolved.right)))
      }).pipe(Effect.scoped)
  )
})

/** A corpus of one note in the store's folder. */
const corpusIn = (store: string): string => {
  const corpus = nodePath.join(store, "corpus")
  fs.mkdirSync(corpus, { recursive: true })
  fs.writeFileSync(nodePath.join(corpus, "notes.md"), "# Tides\n\nThe moon's pull raises the tides twice a day.\n")
  return corpus
}
