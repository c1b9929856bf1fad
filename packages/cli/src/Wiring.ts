/**
 * Builds the layers of a run from the resolved configuration: the models per role, the search backends (fanned out
 * when there are several), the extractor, the summarizer, the file session store, the progress stream and the
 * resilience policy shared by every session of the process. With `--simulate` it starts the in-process emulator and
 * points the real provider code at it.
 */
import {
  ContentExtractor,
  type Errors,
  type ModelRouter,
  Research,
  ResearchEvents,
  Resilience,
  SearchProvider,
  Session,
  SessionStore,
  Summarizer
} from "@deep-research/core"
import {
  AnthropicWebSearch,
  Exa,
  HttpExtractor,
  LocalCorpus,
  ModelSpec,
  OpenAiWebSearch,
  Perplexity,
  SearchFanout,
  SemanticScholar,
  Tavily
} from "@deep-research/providers"
import { Emulator } from "@deep-research/providers/testing"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import type * as CliConfig from "./CliConfig.js"
import { isSimulatedReport, markSimulated, sessionsDirectory, storeLayer } from "./Store.js"

/** What a run needs in context. */
export type Services =
  | ModelRouter.ModelRouter
  | SearchProvider.SearchProvider
  | ContentExtractor.ContentExtractor
  | Summarizer.Summarizer
  | SessionStore.SessionStore
  | ResearchEvents.ResearchEvents
  | Resilience.Resilience

const providerPolicies = {
  local: LocalCorpus.policy,
  exa: Exa.policy,
  perplexity: Perplexity.policy,
  "semantic-scholar": SemanticScholar.policy
}

const searchProvider = (
  backend: CliConfig.SearchBackend,
  resolved: CliConfig.Resolved,
  corpus: LocalCorpus.Service | undefined
): Effect.Effect<SearchProvider.Service> => {
  const c = resolved.credentials
  switch (backend) {
    case "tavily":
      return Effect.map(
        Tavily.make({ apiKey: c.tavilyApiKey ?? Redacted.make("no-key"), baseUrl: c.tavilyBaseUrl }),
        (t) => t.search
      )
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
  }
}

/**
 * The store of a simulated run: reports are saved with the simulated banner, in `session.json` and `report.md` alike,
 * so that `show`, the MCP server and the files on disk can never pass a simulated report off as a real one.
 */
const simulatedStore = (store: SessionStore.Service): SessionStore.Service => ({
  ...store,
  save: (session) =>
    store.save(
      session.report === undefined || isSimulatedReport(session.report.markdown)
        ? session
        : new Session.Session({
            ...session,
            report: new Research.Report({ ...session.report, markdown: markSimulated(session.report.markdown) })
          })
    ),
  saveReport: (id, markdown) => store.saveReport(id, markSimulated(markdown))
})

const sessionStoreLayer = (resolved: CliConfig.Resolved): Layer.Layer<SessionStore.SessionStore> => {
  const files = storeLayer(sessionsDirectory(resolved), resolved.credentials)
  return resolved.simulate
    ? Layer.effect(SessionStore.SessionStore, Effect.map(SessionStore.SessionStore, simulatedStore)).pipe(
        Layer.provide(files)
      )
    : files
}

const routerLayer = (
  resolved: CliConfig.Resolved,
  resilience: Resilience.Service
): Layer.Layer<ModelRouter.ModelRouter, Errors.InvalidInput> => {
  const c = resolved.credentials
  return ModelSpec.layer({
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

const makeResilience = Resilience.make(Resilience.withProviderDefaults(Resilience.defaultSettings, providerPolicies))

/** The services of a run, for the configuration as resolved (emulator URLs already in place when simulating). */
const servicesLayer = (resolved: CliConfig.Resolved): Layer.Layer<Services, Errors.InvalidInput> =>
  Layer.unwrapEffect(
    Effect.gen(function* () {
      const c = resolved.credentials
      // One per process: every session of the process shares the breakers, rate limits and concurrency limits.
      const resilience = yield* makeResilience
      const corpus = resolved.corpus === undefined ? undefined : yield* LocalCorpus.make({ root: resolved.corpus })
      const providers = yield* Effect.forEach(resolved.search, (backend) =>
        Effect.flatMap(searchProvider(backend, resolved, corpus), (provider) =>
          Resilience.wrapSearchProvider(provider).pipe(Effect.provideService(Resilience.Resilience, resilience))
        )
      )
      const search =
        providers.length === 1 && providers[0] !== undefined ? providers[0] : yield* SearchFanout.make({ providers })
      const web =
        c.tavilyApiKey !== undefined || c.tavilyBaseUrl !== undefined
          ? (yield* Tavily.make({ apiKey: c.tavilyApiKey ?? Redacted.make("no-key"), baseUrl: c.tavilyBaseUrl }))
              .extractor
          : HttpExtractor.make()
      const extractor = yield* Resilience.wrapContentExtractor(
        corpus === undefined ? web : LocalCorpus.routingExtractor(corpus.extractor, web)
      ).pipe(Effect.provideService(Resilience.Resilience, resilience))
      const base = Layer.mergeAll(
        routerLayer(resolved, resilience),
        Layer.succeed(Resilience.Resilience, resilience),
        Layer.succeed(SearchProvider.SearchProvider, search),
        Layer.succeed(ContentExtractor.ContentExtractor, extractor),
        sessionStoreLayer(resolved),
        ResearchEvents.layer
      )
      return Layer.provideMerge(Summarizer.layer, base)
    })
  )

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
          ollamaBaseUrl: openai
        }
      })
    })
  )
}

/** The layers of a run. With `--simulate`, the emulator runs for the life of the layer. */
export const layer = (resolved: CliConfig.Resolved): Layer.Layer<Services, Errors.InvalidInput> =>
  simulated(resolved, servicesLayer)

/** What `evaluate` needs: the models (the judge is the `evaluation` role) and the session store. */
export const evaluationLayer = (
  resolved: CliConfig.Resolved
): Layer.Layer<ModelRouter.ModelRouter | SessionStore.SessionStore, Errors.InvalidInput> =>
  simulated(resolved, (resolved) =>
    Layer.unwrapEffect(
      Effect.map(makeResilience, (resilience) =>
        Layer.merge(routerLayer(resolved, resilience), sessionStoreLayer(resolved))
      )
    )
  )
