/**
 * Builds the layers of a run from the resolved configuration: the models per role, the search backends (fanned out
 * when there are several), the extractor, the summarizer, the file session store, the progress stream and the
 * resilience policy shared by every session of the process. With `--simulate` it starts the in-process emulator and
 * points the real provider code at it.
 */
import {
  ContentExtractor,
  Errors,
  type ModelRouter,
  Research,
  ResearchEvents,
  Resilience,
  SearchProvider,
  Session,
  SessionStore,
  SourceLibrary,
  Summarizer
} from "@deep-research/core"
import {
  AnthropicWebSearch,
  Exa,
  HttpExtractor,
  Keyless,
  KeylessProviders,
  LocalCorpus,
  ModelSpec,
  OpenAiWebSearch,
  Perplexity,
  SearchFanout,
  Secrets,
  SemanticScholar,
  Tavily
} from "@deep-research/providers"
import { Emulator } from "@deep-research/emulator"
import * as Effect from "effect/Effect"
import * as crypto from "node:crypto"
import * as nodePath from "node:path"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import type * as CliConfig from "./CliConfig.js"
import { simulatedModel } from "./internal/config/backends.js"
import { secretsIn } from "./internal/config/credentials.js"
import { runReach } from "./internal/serving/sessionReach.js"
import { isSimulatedReport, markSimulated, simulatedArtefact, storeLayer } from "./Store.js"

/** What a run needs in context. */
export type Services =
  | ModelRouter.ModelRouter
  | SearchProvider.SearchProvider
  | ContentExtractor.ContentExtractor
  | Summarizer.Summarizer
  | SessionStore.SessionStore
  | SourceLibrary.SourceLibrary
  | SourceLibrary.RunReach
  | ResearchEvents.ResearchEvents
  | Resilience.Resilience

/** Each provider's published limits, as its default policy (PubMed's depends on whether there is an NCBI key). */
const providerPolicies = (resolved: CliConfig.Resolved) => ({
  tavily: Tavily.policy,
  local: LocalCorpus.policy,
  exa: Exa.policy,
  perplexity: Perplexity.policy,
  "semantic-scholar": SemanticScholar.policy,
  ...KeylessProviders.policies(resolved.credentials.keyless)
})

const searchProvider = (
  backend: CliConfig.SearchBackend,
  resolved: CliConfig.Resolved,
  corpus: LocalCorpus.Service | undefined
): Effect.Effect<SearchProvider.Service, Errors.ResearchInvalidInput, Scope.Scope> => {
  const c = resolved.credentials
  switch (backend) {
    case "tavily":
      return Effect.map(makeTavily(resolved), (t) => t.search)
    case "exa":
      return Effect.succeed(Exa.make({ apiKey: c.exaApiKey ?? Redacted.make("no-key"), baseUrl: c.exaBaseUrl }).search)
    case "perplexity":
      return Effect.succeed(
        Perplexity.make({ apiKey: c.perplexityApiKey ?? Redacted.make("no-key"), baseUrl: c.perplexityBaseUrl })
      )
    case "semantic-scholar":
      return Effect.succeed(
        SemanticScholar.make({ apiKey: c.semanticScholarApiKey, baseUrl: c.semanticScholarBaseUrl })
      )
    case "openai-native":
      return OpenAiWebSearch.make({ apiKey: c.openaiApiKey, baseUrl: c.openaiBaseUrl })
    case "anthropic-native":
      return AnthropicWebSearch.make({
        apiKey: c.anthropicApiKey ?? Redacted.make("no-key"),
        ...(c.anthropicBaseUrl === undefined ? {} : { baseUrl: c.anthropicBaseUrl })
      })
    case "local":
      return corpus === undefined
        ? Effect.die(new Error("local search without a corpus"))
        : Effect.succeed(corpus.search)
    case "wikipedia":
    case "openalex":
    case "arxiv":
    case "pubmed":
    case "searxng":
      return KeylessProviders.make(backend, c.keyless)
  }
}

/**
 * The store of a simulated run: reports are saved with the simulated banner, in `session.json` and `report.md` alike,
 * so that `show`, the MCP server and the files on disk can never pass a simulated report off as a real one.
 */
