/**
 * A research unit: one researcher on one directive, followed by the compression of what it found. The supervisor
 * runs several at once. A unit never fails: a failure is recorded in `TopicResult.error` (never in the findings) and
 * what was gathered before it is kept. A researcher that failed after finding sources still yields a "completed"
 * result (stopReason "failed", `error` set) so that its evidence is used; one that found nothing is "failed".
 *
 * Findings cite `[n]`, where n is the position (from 1) of the source's id in `TopicResult.sourceIds`. Those ids are
 * the unit's new sources (`${directiveId}-s${k}`, also returned in `sources`) and known sources of earlier rounds the
 * researcher came across again (their ids are kept; they are not returned again).
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import type { ContentExtractor } from "../ContentExtractor.js"
import type { ModelRouter } from "../ModelRouter.js"
import { TopicResult } from "../Research.js"
import type { Source } from "../Source.js"
import * as ResearchEvents from "../ResearchEvents.js"
import type { SearchProvider } from "../SearchProvider.js"
import type { Summarizer } from "../Summarizer.js"
import * as Usage from "../Usage.js"
import * as Compression from "./Compression.js"
import * as Researcher from "./Researcher.js"
import type { Input as UnitInput } from "../internal/research/unitInput.js"
import * as Telemetry from "../Telemetry.js"

/** What a research unit is given: the contract between the supervisor and whatever runs its units. */
export type Input = UnitInput

/** What a unit produced: its topic result and the sources it found for the first time in the session. */
export interface Output {
  readonly result: TopicResult
  readonly sources: ReadonlyArray<Source>
}

/** Runs one research unit; never fails (a failure is a `TopicResult` with status "failed"). */
export type Runner<R> = (input: Input) => Effect.Effect<Output, never, R>

const describe = (cause: Cause.Cause<unknown>): string => {
  const failure = Cause.squash(cause)
  return failure instanceof Error ? failure.message : String(failure)
}

/** Runs one research unit. Never fails; interruption passes through. */
export const run = (
  input: Input
): Effect.Effect<Output, never, ModelRouter | SearchProvider | ContentExtractor | Summarizer> => {
  const directiveId = input.directive.id
  const unit = Effect.gen(function* () {
    yield* ResearchEvents.publish({ _tag: "ResearcherStarted", directiveId, topic: input.directive.directive.topic })
    const research = yield* Researcher.run(input)
    const compression = yield* Compression.run(input.task, {
      directive: input.directive,
      seen: research.seen,
      summary: research.summary ?? research.closingText,
      shouldStop: input.shouldStop
    })
    const failed = research.error !== undefined && research.seen.length === 0
    // Typed parts, the counts counted: not validated again.
    const result = new TopicResult(
      {
        directiveId,
        status: failed ? "failed" : "completed",
        findings: compression.findings,
        supervisorSummary: compression.supervisorSummary,
        sourceIds: research.seen.map((seen) => seen.source.id),
        stopReason: research.stopReason,
        toolCalls: research.toolCalls,
        failedToolCalls: research.failedToolCalls,
        turns: research.turns,
        compressed: compression.compressed,
        ...(research.error !== undefined ? { error: research.error } : {}),
        usage: Usage.add(research.usage, compression.usage)
      },
      true
    )
    yield* failed
      ? ResearchEvents.publish({ _tag: "ResearcherFailed", directiveId, error: research.error ?? "unknown error" })
      : ResearchEvents.publish({
          _tag: "ResearcherCompleted",
          directiveId,
          stopReason: research.stopReason,
          sources: research.newSources.length,
          toolCalls: research.toolCalls,
          compressed: compression.compressed
        })
    const output: Output = { result, sources: research.newSources }
    return output
  })
  return unit.pipe(
    Effect.catchAllCause((cause) => {
      if (Cause.isInterruptedOnly(cause)) return Effect.interrupt
      const error = describe(cause)
      return Effect.gen(function* () {
        yield* Effect.logError(`Research unit ${directiveId} failed`, cause)
        yield* ResearchEvents.publish({ _tag: "ResearcherFailed", directiveId, error })
        const output: Output = {
          result: new TopicResult({
            directiveId,
            status: "failed",
            findings: "",
            supervisorSummary: `Covered: nothing; the research unit failed before it produced findings.`,
            sourceIds: [],
            stopReason: "failed",
            toolCalls: 0,
            turns: 0,
            compressed: false,
            error
          }),
          sources: []
        }
        return output
      })
    }),
    Telemetry.inFlight,
    Effect.withSpan("ResearchUnit.run", {
      attributes: { directiveId, [Telemetry.attributes.directiveId]: directiveId }
    })
  )
}
