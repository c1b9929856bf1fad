/**
 * The session of a running research: held in one place, changed only through `update`, and saved to the
 * `SessionStore` on every change, so that a run killed at any moment resumes from its last checkpoint. Every save
 * also stamps what the run has spent (per role, and for the phase in progress).
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as ParseResult from "effect/ParseResult"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import * as Struct from "effect/Struct"
import type { ResearchInvalidInput } from "../Errors.js"
import * as ResearchEvents from "../ResearchEvents.js"
import { Session } from "../Session.js"
import * as Permits from "../internal/resilience/permits.js"
import { SessionStore } from "../SessionStore.js"
import * as Telemetry from "../Telemetry.js"
import * as Usage from "../Usage.js"
import type * as UsageLedger from "../UsageLedger.js"
import { difference, totals } from "../UsageLedger.js"

/** The running session. */
export interface Handle {
  readonly get: Effect.Effect<Session>
  /**
   * Changes the session and saves it; changes are applied one at a time, in order. The `Checkpointed` event says
   * `label` (or what it gives for the saved session) once the save is done.
   */
  readonly update: (
    label: string | ((saved: Session) => string),
    change: (session: Session) => Session
  ) => Effect.Effect<Session, ResearchInvalidInput>
  /**
   * Runs a phase: publishes its start and end, keeps its metrics (added to those of an earlier, interrupted run of
   * the same phase) and marks it completed when the body succeeds. `record` writes the phase's result into the
   * session in the same checkpoint as the completion mark (one save where the result and the mark would be two).
   */
  readonly phase: <A, E, R>(
    phase: Usage.Phase,
    body: Effect.Effect<A, E, R>,
    record?: (result: A, session: Session) => Session
  ) => Effect.Effect<A, E | ResearchInvalidInput, R>
  /** Wall-clock milliseconds spent in `phase`, over all runs of the session, up to now. */
  readonly elapsedIn: (phase: Usage.Phase) => Effect.Effect<number>
}

interface Running {
  readonly phase: Usage.Phase
  readonly startedAt: number
  readonly usageAtStart: ReadonlyArray<Usage.RoleUsage>
  /** What earlier runs of the session recorded for this phase. */
  readonly base: Usage.PhaseMetrics | undefined
}

/** The per-role sum of two accounts. */
export const addRoles = (
  a: ReadonlyArray<Usage.RoleUsage>,
  b: ReadonlyArray<Usage.RoleUsage>
): ReadonlyArray<Usage.RoleUsage> =>
  Usage.roles.flatMap((role) => {
    const x = a.find((r) => r.role === role)
    const y = b.find((r) => r.role === role)
    if (x === undefined) return y === undefined ? [] : [y]
    if (y === undefined) return [x]
    return [
      new Usage.RoleUsage(
        {
          role,
          calls: x.calls + y.calls,
          inputTokens: x.inputTokens + y.inputTokens,
          outputTokens: x.outputTokens + y.outputTokens,
          cachedInputTokens: x.cachedInputTokens + y.cachedInputTokens,
          reasoningTokens: x.reasoningTokens + y.reasoningTokens,
          costUsd: x.costUsd + y.costUsd
        },
        true
      )
    ]
  })

type SessionFields = Partial<ConstructorParameters<typeof Session>[0]>

// Validators of the fields a patch changes, by the set of their names (a handful of call sites, so a handful).
const fieldValidators = new Map<string, (fields: SessionFields) => unknown>()

const validateFields = (fields: SessionFields): void => {
  const names = Object.keys(fields)
    .filter((name): name is keyof typeof Session.fields => name in Session.fields)
    .sort()
  const key = names.join(",")
  let validate = fieldValidators.get(key)
  if (validate === undefined) {
    validate = ParseResult.validateSync(Schema.Struct(Struct.pick(Session.fields, ...names)))
    fieldValidators.set(key, validate)
  }
  validate(fields)
}

/**
 * A copy of the session with some fields changed. Only the changed fields are validated: the others come from a
 * session that was validated when it was made, and re-validating all of them (every round and source) on every
 * checkpoint was a large share of a run's CPU. The session has no rule across fields, so this accepts and refuses
 * exactly what validating the whole session would.
 */
export const patch = (session: Session, fields: SessionFields): Session => {
  validateFields(fields)
  return new Session({ ...session, ...fields }, true)
}

// =============================================================================
// The running session
// =============================================================================

/** What the handle's functions share: the session as it stands, and what each change needs. */
interface Holder {
  /** The session, changed one change at a time, in the order the changes come. */
  current: Session
  readonly changes: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  readonly running: Ref.Ref<Running | undefined>
  readonly store: SessionStore["Type"]
  readonly ledger: UsageLedger.Service
}