const simulatedStore = (store: SessionStore.Service): SessionStore.Service => ({
  ...store,
  save: (session) =>
    Effect.zipLeft(
      store.save(
        session.report === undefined || isSimulatedReport(session.report.markdown)
          ? session
          : new Session.Session({
              ...session,
              report: new Research.Report({ ...session.report, markdown: markSimulated(session.report.markdown) })
            })
      ),
      // A session stored queued (asked for, not begun) is marked as it is stored, before it is acknowledged: simulated
      // wherever it runs. Both writes at once, so that the store commits them together.
      session.status === "queued"
        ? Effect.ignore(store.saveArtefact(session.id, simulatedArtefact, simulatedMark))
        : Effect.void,
      { concurrent: true }
    ),
  saveReport: (id, markdown) => store.saveReport(id, markSimulated(markdown)),
  // The session remembers it was simulated, so that resume and evaluate simulate it too without being told.
  lock: (id) =>
    Effect.tap(store.lock(id), () => Effect.ignore(store.saveArtefact(id, simulatedArtefact, simulatedMark)))
})

const simulatedMark = '{"simulated": true}\n'

/** The store's parts a run uses: the sessions, the library, and which sessions' sources a run may take from it. */
type StoreServices = SessionStore.SessionStore | SourceLibrary.SourceLibrary | SourceLibrary.RunReach

/**
 * The store as runs open it, in every process that runs sessions (one, `serve`, a cluster's worker): a run takes from
 * the library only the sources of its session's owner and no one's (`runReach`, by the rule of `sessionReach.ts`).
 */
const sessionStoreLayer = (resolved: CliConfig.Resolved): Layer.Layer<StoreServices> => {
  const files = storeLayer(resolved.storeDir, resolved.credentials)
  const reach = Layer.effect(SourceLibrary.RunReach, Effect.map(SessionStore.SessionStore, runReach))
  return resolved.simulate
    ? Layer.mergeAll(
        Layer.effect(SessionStore.SessionStore, Effect.map(SessionStore.SessionStore, simulatedStore)),
        Layer.effect(SourceLibrary.SourceLibrary, SourceLibrary.SourceLibrary),
        reach
      ).pipe(Layer.provide(files))
    : Layer.provideMerge(reach, files)
}

const routerLayer = (
  resolved: CliConfig.Resolved,
  resilience: Resilience.Resilience
): Layer.Layer<ModelRouter.ModelRouter, Errors.ResearchInvalidInput> => {
  const c = resolved.credentials
  return ModelSpec.layerConfig({
    default: resolved.models.default,
    roles: resolved.models.roles,
    tiers: resolved.models.tiers,
    providers: {
      openai: { apiKey: c.openaiApiKey, baseUrl: c.openaiBaseUrl },
      anthropic: { apiKey: c.anthropicApiKey, baseUrl: c.anthropicBaseUrl },
      ollama: { baseUrl: c.ollamaBaseUrl }
    }
  }).pipe(Layer.provide(Layer.succeed(Resilience.Resilience, resilience)))
}

/** The user's resilience settings, with the providers' published limits underneath. */
const resilienceSettings = (resolved: CliConfig.Resolved): Resilience.Settings =>
  Resilience.withProviderDefaults(resolved.resilience, providerPolicies(resolved))

const makeResilience = (resolved: CliConfig.Resolved) => Resilience.make(resilienceSettings(resolved))

/**
 * Tavily with the SDK's own request limits set to the policy's attempt timeouts: the SDK cannot be interrupted, so a
 * request core has given up on ends when its attempt does.
 */
const makeTavily = (resolved: CliConfig.Resolved) =>
  Tavily.make({
    apiKey: resolved.credentials.tavilyApiKey ?? Redacted.make("no-key"),
    baseUrl: resolved.credentials.tavilyBaseUrl,
    searchTimeout: Resilience.policyFor(resilienceSettings(resolved), "tavily", "search").attemptTimeout,
    extractTimeout: Resilience.policyFor(resilienceSettings(resolved), "tavily", "extract").attemptTimeout
  })

/**
 * The corpus of `--corpus DIR`, indexed. Its index is kept in the store (`<store>/corpus-index/`), never in the
 * user's folder; what was indexed and what was skipped is said on stderr, and a folder with nothing readable in it is
 * a usage error rather than a report on nothing.
 */
