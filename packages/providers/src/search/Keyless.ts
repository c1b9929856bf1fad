/**
 * The keyless search set: Wikipedia, arXiv, OpenAlex, PubMed and a user's SearXNG, which research needs no key for.
 * What each is good for (the CLI's help and the README say it from here), their settings from the environment, and
 * the default set a run uses when it has no search key and its model no native search. Light on purpose (no provider
 * is loaded): the command line reads it (its help only `KeylessBackends.ts`); `KeylessProviders.ts` builds them.
 *
 * The default set is SearXNG when `SEARXNG_URL` names an instance (the open web), plus Wikipedia (overviews, in the
 * question's language) and, when `OPENALEX_API_KEY` is set, OpenAlex (scholarly works of every field, arXiv's and
 * PubMed's among them: its keyless daily allowance is about ten searches), merged by `SearchFanout`. arXiv and PubMed are there to choose: the fan-out waits for every provider, so arXiv's one request
 * every three seconds would pace every search of a run, and PubMed's biomedical index answers most questions with
 * beside-the-point papers; OpenAlex already indexes both.
 */
import * as Config from "effect/Config"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as Environment from "../Environment.js"
import * as KeylessBackends from "./KeylessBackends.js"

// =============================================================================
// Backends
// =============================================================================

/** The keyless search backends, by the names `--search` and the config file take. */
export const Backend = Schema.Literal(...KeylessBackends.names)
export type Backend = typeof Backend.Type

/** What each backend is good for. */
export const descriptions: Readonly<Record<Backend, string>> = KeylessBackends.descriptions

// =============================================================================
// Settings
// =============================================================================

/** Where each backend is and how it identifies itself. */
export interface Settings {
  /** Who runs this client (an e-mail address or a URL): the `User-Agent` of every backend carries it. */
  readonly contact: string | undefined
  readonly wikipedia: { readonly baseUrl: string | undefined; readonly language: string | undefined }
  readonly arxiv: { readonly baseUrl: string | undefined }
  readonly openalex: {
    readonly baseUrl: string | undefined
    readonly email: string | undefined
    readonly apiKey: Redacted.Redacted | undefined
  }
  readonly pubmed: { readonly baseUrl: string | undefined; readonly apiKey: Redacted.Redacted | undefined }
  readonly searxng: { readonly url: string | undefined }
}

const optional = (name: string) => Config.option(Config.nonEmptyString(name)).pipe(Config.map(Option.getOrUndefined))
const optionalSecret = (name: string) =>
  Config.option(Config.redacted(Config.nonEmptyString(name))).pipe(Config.map(Option.getOrUndefined))

/** The settings from `WIKIPEDIA_BASE_URL`, `OPENALEX_EMAIL`, `NCBI_API_KEY`, `SEARXNG_URL` and the others; all optional. */
export const config: Config.Config<Settings> = Config.all({
  contact: optional(Environment.contact),
  wikipedia: Config.all({
    baseUrl: optional(Environment.wikipediaBaseUrl),
    language: optional(Environment.wikipediaLanguage)
  }),
  arxiv: Config.all({ baseUrl: optional(Environment.arxivBaseUrl) }),
  openalex: Config.all({
    baseUrl: optional(Environment.openalexBaseUrl),
    email: optional(Environment.openalexEmail),
    apiKey: optionalSecret(Environment.openalexApiKey)
  }),
  pubmed: Config.all({
    baseUrl: optional(Environment.pubmedBaseUrl),
    apiKey: optionalSecret(Environment.ncbiApiKey)
  }),
  searxng: Config.all({ url: optional(Environment.searxngUrl) })
})

/** The settings from a plain environment map (`process.env`). */
export const settingsFrom = (env: Readonly<Record<string, string | undefined>>): Settings => {
  const entries = Object.entries(env).flatMap(([key, value]) =>
    value === undefined || value.trim() === "" ? [] : [[key, value.trim()] as const]
  )
  return Effect.runSync(Effect.orDie(Effect.withConfigProvider(config, ConfigProvider.fromMap(new Map(entries)))))
}

/** No backend configured: every one at its public API, SearXNG absent. */
export const emptySettings: Settings = settingsFrom({})

/**
 * The default set: SearXNG when an instance is named, then Wikipedia, and OpenAlex when `OPENALEX_API_KEY` is set (since
 * February 2026 a client without a key has a daily allowance of about ten searches, not one run's worth).
 */
export const defaultSet = (settings: Settings): ReadonlyArray<Backend> =>
  KeylessBackends.defaultSet.filter(
    (name) =>
      (name !== "searxng" || settings.searxng.url !== undefined) &&
      (name !== "openalex" || settings.openalex.apiKey !== undefined)
  )
