/**
 * Models named as `provider:model` specs (`openai:gpt-4.1`, `anthropic:claude-sonnet-4-5`, `ollama:qwen3`), and the
 * `ModelRouter` built from a default spec plus specs per tier and per role. Each distinct model is built once and
 * shared by every role that resolves to it.
 */
import { Errors, type LanguageModel, ModelRouter, Usage } from "@deep-research/core"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as ConfigProvider from "effect/ConfigProvider"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import * as AnthropicLanguageModel from "./AnthropicLanguageModel.js"
import * as OpenAiLanguageModel from "./OpenAiLanguageModel.js"
import * as Environment from "../Environment.js"

// =============================================================================
// Specs
// =============================================================================

/** The providers a spec can name. `ollama` is an OpenAI-compatible server (Ollama's `/v1`) at a base URL. */
export const providers = ["openai", "anthropic", "ollama"] as const
export type Provider = (typeof providers)[number]

/** A parsed `provider:model` spec. */
export interface Spec {
  readonly provider: Provider
  readonly model: string
}

const isProvider = (name: string): name is Provider => providers.some((provider) => provider === name)

/**
 * Parses `provider:model`. Only the first colon separates them, so model names with tags (`ollama:qwen3:8b`) keep
 * theirs.
 */
export const parse = (spec: string): Either.Either<Spec, Errors.ResearchInvalidInput> => {
  const text = spec.trim()
  const colon = text.indexOf(":")
  if (colon <= 0 || colon === text.length - 1) {
    return Either.left(
      new Errors.ResearchInvalidInput({
        reason: `"${spec}" is not a model spec; write provider:model, e.g. openai:gpt-4.1 or anthropic:claude-sonnet-4-5`
      })
    )
  }
  const provider = text.slice(0, colon).trim().toLowerCase()
  const model = text.slice(colon + 1).trim()
  if (!isProvider(provider)) {
    return Either.left(
      new Errors.ResearchInvalidInput({
        reason: `unknown model provider "${provider}" in "${spec}"; known providers: ${providers.join(", ")}`
      })
    )
  }
  if (model === "" || /\s/.test(model)) {
    return Either.left(
      new Errors.ResearchInvalidInput({ reason: `"${spec}" has no valid model name after "${provider}:"` })
    )
  }
  return Either.right({ provider, model })
}

/** The spec's canonical text. */
export const format = (spec: Spec): string => `${spec.provider}:${spec.model}`

// =============================================================================
// Settings
// =============================================================================

/**
 * How to reach one provider. With `layerConfig` (and `makeModel`), what is left out is read from the configuration
 * (environment variables); `layer` takes these settings only.
 */
export interface ProviderSettings {
  /** Default: `OPENAI_API_KEY` / `ANTHROPIC_API_KEY`; Ollama needs none. */
  readonly apiKey?: Redacted.Redacted | undefined
  /** Default: `OPENAI_BASE_URL` / `ANTHROPIC_BASE_URL` / `OLLAMA_BASE_URL` (else `http://localhost:11434/v1`). */
  readonly baseUrl?: string | undefined
  readonly headers?: Readonly<Record<string, string>> | undefined
  readonly stream?: boolean | undefined
  readonly timeout?: Duration.DurationInput | undefined
  /** OpenAI and Ollama: what the server can do (a local model may lack tool calling or JSON schemas). */
  readonly capabilities?: Partial<LanguageModel.Capabilities> | undefined
  /** Anthropic: `max_tokens` when neither the request nor the role gives one. */
  readonly maxTokens?: number | undefined
}

/** Which model plays which role. */
export interface RouterSpecs {
  readonly default: string
  readonly tiers?: Partial<Record<ModelRouter.Tier, string>> | undefined
  readonly roles?: Partial<Record<Usage.Role, string>> | undefined
  /** The output limit of each role's calls when the call itself sets none (Anthropic requires one). */
  readonly maxOutputTokens?: Partial<Record<Usage.Role, number>> | undefined
  readonly providers?: Partial<Record<Provider, ProviderSettings>> | undefined
}