const openCorpus = (resolved: CliConfig.Resolved, root: string, secrets: ReadonlyArray<Redacted.Redacted<string>>) =>
  Effect.gen(function* () {
    const absolute = nodePath.resolve(root)
    const digest = crypto.createHash("sha256").update(absolute).digest("hex").slice(0, 16)
    const corpus = yield* LocalCorpus.make({
      root: absolute,
      cacheFile: nodePath.join(resolved.storeDir, "corpus-index", `${digest}.json`),
      // A key in the user's documents stays out of the index on disk, the results and the models' prompts.
      scrub: Secrets.scrubber(secrets)
    })
    const report = yield* corpus.lastReport
    // Each skipped file by name (the first few), so that a user sees which of theirs went unread, and why.
    const named = report.skipped.slice(0, 5).map((file) => `${file.path} (${file.reason})`)
    const more = report.skipped.length - named.length
    const skipped =
      report.skipped.length === 0
        ? ""
        : `, ${report.skipped.length} skipped: ${named.join("; ")}${more > 0 ? `; and ${more} more` : ""}`
    if (report.files === 0) {
      return yield* new Errors.ResearchInvalidInput({
        reason: `nothing to research in ${absolute}: no readable text, Markdown, HTML or PDF file${skipped}`
      })
    }
    yield* Effect.sync(() =>
      process.stderr.write(`corpus ${absolute}: ${report.files} files indexed (${report.chunks} chunks)${skipped}\n`)
    )
    return corpus
  })

/**
 * The services of a run, for the configuration as resolved (emulator URLs already in place when simulating), over
 * `store`.
 */
const servicesLayer = (
  resolved: CliConfig.Resolved,
  store: Layer.Layer<StoreServices>,
  secrets: ReadonlyArray<Redacted.Redacted<string>>
): Layer.Layer<Services, Errors.ResearchInvalidInput> =>
  // Scoped: some search providers pace their requests for as long as the services live.
  Layer.unwrapScoped(
    Effect.gen(function* () {
      const c = resolved.credentials
      // One per process: every session of the process shares the breakers, rate limits and concurrency limits.
      const resilience = yield* makeResilience(resolved)
      const corpus = resolved.corpus === undefined ? undefined : yield* openCorpus(resolved, resolved.corpus, secrets)
      const providers = yield* Effect.forEach(resolved.search, (backend) =>
        Effect.flatMap(searchProvider(backend, resolved, corpus), (provider) =>
          Resilience.wrapSearchProvider(provider).pipe(Effect.provideService(Resilience.Resilience, resilience))
        )
      )
      const search =
        providers.length === 1 && providers[0] !== undefined ? providers[0] : yield* SearchFanout.make({ providers })
      const web =
        c.tavilyApiKey !== undefined || c.tavilyBaseUrl !== undefined
          ? (yield* makeTavily(resolved)).extractor
          : HttpExtractor.make()
      const protectedExtractor = (extractor: ContentExtractor.Service) =>
        Resilience.wrapContentExtractor(extractor).pipe(Effect.provideService(Resilience.Resilience, resilience))
      // With a corpus, each half is protected under its own provider's settings, breaker and limits ("local", and
      // "tavily" or "http"): the pair's name ("local+tavily") is no provider's, and settings for it cannot be given.
      const extractor =
        corpus === undefined
          ? yield* protectedExtractor(web)
          : LocalCorpus.routingExtractor(yield* protectedExtractor(corpus.extractor), yield* protectedExtractor(web))
      const base = Layer.mergeAll(
        routerLayer(resolved, resilience),
        Layer.succeed(Resilience.Resilience, resilience),
        Layer.succeed(SearchProvider.SearchProvider, search),
        Layer.succeed(ContentExtractor.ContentExtractor, extractor),
        store,
        ResearchEvents.layer
      )
      return Layer.provideMerge(Summarizer.layer, base)
    })
  )