// Every checkpoint stamps the account, from values of the types the classes hold: made without validating them
// again, as a class of classes is costly to validate (BENCHMARKS.md, "Home-made parts").
const metricsOf = (current: Running, now: number, usage: ReadonlyArray<Usage.RoleUsage>): Usage.PhaseMetrics =>
  new Usage.PhaseMetrics(
    {
      phase: current.phase,
      startedAt: current.base?.startedAt ?? current.startedAt,
      durationMillis: (current.base?.durationMillis ?? 0) + Math.max(0, now - current.startedAt),
      roles: addRoles(current.base?.roles ?? [], difference(usage, current.usageAtStart))
    },
    true
  )

const stamp = (holder: Holder, session: Session): Effect.Effect<Session> =>
  Effect.gen(function* () {
    const now = yield* Clock.currentTimeMillis
    const usage = yield* holder.ledger.snapshot
    const current = yield* Ref.get(holder.running)
    const metrics =
      current === undefined
        ? session.metrics
        : [...session.metrics.filter((m) => m.phase !== current.phase), metricsOf(current, now, usage)].sort(
            (a, b) => Usage.Phase.literals.indexOf(a.phase) - Usage.Phase.literals.indexOf(b.phase)
          )
    return new Session({ ...session, updatedAt: now, usage, metrics }, true)
  })

const update = (holder: Holder, label: string | ((saved: Session) => string), change: (session: Session) => Session) =>
  Effect.tap(
    // Whole or not at all: interrupted between the store's write and the state's update, the state would lag
    // behind the stored checkpoint, and the next save (the "cancelled" one) would write the older state over it.
    Effect.uninterruptible(
      holder.changes(
        Effect.flatMap(
          Effect.suspend(() => stamp(holder, change(holder.current))),
          (next) =>
            Effect.map(holder.store.save(next), () => {
              holder.current = next
              return next
            })
        )
      )
    ),
    (session) => {
      const spent = totals(session.usage)
      return Effect.zipRight(
        ResearchEvents.publish({ _tag: "Checkpointed", label: typeof label === "string" ? label : label(session) }),
        ResearchEvents.publish({ _tag: "UsageUpdated", tokens: spent.tokens, costUsd: spent.costUsd })
      )
    }
  )

const runPhase = <A, E, R>(
  holder: Holder,
  name: Usage.Phase,
  body: Effect.Effect<A, E, R>,
  record?: (result: A, session: Session) => Session
) =>
  Effect.gen(function* () {
    const base = holder.current.metrics.find((m) => m.phase === name)
    const startedAt = yield* Clock.currentTimeMillis
    const usageAtStart = yield* holder.ledger.snapshot
    yield* Ref.set(holder.running, { phase: name, startedAt, usageAtStart, base })
    yield* ResearchEvents.publish({ _tag: "PhaseStarted", phase: name })
    const result = yield* body
    const done = yield* update(holder, `${name} completed`, (s) => {
      const recorded = record === undefined ? s : record(result, s)
      return patch(recorded, { phasesCompleted: [...recorded.phasesCompleted.filter((p) => p !== name), name] })
    })
    yield* Ref.set(holder.running, undefined)
    const metrics = done.metrics.find((m) => m.phase === name)
    yield* ResearchEvents.publish({
      _tag: "PhaseCompleted",
      phase: name,
      durationMillis: metrics?.durationMillis ?? 0,
      calls: metrics?.calls ?? 0,
      tokens: metrics?.totalTokens ?? 0,
      costUsd: metrics?.costUsd ?? 0
    })
    return result
  }).pipe(Effect.withSpan(`phase ${name}`, { attributes: { [Telemetry.attributes.phase]: name } }))

const elapsedIn = (holder: Holder, name: Usage.Phase) =>
  Effect.gen(function* () {
    const current = yield* Ref.get(holder.running)
    const now = yield* Clock.currentTimeMillis
    if (current !== undefined && current.phase === name) {
      return (current.base?.durationMillis ?? 0) + Math.max(0, now - current.startedAt)
    }
    return holder.current.metrics.find((m) => m.phase === name)?.durationMillis ?? 0
  })

/** Holds `initial` as the running session; `ledger` is the run's account. */
export const make = (initial: Session, ledger: UsageLedger.Service): Effect.Effect<Handle, never, SessionStore> =>
  Effect.gen(function* () {
    const holder: Holder = {
      current: initial,
      // One permit handed from change to change, first come first served: Effect's semaphore lets a newcomer take a
      // permit freed before the waiters wake, and changes must apply in the order they come. The changes run
      // uninterruptibly, so waiting for the permit is not interruptible either.
      changes: Permits.unsafeMake(1).withPermit,
      running: yield* Ref.make<Running | undefined>(undefined),
      store: yield* SessionStore,
      ledger
    }
    const handle: Handle = {
      get: Effect.sync(() => holder.current),
      update: (label, change) => update(holder, label, change),
      phase: (name, body, record) => runPhase(holder, name, body, record),
      elapsedIn: (name) => elapsedIn(holder, name)
    }
    return handle
  })
