/**
 * Follow-up questions about a finished session, answered from the sources it stored (their stored text, not only the
 * report): the passages most relevant to the question are retrieved (BM25 over the session's own passages), the
 * report role answers from them citing the session's own numbers (the report's, then the sources it did not cite,
 * numbered after them), and the answer's citations are checked as a report's are (`Verification.checkText`). When the
 * sources do not cover the question, the answer says so and names a direction a continuation could research
 * (`extend`, below). Answers are kept with the session, in order; what they spent is in its usage and in its metrics
 * under the `answer` phase. An answer's calls draw on the session's budget as a run's do (the whole of it, what the
 * session spent counted): a session whose budget cannot cover them is refused with `ResearchBudgetExhausted`, unless the ask
 * gives a larger budget, which replaces the stored one as a resumed run's does.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Budget from "./Budget.js"
import * as ClaimVerification from "./ClaimVerification.js"
import * as Citations from "./Citations.js"
import * as Defaults from "./Defaults.js"
import {
  ResearchInvalidInput,
  type ModelMalformedOutput,
  type ProviderError,
  type ResearchSessionBusy,
  type ResearchSessionCorrupt,
  type ResearchSessionNotFound
} from "./Errors.js"
import * as ResumeSettings from "./internal/session/resumeSettings.js"
import * as Passages from "./internal/text/passages.js"
import * as LanguageModel from "./LanguageModel.js"
import * as ModelRouter from "./ModelRouter.js"
import * as Pipeline from "./Pipeline.js"
import * as Checkpoint from "./phases/Checkpoint.js"
import * as Continuation from "./phases/Continuation.js"
import * as Verification from "./phases/Verification.js"
import * as Pricing from "./Pricing.js"
import * as Prompt from "./prompts/followUp.js"
import { Citation, FollowUpAnswer } from "./Research.js"
import * as Session from "./Session.js"
import { SessionStore } from "./SessionStore.js"
import type { Source } from "./Source.js"
import * as StructuredOutput from "./StructuredOutput.js"
import * as Task from "./Task.js"
import * as Usage from "./Usage.js"
import * as UsageLedger from "./UsageLedger.js"

// =============================================================================
// Types
// =============================================================================

/** What the report role answers. */
export const ModelAnswer = Schema.Struct({
  covered: Schema.Boolean,
  answer: Schema.String,
  direction: Schema.String
})
export type ModelAnswer = typeof ModelAnswer.Type

/** A stored source under its number in the session. */
export interface Numbered {
  readonly number: number
  readonly source: Source
}

/** Bounds of an answer. */
export interface Options {
  /** Passages shown to the model at most; 10 by default. */
  readonly passages?: number | undefined
  /** Characters of passages shown at most; 12,000 by default. */
  readonly maxPassageChars?: number | undefined
  /** Check the answer's citations against their sources; the session's `verify` setting by default. */
  readonly verify?: boolean | undefined
  /**
   * A new budget for the session (either field left out keeps the stored one), kept with it as a resumed run's is:
   * for an ask the stored budget can no longer cover. One that does not exceed what the session spent is
   * `ResearchInvalidInput`.
   */
  readonly budget?: ResumeSettings.BudgetChange | undefined
}

/** An answer as the session keeps it (the schema of `Session.answers`). */
export const Answer = FollowUpAnswer
export type Answer = FollowUpAnswer

/** A session with the answer kept, and the answer. */
export interface Answered {
  readonly session: Session.Session
  readonly answer: FollowUpAnswer
}

/** What `ask` can fail with. */
export type Failure =
  | ProviderError
  | ModelMalformedOutput
  | ResearchInvalidInput
  | ResearchSessionNotFound
  | ResearchSessionCorrupt
  | ResearchSessionBusy

// =============================================================================
// Numbering and retrieval
// =============================================================================

/**
 * The session's sources under its own numbers: the report's citations keep theirs, and the sources the report did not
 * cite follow, numbered after them in the order the session found them.
 */