/** The keyless APIs at the emulator; a simulated SearXNG stands in whether or not the user named one. */
const simulatedKeyless = (keyless: Keyless.Settings, emulator: Emulator.Handle): Keyless.Settings => ({
  ...keyless,
  wikipedia: { ...keyless.wikipedia, baseUrl: emulator.baseUrl("wikipedia") },
  arxiv: { baseUrl: emulator.baseUrl("arxiv") },
  openalex: { ...keyless.openalex, baseUrl: emulator.baseUrl("openalex") },
  pubmed: { ...keyless.pubmed, baseUrl: emulator.baseUrl("pubmed") },
  searxng: { url: emulator.baseUrl("searxng") }
})

/** With `--simulate`: starts the emulator for the life of the layer and points the vendors' code at it. */
const simulated = <A, E>(
  resolved: CliConfig.Resolved,
  build: (resolved: CliConfig.Resolved) => Layer.Layer<A, E>
): Layer.Layer<A, E> => {
  if (!resolved.simulate) return build(resolved)
  return Layer.unwrapScoped(
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* Emulator.simulate(emulator)
      // Every vendor the configuration may name is pointed at the emulator, so a simulated run never leaves the
      // machine whatever models and search backends it was given.
      const openai = emulator.baseUrl("openai")
      return build({
        ...resolved,
        credentials: {
          openaiApiKey: Redacted.make("sk-simulated"),
          openaiBaseUrl: openai,
          anthropicApiKey: Redacted.make("sk-ant-simulated"),
          anthropicBaseUrl: emulator.baseUrl("anthropic"),
          tavilyApiKey: Redacted.make("tvly-simulated"),
          tavilyBaseUrl: emulator.baseUrl("tavily"),
          exaApiKey: Redacted.make("exa-simulated"),
          exaBaseUrl: emulator.baseUrl("exa"),
          perplexityApiKey: Redacted.make("pplx-simulated"),
          perplexityBaseUrl: emulator.baseUrl("perplexity"),
          semanticScholarApiKey: undefined,
          semanticScholarBaseUrl: emulator.baseUrl("semanticScholar"),
          ollamaBaseUrl: openai,
          keyless: simulatedKeyless(resolved.credentials.keyless, emulator),
          // The emulator stands in for the vendors, never for the sessions' database or the server's token.
          databaseUrl: resolved.credentials.databaseUrl,
          apiToken: resolved.credentials.apiToken
        }
      })
    })
  )
}

/**
 * The layers of a run. With `--simulate`, the emulator runs for the life of the layer; the store and the corpus's index
 * keep the environment's keys and token out of what they write all the same (a question or a document may hold them,
 * whoever answers it).
 */
export const layer = (resolved: CliConfig.Resolved): Layer.Layer<Services, Errors.ResearchInvalidInput> =>
  simulated(resolved, (vendors) => servicesLayer(vendors, sessionStoreLayer(resolved), secretsIn(resolved.credentials)))

/**
 * The session store alone, as research would open it: for a process that runs no model itself (a client of a
 * cluster).
 */
export const storeOnlyLayer = (resolved: CliConfig.Resolved): Layer.Layer<StoreServices> => sessionStoreLayer(resolved)

/** The models alone (the judge is the `evaluation` role), for a process that has its store already. */
export const judgeLayer = (
  resolved: CliConfig.Resolved
): Layer.Layer<ModelRouter.ModelRouter, Errors.ResearchInvalidInput> =>
  simulated(resolved, (resolved) =>
    Layer.unwrapEffect(Effect.map(makeResilience(resolved), (resilience) => routerLayer(resolved, resilience)))
  )

/**
 * The emulator as the judge, for a session a simulated run made, whatever this process was given (a client of a
 * cluster may have no model at all): `deep-research evaluate` judges such a session the same way.
 */
export const simulatedJudgeLayer = (
  resolved: CliConfig.Resolved
): Layer.Layer<ModelRouter.ModelRouter, Errors.ResearchInvalidInput> =>
  judgeLayer({
    ...resolved,
    simulate: true,
    models: { ...resolved.models, default: resolved.models.default === "" ? simulatedModel : resolved.models.default }
  })

/** What `evaluate` needs: the models (the judge is the `evaluation` role) and the session store. */
export const evaluationLayer = (
  resolved: CliConfig.Resolved
): Layer.Layer<ModelRouter.ModelRouter | SessionStore.SessionStore, Errors.ResearchInvalidInput> =>
  Layer.merge(judgeLayer(resolved), sessionStoreLayer(resolved))
