/**
 * The account of one run: calls, tokens and cost per role. The `ModelRouter` records every call into the ledger in
 * context, so that concurrent runs sharing one router keep separate accounts.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Usage from "./Usage.js"

/** A run's account. */
export interface Service {
  readonly record: (role: Usage.Role, usage: Usage.Usage, costUsd: number) => Effect.Effect<void>
  /** `record` as a plain call, for a caller already in a step of its own (the router, as a call ends). */
  readonly unsafeRecord: (role: Usage.Role, usage: Usage.Usage, costUsd: number) => void
  /** What each role has spent so far, roles that spent nothing left out. */
  readonly snapshot: Effect.Effect<ReadonlyArray<Usage.RoleUsage>>
}

/**
 * What each role has spent, from what an earlier part of the run spent (after a resume). The accounts are a variable
 * read and replaced in one synchronous step: as atomic as a `Ref`, and reachable by a plain call.
 */
const account = (initial: ReadonlyArray<Usage.RoleUsage>): Effect.Effect<Service> =>
  Effect.sync(() => {
    let accounts: ReadonlyMap<Usage.Role, Usage.RoleUsage> = new Map(initial.map((r) => [r.role, r] as const))
    const unsafeRecord = (role: Usage.Role, usage: Usage.Usage, costUsd: number): void => {
      const next = new Map(accounts)
      next.set(role, Usage.addToRole(accounts.get(role) ?? Usage.emptyRoleUsage(role), usage, costUsd))
      accounts = next
    }
    return {
      record: (role, usage, costUsd) => Effect.sync(() => unsafeRecord(role, usage, costUsd)),
      unsafeRecord,
      snapshot: Effect.sync(() =>
        Usage.roles.flatMap((role) => {
          const account = accounts.get(role)
          return account === undefined ? [] : [account]
        })
      )
    }
  })

/** The ledger of the current run: `UsageLedger.Default()` for an empty one. */
export class UsageLedger extends Effect.Service<UsageLedger>()("@deep-research/core/UsageLedger", {
  effect: (initial: ReadonlyArray<Usage.RoleUsage> = []) => account(initial)
}) {}

/** A new, empty ledger, optionally starting from what an earlier part of the run spent (after a resume). */
export const make = (initial: ReadonlyArray<Usage.RoleUsage> = []): Effect.Effect<UsageLedger> =>
  Effect.map(account(initial), UsageLedger.make)

/** A fresh ledger. */
export const layer: Layer.Layer<UsageLedger> = UsageLedger.Default()

/** Totals over roles. */
export const totals = (usage: ReadonlyArray<Usage.RoleUsage>): { readonly tokens: number; readonly costUsd: number } =>
  usage.reduce(
    (acc, r) => ({ tokens: acc.tokens + r.inputTokens + r.outputTokens, costUsd: acc.costUsd + r.costUsd }),
    { tokens: 0, costUsd: 0 }
  )

/** What was spent between two snapshots, per role. */
export const difference = (
  after: ReadonlyArray<Usage.RoleUsage>,
  before: ReadonlyArray<Usage.RoleUsage>
): ReadonlyArray<Usage.RoleUsage> =>
  after.flatMap((a) => {
    const b = before.find((r) => r.role === a.role)
    if (b === undefined) return [a]
    if (a.calls === b.calls) return []
    return [
      new Usage.RoleUsage({
        role: a.role,
        calls: a.calls - b.calls,
        inputTokens: a.inputTokens - b.inputTokens,
        outputTokens: a.outputTokens - b.outputTokens,
        cachedInputTokens: a.cachedInputTokens - b.cachedInputTokens,
        reasoningTokens: a.reasoningTokens - b.reasoningTokens,
        costUsd: a.costUsd - b.costUsd
      })
    ]
  })
