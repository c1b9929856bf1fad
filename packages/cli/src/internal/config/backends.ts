/**
 * Which models and search backends a configuration uses: the ones named (flags, environment, config file), else the
 * defaults of the keys in the environment (with no search key and no native search, the keyless set); each checked
 * against the keys it needs. Part of `CliConfig.resolve`.
 */
import type { Usage } from "@deep-research/core"
import * as Variables from "@deep-research/providers/Environment"
import * as Keyless from "@deep-research/providers/Keyless"
import * as Data from "effect/Data"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import type { Credentials } from "./credentials.js"

/** The search backends the CLI can wire. */
export const SearchBackend = Schema.Literal(
  "tavily",
  "exa",
  "perplexity",
  "semantic-scholar",
  "openai-native",
  "anthropic-native",
  "local",
  ...Keyless.Backend.literals
)
export type SearchBackend = typeof SearchBackend.Type

/** A configuration problem the user must fix: the CLI exits with code 2 and this message. */
export class ConfigError extends Data.TaggedError("ConfigError")<{ readonly message: string }> {}

/**
 * What the configuration is for: research needs models and search; evaluation only models; a submission (a client
 * that sends research to a cluster's workers and follows it) neither, since the workers bring their own: a model it
 * names is checked (it judges reports), the keys' defaults are used, and without any the default is empty.
 */
export type Purpose = "research" | "evaluation" | "submission"

/** `provider:model` specs: the default model, and overrides per role and per tier. */
export interface Models {
  readonly default: string
  readonly roles: Partial<Record<Usage.Role, string>>
  readonly tiers: Partial<Record<"frontier" | "standard" | "efficient", string>>
}

const parseSearch = (
  value: string | ReadonlyArray<string>,
  origin: string
): Either.Either<ReadonlyArray<SearchBackend>, ConfigError> => {
  const names = (typeof value === "string" ? value.split(",") : value).map((s) => s.trim()).filter((s) => s !== "")
  const known = SearchBackend.literals
  const unknown = names.filter((name) => !(known as ReadonlyArray<string>).includes(name))
  if (unknown.length > 0) {
    return Either.left(
      new ConfigError({
        message: `Unknown search backend in ${origin}: ${unknown.join(", ")}. Known: ${known.join(", ")}`
      })
    )
  }
  return Either.right(names.filter((name): name is SearchBackend => (known as ReadonlyArray<string>).includes(name)))
}

const modelProvider = (spec: string): string => spec.split(":")[0] ?? ""

const noModelMessage =
  `No language model is configured. Set ${Variables.openaiApiKey} or ${Variables.anthropicApiKey}, or point ` +
  `${Variables.openaiBaseUrl} at an ` +
  "OpenAI-compatible server (Ollama, vLLM, LM Studio) and name its model with --model openai:<name>. " +
  "To try deep-research without any key, run it with --simulate."

const checkModelCredentials = (spec: string, credentials: Credentials): ConfigError | undefined => {
  const provider = modelProvider(spec)
  if (provider === "openai" && credentials.openaiApiKey === undefined && credentials.openaiBaseUrl === undefined) {
    return new ConfigError({
      message: `The model ${spec} needs ${Variables.openaiApiKey} (or ${Variables.openaiBaseUrl} for an OpenAI-compatible server).`
    })
  }
  if (provider === "anthropic" && credentials.anthropicApiKey === undefined) {
    return new ConfigError({ message: `The model ${spec} needs ${Variables.anthropicApiKey}.` })
  }
  return undefined
}

const checkSearchCredentials = (
  backend: SearchBackend,
  credentials: Credentials,
  corpus: string | undefined
): ConfigError | undefined => {
  switch (backend) {
    case "tavily":
      return credentials.tavilyApiKey === undefined && credentials.tavilyBaseUrl === undefined
        ? new ConfigError({ message: `Tavily search needs ${Variables.tavilyApiKey}.` })
        : undefined
    case "exa":
      return credentials.exaApiKey === undefined
        ? new ConfigError({ message: `Exa search needs ${Variables.exaApiKey}.` })
        : undefined
    case "perplexity":
      return credentials.perplexityApiKey === undefined
        ? new ConfigError({ message: `Perplexity search needs ${Variables.perplexityApiKey}.` })
        : undefined
    case "openai-native":
      return credentials.openaiApiKey === undefined
        ? new ConfigError({ message: `OpenAI web search needs ${Variables.openaiApiKey}.` })
        : undefined
    case "anthropic-native":
      return credentials.anthropicApiKey === undefined
        ? new ConfigError({ message: `Anthropic web search needs ${Variables.anthropicApiKey}.` })
        : undefined
    case "local":
      return corpus === undefined ? new ConfigError({ message: "Local search needs --corpus DIR." }) : undefined
    case "searxng":
      return credentials.keyless.searxng.url === undefined
        ? new ConfigError({
            message: `SearXNG search needs ${Variables.searxngUrl}: the address of your own instance (with json in its search.formats).`
          })
        : undefined
    case "semantic-scholar":
    case "wikipedia":
    case "openalex":
    case "arxiv":
    case "pubmed":
      return undefined
  }
}