export const numbering = (session: Session.Session): ReadonlyArray<Numbered> => {
  const byId = new Map(session.sources.map((source) => [source.id, source] as const))
  const cited = (session.report?.citations ?? []).flatMap((citation) => {
    const source = byId.get(citation.sourceId)
    return source === undefined ? [] : [{ number: citation.number, source }]
  })
  const citedIds = new Set(cited.map((entry) => entry.source.id))
  let next = cited.reduce((n, entry) => Math.max(n, entry.number), 0)
  const rest = session.sources
    .filter((source) => !citedIds.has(source.id))
    .map((source) => ({ number: ++next, source }))
  return [...cited, ...rest]
}

/** The passages of the session's sources most relevant to `question`, best first, within the options' bounds. */
export const retrieve = (
  sources: ReadonlyArray<Numbered>,
  question: string,
  options?: Options
): ReadonlyArray<Passages.Ranked<Numbered>> => {
  const passages = Passages.passagesOf(sources, (entry) => ClaimVerification.sourceText(entry.source))
  const ranked = Passages.rank(passages, question, (passage) => passage.source.source.title)
  const chosen: Array<Passages.Ranked<Numbered>> = []
  let chars = 0
  for (const entry of ranked) {
    if (chosen.length >= (options?.passages ?? 10)) break
    if (chars + entry.passage.text.length > (options?.maxPassageChars ?? 12_000)) continue
    chosen.push(entry)
    chars += entry.passage.text.length
  }
  return chosen
}

// =============================================================================
// Answering
// =============================================================================

/**
 * The session's budget for an answer's calls: what the session spent counted, and the whole of it open to them (the
 * answer is written by the report role, and a report may draw on all of it).
 */
const budgetOf = (session: Session.Session) =>
  Effect.gen(function* () {
    const table = Option.getOrElse(yield* Effect.serviceOption(Pricing.Pricing), () => Pricing.defaultTable)
    const budget = yield* Budget.make(session.config.budget, UsageLedger.totals(session.usage), {
      table,
      reportModel: (yield* ModelRouter.ModelRouter).resolve("report").model
    })
    return Budget.drawingOn("report")(budget)
  })

const notCoveredLine =
  "*The sources this session stored do not cover this question; a continuation (`continue`) can research it.*"

/** The answer written from the chosen passages, its citations limited to the numbers shown, then checked. */
const answerFrom = (
  session: Session.Session,
  question: string,
  chosen: ReadonlyArray<Passages.Ranked<Numbered>>,
  options: Options | undefined
) =>
  Effect.gen(function* () {
    const task = Task.fromSession(session)
    if (chosen.length === 0) {
      return { covered: false, markdown: notCoveredLine, direction: question, cited: [], verification: undefined }
    }
    const model = yield* ModelRouter.forRole("report")
    // Passages in source order, so that parts of one source sit together.
    const shown = [...chosen].sort(
      (a, b) => a.passage.source.number - b.passage.source.number || a.passage.index - b.passage.index
    )
    const { value } = yield* StructuredOutput.generateObject(
      model,
      ModelAnswer,
      {
        system: Prompt.system(task.language),
        messages: [
          LanguageModel.user(
            Prompt.user({
              researchQuestion: session.query,
              reportTitle: session.report?.title ?? session.query,
              question,
              passages: shown.map(({ passage }) => ({
                number: passage.source.number,
                title: passage.source.source.title,
                url: passage.source.source.url,
                text: passage.text
              }))
            })
          )
        ],
        maxOutputTokens: 2_000
      },
      { name: "follow_up_answer", retries: 2 }
    )
    const byNumber = new Map(shown.map(({ passage }) => [passage.source.number, passage.source] as const))
    // A number the model was not shown is removed, as an invented citation of a report is.
    const written = Citations.remap(value.answer.trim(), (n) => (byNumber.has(n) ? n : undefined)).markdown
    const checked =
      (options?.verify ?? session.config.verify)
        ? yield* Verification.checkText(written, (n) => byNumber.get(n)?.source, task.language.code)
        : { markdown: written, verification: undefined }
    const markdown = value.covered ? checked.markdown : `${checked.markdown.trimEnd()}\n\n${notCoveredLine}`
    const cited = [...byNumber.values()]
    const direction = value.covered ? undefined : value.direction.trim() === "" ? question : value.direction.trim()
    return { covered: value.covered, markdown, direction, cited, verification: checked.verification }
  })