const defaultOllamaUrl = "http://localhost:11434/v1"

const optionalString = (name: string): Config.Config<string | undefined> =>
  Config.option(Config.nonEmptyString(name)).pipe(Config.map(Option.getOrUndefined))

const optionalRedacted = (name: string): Config.Config<Redacted.Redacted | undefined> =>
  Config.option(Config.redacted(Config.nonEmptyString(name))).pipe(Config.map(Option.getOrUndefined))

const needs = (spec: Spec, error: ConfigError.ConfigError): Errors.ResearchInvalidInput =>
  new Errors.ResearchInvalidInput({ reason: `the model ${format(spec)} cannot be configured: ${String(error)}` })

// =============================================================================
// Models
// =============================================================================

/** Builds one model, taking what the settings leave out from the configuration. */
export const makeModel = (
  spec: Spec,
  settings: ProviderSettings = {}
): Effect.Effect<LanguageModel.Service, Errors.ResearchInvalidInput> => {
  const common = {
    model: spec.model,
    ...(settings.headers !== undefined ? { headers: settings.headers } : {}),
    ...(settings.stream !== undefined ? { stream: settings.stream } : {}),
    ...(settings.timeout !== undefined ? { timeout: settings.timeout } : {})
  }
  switch (spec.provider) {
    case "anthropic":
      return Effect.gen(function* () {
        const apiKey = settings.apiKey ?? (yield* Config.redacted(Config.nonEmptyString(Environment.anthropicApiKey)))
        const baseUrl = settings.baseUrl ?? (yield* optionalString(Environment.anthropicBaseUrl))
        return yield* AnthropicLanguageModel.make({
          ...common,
          apiKey,
          ...(baseUrl !== undefined ? { baseUrl } : {}),
          ...(settings.maxTokens !== undefined ? { maxTokens: settings.maxTokens } : {})
        })
      }).pipe(Effect.mapError((error) => needs(spec, error)))
    case "openai":
      return Effect.gen(function* () {
        // Each field the settings leave out comes from the configuration, which needs a key or a base URL.
        const fromConfig =
          settings.apiKey !== undefined || settings.baseUrl !== undefined
            ? {
                apiKey: settings.apiKey ?? (yield* optionalRedacted(Environment.openaiApiKey)),
                baseUrl: settings.baseUrl ?? (yield* optionalString(Environment.openaiBaseUrl))
              }
            : yield* OpenAiLanguageModel.config
        return yield* OpenAiLanguageModel.make({
          ...common,
          ...(fromConfig.apiKey !== undefined ? { apiKey: fromConfig.apiKey } : {}),
          ...(fromConfig.baseUrl !== undefined ? { baseUrl: fromConfig.baseUrl } : {}),
          ...(settings.capabilities !== undefined ? { capabilities: settings.capabilities } : {})
        })
      }).pipe(Effect.mapError((error) => needs(spec, error)))
    case "ollama":
      return Effect.gen(function* () {
        const baseUrl = settings.baseUrl ?? (yield* optionalString(Environment.ollamaBaseUrl)) ?? defaultOllamaUrl
        return yield* OpenAiLanguageModel.make({
          ...common,
          provider: "ollama",
          baseUrl,
          ...(settings.apiKey !== undefined ? { apiKey: settings.apiKey } : {}),
          // Ollama's OpenAI-compatible API reads `max_tokens`; JSON schemas and tools depend on the model, so
          // structured answers are prompted (and parsed by core) unless the settings say otherwise.
          maxTokensField: "max_tokens",
          capabilities: { toolCalling: true, structuredOutput: false, webSearch: false, ...settings.capabilities }
        })
      }).pipe(Effect.mapError((error) => needs(spec, error)))
  }
}

