/**
 * A language model per role. Resolution: the role's own model, else its tier's, else the default. Every call is
 * recorded, with its cost, under its role in the `UsageLedger` of the current run, and traced as a GenAI client span.
 * Under a run's `Budget` every call is reserved before it is sent (its input counted, its output limit set to what
 * the budget grants) and settled when it ends; a call the budget cannot cover fails with `ResearchBudgetExhausted`.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Budget from "./Budget.js"
import type { ProviderError } from "./Errors.js"
import * as LanguageModel from "./LanguageModel.js"
import * as Pricing from "./Pricing.js"
import * as Resilience from "./Resilience.js"
import * as Telemetry from "./Telemetry.js"
import * as Tokens from "./Tokens.js"
import { UsageLedger } from "./UsageLedger.js"
import type { Role } from "./Usage.js"

/** Model tiers: the strongest models where judgement matters most, the cheapest where volume is. */
export type Tier = "frontier" | "standard" | "efficient"

/** The tier of each role. */
export const tierOf: Readonly<Record<Role, Tier>> = {
  supervisor: "frontier",
  report: "frontier",
  evaluation: "frontier",
  clarification: "standard",
  brief: "standard",
  researcher: "standard",
  compression: "standard",
  summarization: "efficient"
}

/** Which models play which roles. */
export interface Models {
  readonly default: LanguageModel.Service
  readonly tiers?: Partial<Record<Tier, LanguageModel.Service>> | undefined
  readonly roles?: Partial<Record<Role, LanguageModel.Service>> | undefined
}

/** The router. */
export interface Service {
  /** The model that plays `role`, without recording. */
  readonly resolve: (role: Role) => LanguageModel.Service
  /** The model that plays `role`; its calls are recorded under the role. */
  readonly forRole: (role: Role) => LanguageModel.Service
  /** One call in `role`, recorded. */
  readonly generate: (
    role: Role,
    request: LanguageModel.GenerateRequest
  ) => Effect.Effect<LanguageModel.Completion, ProviderError>
  /**
   * The policy the router's models were protected with, when one was in context as it was made: the pipeline puts
   * the search provider and the extractor under it too, where no `Resilience` is in context of the run.
   */
  readonly resilience?: Resilience.Resilience | undefined
}

/** The model for a role under the resolution chain. */
export const resolveModel = (models: Models, role: Role): LanguageModel.Service =>
  models.roles?.[role] ?? models.tiers?.[tierOf[role]] ?? models.default

const nothing: Budget.Spent = { tokens: 0, costUsd: 0 }

const router = (models: Models, table: Pricing.PriceTable, resilience?: Resilience.Resilience): Service => {
  const recorded = new Map<Role, LanguageModel.Service>()
  const costOf = (completion: LanguageModel.Completion) => Pricing.costOf(table, completion.model, completion.usage)
  const forRole = (role: Role): LanguageModel.Service => {
    const existing = recorded.get(role)
    if (existing !== undefined) return existing
    const model = resolveModel(models, role)
    // Recorded in the step that ends the call's span, into the ledger of the caller's context.
    const record = (completion: LanguageModel.Completion, costUsd: number, context: Context.Context<never>) => {
      const ledger = Context.getOption(context, UsageLedger)
      if (Option.isSome(ledger)) ledger.value.unsafeRecord(role, completion.usage, costUsd)
    }
    const call = (request: LanguageModel.GenerateRequest) =>
      Telemetry.modelCall(
        { role, provider: model.provider, model: model.model, request },
        model.generate(request),
        costOf,
        record
      )
    const wrapped: LanguageModel.Service = {
      ...model,
      generate: (request) =>
        Effect.flatMap(Budget.current, (budget) => (budget.limited ? budgeted(budget, request) : call(request)))
    }
    // Reserved before it is sent, settled however it ends (a call interrupted while it waits holds nothing).
    const budgeted = (budget: Budget.Service, request: LanguageModel.GenerateRequest) =>
      Effect.uninterruptibleMask((restore) =>
        Effect.gen(function* () {
          const inputTokens = yield* restore(Tokens.countRequestTokens(model, request))
          const reservation = yield* restore(
            budget.reserve({
              role,
              model: model.model,
              inputTokens,
              outputTokens: request.maxOutputTokens ?? model.maxOutputTokens
            })
          )
          return yield* restore(call({ ...request, maxOutputTokens: reservation.outputTokens })).pipe(
            Effect.onExit((exit) =>
              budget.settle(
                reservation,
                Exit.isSuccess(exit) ? Budget.spentBy(exit.value.usage, costOf(exit.value)) : nothing
              )
            )
          )
        })
      )
    recorded.set(role, wrapped)
    return wrapped
  }
  return {
    resolve: (role) => resolveModel(models, role),
    forRole,
    generate: (role, request) => forRole(role).generate(request),
    resilience
  }
}

/** The same assignment of roles with every distinct model passed through `f` once. */
export const mapModels = (models: Models, f: (model: LanguageModel.Service) => LanguageModel.Service): Models => {
  const mapped = new Map<LanguageModel.Service, LanguageModel.Service>()
  const map = (model: LanguageModel.Service): LanguageModel.Service => {
    const existing = mapped.get(model)
    if (existing !== undefined) return existing
    const result = f(model)
    mapped.set(model, result)
    return result
  }
  const mapRecord = (
    record: { readonly [key: string]: LanguageModel.Service | undefined } | undefined
  ): { [key: string]: LanguageModel.Service } | undefined =>
    record === undefined
      ? undefined
      : Object.fromEntries(
          Object.entries<LanguageModel.Service | undefined>(record).flatMap(([key, model]) =>
            model === undefined ? [] : [[key, map(model)]]
          )
        )
  return { default: map(models.default), tiers: mapRecord(models.tiers), roles: mapRecord(models.roles) }
}

/**
 * The router in context: `ModelRouter.Default(models)`, priced with the `Pricing` table in context or the shipped one.
 * When a `Resilience` policy is in context, every model's calls go through it, and the pipeline's search and
 * extraction calls too (see `Pipeline`).
 */
export class ModelRouter extends Effect.Service<ModelRouter>()("@deep-research/core/ModelRouter", {
  effect: (models: Models) =>
    Effect.gen(function* () {
      const table = yield* Effect.serviceOption(Pricing.Pricing)
      const resilience = yield* Effect.serviceOption(Resilience.Resilience)
      const protectedModels = Option.isSome(resilience) ? mapModels(models, resilience.value.wrapLanguageModel) : models
      return router(
        protectedModels,
        Option.getOrElse(table, () => Pricing.defaultTable),
        Option.getOrUndefined(resilience)
      )
    })
}) {}

/** Builds a router over the given models, pricing calls with `table`. */
export const make = (models: Models, table: Pricing.PriceTable = Pricing.defaultTable): ModelRouter =>
  ModelRouter.make(router(models, table))

/** A router over the given models (see `ModelRouter`). */
export const layer = (models: Models): Layer.Layer<ModelRouter> => ModelRouter.Default(models)

/** The model for a role, through the router in context. */
export const forRole = (role: Role): Effect.Effect<LanguageModel.Service, never, ModelRouter> =>
  Effect.map(ModelRouter, (router) => router.forRole(role))

/** One call in a role, through the router in context. */
export const generate = (
  role: Role,
  request: LanguageModel.GenerateRequest
): Effect.Effect<LanguageModel.Completion, ProviderError, ModelRouter> =>
  Effect.flatMap(ModelRouter, (router) => router.generate(role, request))