const defaultModels = (
  credentials: Credentials
):
  | { readonly default: string; readonly tiers: Partial<Record<"frontier" | "standard" | "efficient", string>> }
  | undefined => {
  if (credentials.openaiApiKey !== undefined && credentials.openaiBaseUrl === undefined) {
    return { default: "openai:gpt-4.1", tiers: { efficient: "openai:gpt-4.1-mini" } }
  }
  if (credentials.anthropicApiKey !== undefined) {
    return { default: "anthropic:claude-sonnet-4-6", tiers: { efficient: "anthropic:claude-haiku-4-5" } }
  }
  return undefined
}

/**
 * The search of a run that names none: Tavily with its key, else the model vendor's native search, else (a local or
 * other OpenAI-compatible server, no key at all) the keyless set.
 */
export const defaultSearch = (credentials: Credentials): ReadonlyArray<SearchBackend> => {
  if (credentials.tavilyApiKey !== undefined || credentials.tavilyBaseUrl !== undefined) return ["tavily"]
  if (credentials.openaiApiKey !== undefined && credentials.openaiBaseUrl === undefined) return ["openai-native"]
  if (credentials.anthropicApiKey !== undefined) return ["anthropic-native"]
  return Keyless.defaultSet(credentials.keyless)
}

/** What decides the models and search, already read from flags, environment and the config file in that order. */
export interface Named {
  readonly purpose: Purpose
  readonly simulate: boolean
  readonly credentials: Credentials
  readonly corpus: string | undefined
  /** The search setting (a comma-separated list, or the file's array). */
  readonly search: string | ReadonlyArray<string> | undefined
  /** The default model's spec. */
  readonly model: string | undefined
  readonly roleModels: Partial<Record<Usage.Role, string>>
}

/** The model a simulated run uses when none is named (the emulator answers for every model). */
export const simulatedModel = "openai:simulated-gpt"

/** The models and search of a configuration, or what is missing for them. */
export const resolve = (
  named: Named
): Either.Either<
  {
    readonly models: Models
    readonly search: ReadonlyArray<SearchBackend>
    readonly searchDefaulted: boolean
  },
  ConfigError
> =>
  Either.gen(function* () {
    const { corpus, credentials, purpose, roleModels, simulate } = named
    const explicitModel = named.model
    let search: ReadonlyArray<SearchBackend> =
      named.search === undefined ? [] : yield* parseSearch(named.search, "the search setting")
    if (corpus !== undefined && !search.includes("local")) search = [...search, "local"]

    let models: Models
    let searchDefaulted = false
    if (simulate) {
      models = { default: explicitModel ?? simulatedModel, roles: roleModels, tiers: {} }
      if (search.length === 0) search = ["tavily"]
    } else {
      const defaults = defaultModels(credentials)
      const defaultSpec = explicitModel ?? defaults?.default
      if (defaultSpec === undefined && purpose !== "submission") {
        return yield* Either.left(new ConfigError({ message: noModelMessage }))
      }
      models = {
        default: defaultSpec ?? "",
        roles: roleModels,
        tiers: explicitModel === undefined ? (defaults?.tiers ?? {}) : {}
      }
      for (const spec of [models.default, ...Object.values(roleModels), ...Object.values(models.tiers)]) {
        if (spec === undefined || spec === "") continue
        if (!/^[a-z][a-z0-9-]*:.+$/.test(spec)) {
          return yield* Either.left(
            new ConfigError({ message: `"${spec}" is not a model spec; write provider:model, e.g. openai:gpt-4.1` })
          )
        }
        const problem = checkModelCredentials(spec, credentials)
        if (problem !== undefined) return yield* Either.left(problem)
      }
      if (search.length === 0 && purpose === "research") {
        search = defaultSearch(credentials)
        searchDefaulted = true
      }
      // A submission's search is the workers': what it names is theirs to check.
      for (const backend of purpose === "submission" ? [] : search) {
        const problem = checkSearchCredentials(backend, credentials, corpus)
        if (problem !== undefined) return yield* Either.left(problem)
      }
    }
    // Simulated or not, local search has nothing to search without a corpus.
    if (search.includes("local") && corpus === undefined) {
      return yield* Either.left(new ConfigError({ message: "Local search needs --corpus DIR." }))
    }
    return { models, search, searchDefaulted }
  })
