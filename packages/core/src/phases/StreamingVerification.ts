/**
 * The citation check while the report is written: where the report model streams its answer (`LanguageModel`'s
 * `TextProgress`), the cited sentences of each line of the report (a paragraph, a list item, a table row) are sent to
 * be checked as soon as the line is complete, so that by the time the report ends little is left to check. The checks
 * are the same `ClaimVerification` calls the verification phase makes (the summarisation role, the cited sources'
 * stored text, at most `batchSize` sentences a call, at most `concurrency` calls at once); sentences that complete
 * while a check is in flight wait for it to end and go together, so a report makes few calls. They are made on the
 * sentences as the model wrote them, whose `[n]` number the report's material (`Synthesis.material`'s sources) before
 * synthesis renumbers them. The verification phase then takes each check made of the same sentence citing the same
 * sources, its citation numbers carried over to the report's, and checks only the rest: no sentence is left unchecked
 * because it was written while the check ran, and one the synthesis changed is checked as it stands.
 *
 * Under a budget nothing is checked early: the check draws on what the report leaves, which is known only once it ends.
 */
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Deferred from "effect/Deferred"
import * as Exit from "effect/Exit"
import * as FiberId from "effect/FiberId"
import * as Budget from "../Budget.js"
import * as ClaimVerification from "../ClaimVerification.js"
import * as LanguageModel from "../LanguageModel.js"
import * as ModelRouter from "../ModelRouter.js"
import type { Source } from "../Source.js"

/** The checks made while the report was written, by sentence and the sources it cites. */
export interface Early {
  /**
   * The check begun of a claim of the finished report, its citations numbered as the report's (`sourceIdOf` gives the
   * source of each), when one was begun of the same sentence citing the same sources; it gives undefined when the
   * check could not be carried over after all.
   */
  readonly find: (
    claim: ClaimVerification.Claim,
    sourceIdOf: (number: number) => string | undefined
  ) => Effect.Effect<ClaimVerification.Checked | undefined> | undefined
}

/** No check made early: every claim is checked after the report. */
export const none: Early = { find: () => undefined }

/** Limits of the early check: the same as the verification phase's. */
export interface Limits {
  readonly batchSize: number
  readonly concurrency: number
}

/** A sentence with its citation marks taken out, spaces made single: the same words under any numbering. */
const wordsOf = (sentence: string): string =>
  sentence
    .replace(/\s*\[\d+(?:\s*[,;–-]\s*\d+)*\]/g, "")
    .replace(/\s+/g, " ")
    .trim()

/** The key of a claim: its words and the ids of the sources it cites, or undefined when one cannot be resolved. */
const keyOf = (
  claim: ClaimVerification.Claim,
  sourceIdOf: (number: number) => string | undefined
): string | undefined => {
  const ids = claim.citations.map(sourceIdOf)
  if (ids.some((id) => id === undefined)) return undefined
  return `${wordsOf(claim.text)}\u0000${[...new Set(ids)].sort().join(",")}`
}

/** An early check laid over a claim of the finished report: its citations renumbered, or undefined when one is lost. */
const carriedOver = (
  early: ClaimVerification.Checked,
  earlyIdOf: (number: number) => string | undefined,
  claim: ClaimVerification.Claim,
  sourceIdOf: (number: number) => string | undefined
): ClaimVerification.Checked | undefined => {
  const numberOfId = new Map(claim.citations.map((n) => [sourceIdOf(n), n] as const))
  const citations = early.citations.map((c) => {
    const number = numberOfId.get(earlyIdOf(c.number))
    return number === undefined ? undefined : { number, label: c.label }
  })
  if (citations.some((c) => c === undefined)) return undefined
  return { ...early, claim, citations: citations.flatMap((c) => (c === undefined ? [] : [c])) }
}

/** A sentence waiting for its check, and where the check's result goes. */
interface Waiting {
  readonly claim: ClaimVerification.Claim
  readonly result: Deferred.Deferred<ClaimVerification.Checked | undefined>
}

/**
 * Runs `writing` (the synthesis of a report whose `[n]` number `sources`) with its streamed text checked line by line,
 * in the scope's lifetime: the checks still running when it ends go on, and `find` waits for them.
 */
