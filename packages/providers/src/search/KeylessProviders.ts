/**
 * The keyless search set's providers: one by its name, with the settings of `Keyless.ts`; their default resilience
 * policies (each provider's published limit); and a set of them as one `SearchProvider`, merged by `SearchFanout`.
 */
import { Errors, type Resilience, SearchProvider } from "@deep-research/core"
import type * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import * as Environment from "../Environment.js"
import * as SearchFanout from "./SearchFanout.js"
import * as Arxiv from "./Arxiv.js"
import * as Keyless from "./Keyless.js"
import * as OpenAlex from "./OpenAlex.js"
import * as PubMed from "./PubMed.js"
import * as Searxng from "./Searxng.js"
import * as Wikipedia from "./Wikipedia.js"

/** The default resilience policy of each backend (SearXNG's instance publishes none: the search default applies). */
export const policies = (settings: Keyless.Settings): Readonly<Record<string, Resilience.PolicyOverrides>> => ({
  wikipedia: Wikipedia.policy,
  openalex: OpenAlex.policy,
  arxiv: Arxiv.policy,
  pubmed: PubMed.policyFor(settings.pubmed.apiKey !== undefined)
})

// =============================================================================
// Constructors
// =============================================================================

/** One backend's provider; SearXNG without an instance is refused. */
export const make = (
  backend: Keyless.Backend,
  settings: Keyless.Settings
): Effect.Effect<SearchProvider.Service, Errors.ResearchInvalidInput, Scope.Scope> => {
  const contact = settings.contact
  switch (backend) {
    case "wikipedia":
      return Wikipedia.make({ ...settings.wikipedia, contact })
    case "arxiv":
      return Arxiv.make({ ...settings.arxiv, contact })
    case "openalex":
      return Effect.succeed(OpenAlex.make({ ...settings.openalex, contact }))
    case "pubmed":
      return PubMed.make({ ...settings.pubmed, contact })
    case "searxng":
      return settings.searxng.url === undefined
        ? Effect.fail(
            new Errors.ResearchInvalidInput({
              reason: `SearXNG search needs ${Environment.searxngUrl}: the address of your own instance`
            })
          )
        : Effect.succeed(Searxng.make({ url: settings.searxng.url, contact }))
  }
}

/** The backends as one `SearchProvider`, merged by `SearchFanout`. */
export const layer = (
  backends: ReadonlyArray<Keyless.Backend>,
  settings: Keyless.Settings = Keyless.emptySettings
): Layer.Layer<SearchProvider.SearchProvider, Errors.ResearchInvalidInput> =>
  SearchFanout.layerOf(backends.map((backend) => Layer.scoped(SearchProvider.SearchProvider, make(backend, settings))))

/** The default set, configured from the environment (or whatever `ConfigProvider` is installed). */
export const layerConfig = (): Layer.Layer<
  SearchProvider.SearchProvider,
  Errors.ResearchInvalidInput | ConfigError.ConfigError
> => Layer.unwrapEffect(Effect.map(Keyless.config, (settings) => layer(Keyless.defaultSet(settings), settings)))
