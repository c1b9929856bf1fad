/**
 * Token usage and cost, per call, per role and per phase.
 */
import * as Schema from "effect/Schema"
import * as Defaults from "./Defaults.js"

/** Tokens one model call used. `cachedInputTokens` and `reasoningTokens` are parts of input and output. */
export class Usage extends Schema.Class<Usage>("@deep-research/core/Usage")({
  inputTokens: Schema.Number,
  outputTokens: Schema.Number,
  cachedInputTokens: Schema.optionalWith(Schema.Number, { default: () => 0 }),
  reasoningTokens: Schema.optionalWith(Schema.Number, { default: () => 0 })
}) {
  get totalTokens(): number {
    return this.inputTokens + this.outputTokens
  }
}

/** No tokens at all. */
export const empty: Usage = new Usage({ inputTokens: 0, outputTokens: 0, cachedInputTokens: 0, reasoningTokens: 0 })

/** The sum of two usages (sums of typed numbers: the class does not validate them again, at every model call). */
export const add = (self: Usage, that: Usage): Usage =>
  new Usage(
    {
      inputTokens: self.inputTokens + that.inputTokens,
      outputTokens: self.outputTokens + that.outputTokens,
      cachedInputTokens: self.cachedInputTokens + that.cachedInputTokens,
      reasoningTokens: self.reasoningTokens + that.reasoningTokens
    },
    true
  )

/** The roles a language model plays in the pipeline. */
export const Role = Schema.Literal(...Defaults.roles)
export type Role = typeof Role.Type

/** Every role, in pipeline order. */
export const roles: ReadonlyArray<Role> = Role.literals

/** What one role spent: calls, tokens and cost in USD. */
export class RoleUsage extends Schema.Class<RoleUsage>("@deep-research/core/RoleUsage")({
  role: Role,
  calls: Schema.Number,
  inputTokens: Schema.Number,
  outputTokens: Schema.Number,
  cachedInputTokens: Schema.Number,
  reasoningTokens: Schema.Number,
  costUsd: Schema.Number
}) {}

/** A role that has spent nothing yet (its fields typed: the class does not validate them again). */
export const emptyRoleUsage = (role: Role): RoleUsage =>
  new RoleUsage(
    {
      role,
      calls: 0,
      inputTokens: 0,
      outputTokens: 0,
      cachedInputTokens: 0,
      reasoningTokens: 0,
      costUsd: 0
    },
    true
  )

/**
 * Adds one call's usage and cost to a role's account. Sums of typed numbers: the class does not validate them again
 * (at every model call).
 */
export const addToRole = (self: RoleUsage, usage: Usage, costUsd: number): RoleUsage =>
  new RoleUsage(
    {
      role: self.role,
      calls: self.calls + 1,
      inputTokens: self.inputTokens + usage.inputTokens,
      outputTokens: self.outputTokens + usage.outputTokens,
      cachedInputTokens: self.cachedInputTokens + usage.cachedInputTokens,
      reasoningTokens: self.reasoningTokens + usage.reasoningTokens,
      costUsd: self.costUsd + costUsd
    },
    true
  )

/** The phases of a run, and `answer`: a follow-up question answered from a finished session's sources. */
export const Phase = Schema.Literal("clarification", "brief", "supervision", "synthesis", "verification", "answer")
export type Phase = typeof Phase.Type

/** What one phase took: wall time, and what each role spent during it. */
export class PhaseMetrics extends Schema.Class<PhaseMetrics>("@deep-research/core/PhaseMetrics")({
  phase: Phase,
  startedAt: Schema.Number,
  durationMillis: Schema.Number,
  roles: Schema.Array(RoleUsage)
}) {
  get calls(): number {
    return this.roles.reduce((n, r) => n + r.calls, 0)
  }
  get costUsd(): number {
    return this.roles.reduce((n, r) => n + r.costUsd, 0)
  }
  get totalTokens(): number {
    return this.roles.reduce((n, r) => n + r.inputTokens + r.outputTokens, 0)
  }
}