/** The numbers an answer's citations carry, in order of the session's numbering. */
const citationsOf = (markdown: string, entries: ReadonlyArray<Numbered>): ReadonlyArray<Citation> => {
  const used = new Set<number>()
  Citations.remap(markdown, (n) => {
    used.add(n)
    return n
  })
  return entries
    .filter((entry) => used.has(entry.number))
    .sort((a, b) => a.number - b.number)
    .map(
      ({ number, source }) =>
        new Citation({
          number,
          sourceId: source.id,
          url: source.url,
          title: source.title,
          ...(source.work === undefined ? {} : { work: source.work })
        })
    )
}

/**
 * Answers `question` from the stored sources of the finished session `sessionId`, keeps the answer with the session
 * (after the earlier ones) and returns both. The session is held while it is answered: a run working on it is
 * `ResearchSessionBusy`. A session with no report yet is `ResearchInvalidInput`.
 */
export const ask = (
  sessionId: string,
  question: string,
  options?: Options
): Effect.Effect<Answered, Failure, ModelRouter.ModelRouter | SessionStore> =>
  Effect.scoped(
    Effect.gen(function* () {
      if (question.trim() === "") return yield* new ResearchInvalidInput({ reason: "the question is empty" })
      const id = yield* Session.validateId(sessionId)
      const store = yield* SessionStore
      yield* store.load(id)
      yield* store.lock(id)
      const loaded = yield* store.load(id)
      if (loaded.status !== "completed" || loaded.report === undefined) {
        return yield* new ResearchInvalidInput({
          reason: `session ${id} has no finished report to ask about (its status is ${loaded.status})`
        })
      }
      const session = yield* ResumeSettings.withBudget(loaded, options?.budget)
      const startedAt = yield* Clock.currentTimeMillis
      const ledger = yield* UsageLedger.make()
      const entries = numbering(session)
      const chosen = retrieve(entries, question, options)
      const outcome = yield* answerFrom(session, question, chosen, options).pipe(
        Effect.provideService(UsageLedger.UsageLedger, ledger),
        Effect.provideService(Budget.Budget, yield* budgetOf(session))
      )
      const spent = yield* ledger.snapshot
      const durationMillis = (yield* Clock.currentTimeMillis) - startedAt
      const answer = new FollowUpAnswer({
        question: question.trim(),
        markdown: outcome.markdown,
        citations: citationsOf(outcome.markdown, outcome.cited),
        covered: outcome.covered,
        ...(outcome.direction === undefined ? {} : { suggestedDirection: outcome.direction }),
        ...(outcome.verification === undefined ? {} : { verification: outcome.verification }),
        askedAt: startedAt,
        durationMillis,
        usage: spent
      })
      const next = Checkpoint.patch(session, {
        answers: [...session.answers, answer],
        metrics: [
          ...session.metrics,
          new Usage.PhaseMetrics({ phase: "answer", startedAt, durationMillis, roles: spent })
        ],
        usage: Checkpoint.addRoles(session.usage, spent),
        updatedAt: startedAt + durationMillis
      })
      yield* store.save(next)
      return { session: next, answer }
    })
  ).pipe(Effect.withSpan("FollowUp.ask"))

// =============================================================================
// Going deeper
// =============================================================================

/**
 * Goes deeper: reopens the completed session `sessionId` in `direction`. The supervisor goes on from its brief, its
 * findings and its sources for at most `rounds` more rounds (2 by default; pages the session read are not fetched
 * again), and the report is written again as a new version, the earlier one kept in `reportVersions`. A session that
 * is not completed, an empty direction or rounds out of bounds are `ResearchInvalidInput`.
 */
export const extend = (
  sessionId: string,
  direction: string,
  options?: Omit<Pipeline.ResumeOptions, "direction">
): Effect.Effect<Session.Session, Pipeline.ResumeFailure, Pipeline.Requirements> => {
  const rounds = options?.rounds ?? Continuation.defaultRounds
  const most = Defaults.upperBounds.maxSupervisionRounds
  if (direction.trim() === "") return Effect.fail(new ResearchInvalidInput({ reason: "the direction is empty" }))
  if (!Number.isInteger(rounds) || rounds < 1 || rounds > most) {
    return Effect.fail(new ResearchInvalidInput({ reason: `rounds must be an integer from 1 to ${most}` }))
  }
  return Pipeline.resume(sessionId, { ...options, direction: direction.trim(), rounds })
}
