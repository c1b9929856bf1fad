/**
 * Reading stored sessions of any version: every stored format since the pre-release one is migrated, step by step,
 * to the current `Session` Schema. Migrations work on the JSON form, before the current Schema sees it.
 */
import * as Session from "@deep-research/core/Session"
import * as Usage from "@deep-research/core/Usage"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as ParseResult from "effect/ParseResult"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"

/** Why a stored session could not be read back. */
export class UnreadableSession extends Data.TaggedError("UnreadableSession")<{ readonly reason: string }> {}

// =============================================================================
// Version 0: the pre-release format
// =============================================================================

const RoleUsageJson = Schema.encodedSchema(Usage.RoleUsage)

/**
 * The pre-release format (version 0): no `version` field, statuses `done` and `error` where version 1 says
 * `completed` and `failed`, no `usage` (what each role spent was only kept per phase, in `metrics`) and no
 * `briefFallback`. Every other field has the shape it has in version 1.
 */
export const SessionV0 = Schema.Struct(
  {
    id: Schema.String,
    status: Schema.Literal("running", "awaiting_clarification", "done", "error", "cancelled"),
    metrics: Schema.Array(
      Schema.Struct({ roles: Schema.Array(RoleUsageJson) }, { key: Schema.String, value: Schema.Unknown })
    )
  },
  { key: Schema.String, value: Schema.Unknown }
)

const statusV0ToV1 = {
  running: "running",
  awaiting_clarification: "awaiting_clarification",
  done: "completed",
  error: "failed",
  cancelled: "cancelled"
} as const

type RoleUsageJson = typeof RoleUsageJson.Type

/** The session's usage per role, summed over its phases, in the order roles first appear. */
const usageFromMetrics = (metrics: typeof SessionV0.Type.metrics): ReadonlyArray<RoleUsageJson> => {
  const byRole = new Map<string, RoleUsageJson>()
  for (const phase of metrics) {
    for (const usage of phase.roles) {
      const sum = byRole.get(usage.role)
      byRole.set(
        usage.role,
        sum === undefined
          ? usage
          : {
              role: usage.role,
              calls: sum.calls + usage.calls,
              inputTokens: sum.inputTokens + usage.inputTokens,
              outputTokens: sum.outputTokens + usage.outputTokens,
              cachedInputTokens: sum.cachedInputTokens + usage.cachedInputTokens,
              reasoningTokens: sum.reasoningTokens + usage.reasoningTokens,
              costUsd: sum.costUsd + usage.costUsd
            }
      )
    }
  }
  return [...byRole.values()]
}

const fromV0 = (stored: unknown): Effect.Effect<unknown, ParseResult.ParseError> =>
  Effect.map(Schema.decodeUnknown(SessionV0)(stored), (v0) => ({
    ...v0,
    version: 1,
    status: statusV0ToV1[v0.status],
    briefFallback: false,
    usage: usageFromMetrics(v0.metrics)
  }))

// =============================================================================
// Reading
// =============================================================================

/** Each migration turns the JSON form of its version into the JSON form of the next one. */
const migrations: ReadonlyArray<(stored: unknown) => Effect.Effect<unknown, ParseResult.ParseError>> = [fromV0]

/** The format version of a stored session: its `version` field, or 0 for the pre-release format that had none. */
export const versionOf = (stored: unknown): number | undefined => {
  if (!Predicate.isRecord(stored)) return undefined
  if (!("version" in stored)) return 0
  const version = stored.version
  return typeof version === "number" && Number.isInteger(version) && version >= 0 ? version : undefined
}

const describe = (error: ParseResult.ParseError): string => {
  const text = ParseResult.TreeFormatter.formatErrorSync(error)
  return text.length > 1_000 ? `${text.slice(0, 1_000)}...` : text
}

/** Migrates the JSON form of a stored session of any known version to the current one and decodes it. */
export const decodeStored = (stored: unknown): Effect.Effect<Session.Session, UnreadableSession> =>
  Effect.gen(function* () {
    const version = versionOf(stored)
    if (version === undefined) {
      return yield* new UnreadableSession({ reason: "not a session: no object with a numeric version" })
    }
    if (version > Session.currentVersion) {
      return yield* new UnreadableSession({
        reason: `written by a newer deep-research (format version ${version}; this one reads up to ${Session.currentVersion})`
      })
    }
    let current = stored
    for (let from = version; from < Session.currentVersion; from++) {
      const migrate = migrations[from]
      if (migrate === undefined) {
        return yield* new UnreadableSession({ reason: `no migration from format version ${from}` })
      }
      current = yield* Effect.mapError(
        migrate(current),
        (error) => new UnreadableSession({ reason: `cannot migrate from format version ${from}: ${describe(error)}` })
      )
    }
    return yield* Effect.mapError(
      Schema.decodeUnknown(Session.Session)(current),
      (error) => new UnreadableSession({ reason: describe(error) })
    )
  })