/** A model whose calls use `maxOutputTokens` unless the call sets its own. */
export const withDefaultMaxOutputTokens = (
  model: LanguageModel.Service,
  maxOutputTokens: number
): LanguageModel.Service => ({
  ...model,
  maxOutputTokens,
  generate: (request) =>
    model.generate(request.maxOutputTokens === undefined ? { ...request, maxOutputTokens } : request)
})

const tierNames: ReadonlyArray<ModelRouter.Tier> = ["frontier", "standard", "efficient"]

/**
 * The router's models for the specs: every spec parsed (a malformed spec or an unknown provider is an
 * `ResearchInvalidInput` naming it), each distinct model built once, and roles with their own output limit given a view of
 * their model with that default.
 */
export const makeModels = (specs: RouterSpecs): Effect.Effect<ModelRouter.Models, Errors.ResearchInvalidInput> =>
  Effect.gen(function* () {
    const built = new Map<string, LanguageModel.Service>()
    const modelFor = (text: string) =>
      Effect.gen(function* () {
        const spec = yield* parse(text)
        const key = format(spec)
        const existing = built.get(key)
        if (existing !== undefined) return existing
        const model = yield* makeModel(spec, specs.providers?.[spec.provider])
        built.set(key, model)
        return model
      })
    const defaultModel = yield* modelFor(specs.default)
    const tiers: Partial<Record<ModelRouter.Tier, LanguageModel.Service>> = {}
    for (const tier of tierNames) {
      const text = specs.tiers?.[tier]
      if (text !== undefined) tiers[tier] = yield* modelFor(text)
    }
    const roles: Partial<Record<Usage.Role, LanguageModel.Service>> = {}
    for (const role of Usage.roles) {
      const text = specs.roles?.[role]
      if (text !== undefined) roles[role] = yield* modelFor(text)
    }
    const models: ModelRouter.Models = { default: defaultModel, tiers, roles }
    // One view per (model, limit), so roles that agree still share an instance.
    const limited = new Map<LanguageModel.Service, Map<number, LanguageModel.Service>>()
    for (const role of Usage.roles) {
      const limit = specs.maxOutputTokens?.[role]
      if (limit === undefined) continue
      if (!Number.isInteger(limit) || limit <= 0) {
        return yield* new Errors.ResearchInvalidInput({
          reason: `the output limit of the ${role} role must be a positive integer, got ${limit}`
        })
      }
      const model = ModelRouter.resolveModel(models, role)
      const views = limited.get(model) ?? new Map<number, LanguageModel.Service>()
      limited.set(model, views)
      const view = views.get(limit) ?? withDefaultMaxOutputTokens(model, limit)
      views.set(limit, view)
      roles[role] = view
    }
    return models
  })

// Nothing to read: the settings given are all there is.
const argumentsOnly = ConfigProvider.fromMap(new Map())

/**
 * The `ModelRouter` for the specs, each provider reached with the key and base URL its `providers` settings give and
 * nothing else (as every provider's `layer` takes them from its argument); resilience applies when a `Resilience` is
 * in context.
 */
export const layer = (specs: RouterSpecs): Layer.Layer<ModelRouter.ModelRouter, Errors.ResearchInvalidInput> =>
  Layer.unwrapEffect(Effect.map(Effect.withConfigProvider(makeModels(specs), argumentsOnly), ModelRouter.layer))

/**
 * The `ModelRouter` for the specs, what the `providers` settings leave out read from the environment (`OPENAI_API_KEY`,
 * `OPENAI_BASE_URL`, `ANTHROPIC_API_KEY`, ...: see `ProviderSettings`), as every provider's `layerConfig` reads it.
 */
export const layerConfig = (specs: RouterSpecs): Layer.Layer<ModelRouter.ModelRouter, Errors.ResearchInvalidInput> =>
  Layer.unwrapEffect(Effect.map(makeModels(specs), ModelRouter.layer))
