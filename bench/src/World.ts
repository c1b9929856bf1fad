/**
 * The layers a benchmark run needs, wired as the CLI wires them (`packages/cli/src/Wiring.ts`): the real OpenAI
 * model code per role, Tavily for search and extraction, both under the shared resilience policy, the summarizer over
 * the summarization role, the file session store and the event stream. Every role's model sends an `x-bench-role`
 * header so the server side can tell the roles apart.
 */
import {
  ContentExtractor,
  ModelRouter,
  ResearchEvents,
  Resilience,
  SearchProvider,
  SessionStore,
  Summarizer,
  Usage
} from "@deep-research/core"
import { MemorySessionStore } from "@deep-research/core/testing"
import { OpenAiLanguageModel, SqlSessionStore, Tavily } from "@deep-research/providers"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import OpenAI from "openai"

/**
 * The resilience policy: as the CLI wires it (the defaults, Tavily at its published 100 a minute), the defaults with the search
 * rate limit lifted (what a paid search plan allows), or none at all.
 */
export type Policy = "default" | "designDefaults" | "searchUnlimited" | "none"

/** Where the backends are and how the run is wired. */
export interface Options {
  readonly openaiBaseUrl: string
  readonly tavilyBaseUrl: string
  readonly policy: Policy
  /** A folder for the SQLite store (`deep-research.db` in it), or the in-memory store. */
  readonly storeDirectory: string | undefined
  readonly model?: string | undefined
  /** A `fetch` for the OpenAI SDK in place of the network (the in-process backend). */
  readonly openaiFetch?: typeof fetch | undefined
  /** A search provider in place of Tavily over HTTP (the in-process backend). */
  readonly search?: SearchProvider.Service | undefined
  /** Leave the event stream out (the pipeline then keeps no event log). Default: in. */
  readonly events?: boolean | undefined
}

const settingsOf = (policy: Policy): Resilience.Settings | undefined => {
  switch (policy) {
    case "default":
      // As the CLI wires it: the design's defaults with the providers' published limits underneath.
      return Resilience.withProviderDefaults(Resilience.defaultSettings, { tavily: Tavily.policy })
    case "designDefaults":
      // Before the providers shipped their published limits: every search API at 1 request a second, burst 3.
      return Resilience.defaultSettings
    case "searchUnlimited":
      return Schema.decodeUnknownSync(Resilience.Settings)({ search: { requestsPerSecond: null } })
    case "none":
      return undefined
  }
}

/** Every service `Pipeline.research` needs, plus the event stream. */
export const layer = (options: Options) =>
  Layer.unwrapEffect(
    Effect.gen(function* () {
      const settings = settingsOf(options.policy)
      const resilience = settings === undefined ? undefined : yield* Resilience.make(settings)
      const roles: Partial<Record<Usage.Role, ReturnType<typeof ModelRouter.resolveModel>>> = {}
      for (const role of Usage.roles) {
        const headers = { "x-bench-role": role }
        roles[role] = yield* OpenAiLanguageModel.make({
          model: options.model ?? "gpt-4.1",
          apiKey: "sk-bench",
          baseUrl: options.openaiBaseUrl,
          headers,
          ...(options.openaiFetch === undefined
            ? {}
            : {
                client: new OpenAI({
                  apiKey: "sk-bench",
                  baseURL: options.openaiBaseUrl,
                  maxRetries: 0,
                  fetch: options.openaiFetch,
                  defaultHeaders: headers
                })
              })
        })
      }
      const fallbackModel = roles.report ?? (yield* Effect.dieMessage("no report model"))
      const models: ModelRouter.Models = { default: fallbackModel, roles }
      const tavily = yield* Tavily.make({ apiKey: Redacted.make("tvly-bench"), baseUrl: options.tavilyBaseUrl })
      const searchProvider = options.search ?? tavily.search
      const search = resilience === undefined ? searchProvider : resilience.wrapSearchProvider(searchProvider)
      const extractor = resilience === undefined ? tavily.extractor : resilience.wrapContentExtractor(tavily.extractor)
      const router = ModelRouter.make(
        resilience === undefined ? models : ModelRouter.mapModels(models, resilience.wrapLanguageModel)
      )
      const store: Layer.Layer<SessionStore.SessionStore> =
        options.storeDirectory === undefined
          ? MemorySessionStore.layer
          : Layer.orDie(SqlSessionStore.layerSqlite(SqlSessionStore.databaseFile(options.storeDirectory)))
      const base = Layer.mergeAll(
        Layer.succeed(ModelRouter.ModelRouter, router),
        Layer.succeed(SearchProvider.SearchProvider, search),
        Layer.succeed(ContentExtractor.ContentExtractor, extractor),
        store,
        options.events === false ? Layer.empty : ResearchEvents.layer,
        resilience === undefined ? Layer.empty : Layer.succeed(Resilience.Resilience, resilience)
      )
      return Layer.provideMerge(Summarizer.layer, base)
    })
  )