export const whileWriting = Effect.fn("StreamingVerification.whileWriting")(function* <A, E, R>(
  sources: ReadonlyArray<Source>,
  limits: Limits,
  writing: Effect.Effect<A, E, R>
) {
  if ((yield* Budget.current).limited) return { value: yield* writing, early: none }
  const scope = yield* Effect.scope
  // The checks run in the phase's context as it is here, without the text progress their own answers would feed.
  const context = yield* Effect.context<ModelRouter.ModelRouter>()
  const model = yield* ModelRouter.forRole("summarization")
  const semaphore = yield* Effect.makeSemaphore(limits.concurrency)
  const resolve = (number: number) => sources[number - 1]
  const earlyIdOf = (number: number) => resolve(number)?.id
  const results = new Map<string, Deferred.Deferred<ClaimVerification.Checked | undefined>>()
  let waiting: Array<Waiting> = []
  let inFlight = 0

  const send = (batch: ReadonlyArray<Waiting>): Effect.Effect<void> =>
    ClaimVerification.check(
      model,
      batch.map((w) => w.claim),
      resolve,
      { batchSize: limits.batchSize, concurrency: 1 }
    ).pipe(
      semaphore.withPermits(1),
      Effect.mapInputContext((_: Context.Context<never>) => context),
      Effect.onExit((exit) =>
        Effect.forEach(batch, (w, i) => Deferred.succeed(w.result, Exit.isSuccess(exit) ? exit.value[i] : undefined))
      ),
      Effect.ensuring(
        Effect.suspend(() => {
          inFlight--
          return flush(false)
        })
      ),
      Effect.forkIn(scope),
      Effect.asVoid
    )

  // What waits is sent at once when nothing is being checked, when a whole batch waits, or when `all` (the report
  // is written); otherwise when the check in flight ends: few calls, and little left when the report ends.
  const flush = (all: boolean): Effect.Effect<void> =>
    Effect.suspend(() => {
      if (waiting.length === 0 || (!all && inFlight > 0 && waiting.length < limits.batchSize)) return Effect.void
      const batches = ClaimVerification.batches(waiting, limits.batchSize)
      waiting = []
      inFlight += batches.length
      return Effect.forEach(batches, send, { discard: true })
    })

  const add = (claims: ReadonlyArray<ClaimVerification.Claim>) =>
    Effect.suspend(() => {
      for (const claim of claims) {
        const key = keyOf(claim, earlyIdOf)
        if (key === undefined || results.has(key)) continue
        const result = Deferred.unsafeMake<ClaimVerification.Checked | undefined>(FiberId.none)
        results.set(key, result)
        waiting.push({ claim, result })
      }
      return flush(false)
    })

  // Each request the report model sends has its own text; a retry starts again, and what it repeats is known. A
  // line is complete once the next one begins.
  const start = Effect.sync(() => {
    let readUpTo = 0
    return (text: string) =>
      Effect.suspend(() => {
        const end = text.lastIndexOf("\n")
        if (end <= readUpTo) return Effect.void
        readUpTo = end
        return add(ClaimVerification.claimsOf(text.slice(0, end)))
      })
  })
  const value = yield* LanguageModel.withTextProgress({ start })(writing)
  yield* flush(true)
  const early: Early = {
    find: (claim, sourceIdOf) => {
      const key = keyOf(claim, sourceIdOf)
      const pending = key === undefined ? undefined : results.get(key)
      return pending === undefined
        ? undefined
        : Effect.map(Deferred.await(pending), (checked) =>
            checked === undefined ? undefined : carriedOver(checked, earlyIdOf, claim, sourceIdOf)
          )
    }
  }
  return { value, early }
})

/**
 * The checks of `claims` (the finished report's, in its order): those begun early as they end, the rest by `check` at
 * the same time; a check begun early that cannot be carried over is made again after.
 */
export const checkRest = <R>(
  early: Early,
  claims: ReadonlyArray<ClaimVerification.Claim>,
  sourceIdOf: (number: number) => string | undefined,
  check: (
    claims: ReadonlyArray<ClaimVerification.Claim>
  ) => Effect.Effect<ReadonlyArray<ClaimVerification.Checked>, never, R>
) =>
  Effect.gen(function* () {
    const begun = claims.map((claim) => early.find(claim, sourceIdOf))
    const rest = claims.filter((_, i) => begun[i] === undefined)
    const [found, checkedRest] = yield* Effect.all(
      [
        Effect.forEach(begun, (pending) => pending ?? Effect.succeed(undefined)),
        rest.length === 0 ? Effect.succeed([]) : check(rest)
      ],
      { concurrency: "unbounded" }
    )
    const lost = claims.filter((_, i) => begun[i] !== undefined && found[i] === undefined)
    const checkedLost = lost.length === 0 ? [] : yield* check(lost)
    const byClaim = new Map([...checkedRest, ...checkedLost].map((checked) => [checked.claim, checked] as const))
    return claims.flatMap((claim, i) => {
      const checked = found[i] ?? byClaim.get(claim)
      return checked === undefined ? [] : [checked]
    })
  })
