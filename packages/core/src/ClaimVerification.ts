/**
 * Claim checking, in one home for the pipeline's `verification` phase and for `evaluate`: the sentences of a report
 * that cite sources are checked, in batches, against the stored text of the sources they cite (the fetched content,
 * the summary and its excerpts), each labelled as a whole and per cited source. A batch the budget cannot pay for is
 * left unchecked; one whose call fails is recorded as failed: neither stops the others.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as LanguageModel from "./LanguageModel.js"
import * as Prompt from "./prompts/claimVerification.js"
import * as ReportText from "./ReportText.js"
import { SupportLabel } from "./Research.js"
import type { Source } from "./Source.js"
import * as StructuredOutput from "./StructuredOutput.js"

// =============================================================================
// Schemas
// =============================================================================

/** What the model answers for a batch of sentences. */
export const Answer = Schema.Struct({
  verdicts: Schema.Array(
    Schema.Struct({
      claim: Schema.Int,
      label: SupportLabel,
      explanation: Schema.String,
      citations: Schema.Array(Schema.Struct({ source: Schema.Int, label: SupportLabel }))
    })
  )
})
export type Answer = typeof Answer.Type

/** A cited sentence of a report. */
export interface Claim {
  readonly line: number
  readonly text: string
  readonly citations: ReadonlyArray<number>
}

/** The check of one claim. */
export interface Checked {
  readonly claim: Claim
  /** `unverifiable`: no cited source has text; `failed`: the call failed; `unchecked`: the budget could not pay. */
  readonly status: "checked" | "unverifiable" | "failed" | "unchecked"
  /** The sentence as a whole, against all its cited sources together. */
  readonly label?: SupportLabel | undefined
  /** Each cited source that has text, by its citation number. */
  readonly citations: ReadonlyArray<{ readonly number: number; readonly label: SupportLabel }>
  readonly explanation: string
}

/** Bounds of a check. */
export interface Options {
  /** Sentences per call; 8 by default. */
  readonly batchSize?: number | undefined
  /** Calls at once; 4 by default. */
  readonly concurrency?: number | undefined
  /** Characters of source text shown per call, shared by its sources; 24,000 by default. */
  readonly maxSourceChars?: number | undefined
  /** Asks after an answer that does not decode; 1 by default. */
  readonly retries?: number | undefined
  /** Output tokens per call; 300 per sentence of the batch by default. */
  readonly maxOutputTokens?: number | undefined
}

// =============================================================================
// Claims and sources
// =============================================================================

/** Every sentence of the report's body (its source list left out) that cites a source. */
export const claimsOf = (markdown: string): ReadonlyArray<Claim> =>
  ReportText.citedSentences(ReportText.parse(markdown)).map((sentence) => ({
    line: sentence.line,
    text: sentence.sentence,
    citations: sentence.numbers
  }))

/** The stored text of a source that a claim is checked against: its content, summary and excerpts. */
export const sourceText = (source: Source): string =>
  [source.content, source.summary?.summary ?? "", ...(source.summary?.excerpts ?? [])]
    .filter((part) => part.trim() !== "")
    .join("\n")

const cap = (text: string, max: number): string =>
  text.length <= max ? text : `${text.slice(0, Math.max(0, max))}\n[... cut: ${text.length - max} more characters]`

/** Claims in batches of `size`, in report order. */
export const batches = <A>(items: ReadonlyArray<A>, size: number): ReadonlyArray<ReadonlyArray<A>> => {
  const step = Math.max(1, Math.floor(size))
  return Array.from({ length: Math.ceil(items.length / step) }, (_, i) => items.slice(i * step, (i + 1) * step))
}

// =============================================================================
// The check
// =============================================================================

/** The request that checks a batch of claims, each against the sources it cites (resolved by `resolve`). */
export const request = (
  claims: ReadonlyArray<Claim>,
  resolve: (number: number) => Source | undefined,
  options?: Options
): LanguageModel.GenerateRequest => {
  const numbers = [...new Set(claims.flatMap((claim) => claim.citations))].sort((a, b) => a - b)
  const shown = numbers.flatMap((number) => {
    const source = resolve(number)
    return source === undefined ? [] : [{ number, source }]
  })
  const share = Math.floor((options?.maxSourceChars ?? 24_000) / Math.max(1, shown.length))
  const sources = shown.map(({ number, source }) => ({
    number,
    title: source.title,
    url: source.url,
    text: cap(sourceText(source), share)
  }))
  const blocks = claims.map((claim, i) => ({ id: i + 1, text: claim.text, cites: claim.citations }))
  return {
    system: Prompt.system,
    messages: [LanguageModel.user(Prompt.user(blocks, sources))],
    maxOutputTokens: options?.maxOutputTokens ?? 300 * claims.length
  }
}

/** The model's verdicts laid over the batch: a claim it left out is failed, a source it left out takes the whole. */
const verdictsOf = (claims: ReadonlyArray<Claim>, answer: Answer): ReadonlyArray<Checked> =>
  claims.map((claim, i) => {
    const verdict = answer.verdicts.find((v) => v.claim === i + 1)
    if (verdict === undefined) {
      return { claim, status: "failed", citations: [], explanation: "the model gave no verdict for this sentence" }
    }
    const citations = claim.citations.map((number) => ({
      number,
      label: verdict.citations.find((c) => c.source === number)?.label ?? verdict.label
    }))
    return { claim, status: "checked", label: verdict.label, citations, explanation: verdict.explanation }
  })

const unresolved = (claim: Claim, status: Checked["status"], explanation: string): Checked => ({
  claim,
  status,
  citations: [],
  explanation
})

/** Checks one batch; never fails: a refused or failed call leaves its claims unchecked or failed. */
const checkBatch = (
  model: LanguageModel.Service,
  claims: ReadonlyArray<Claim>,
  resolve: (number: number) => Source | undefined,
  options?: Options
): Effect.Effect<ReadonlyArray<Checked>> =>
  StructuredOutput.generateObject(model, Answer, request(claims, resolve, options), {
    name: "claim_verdicts",
    retries: options?.retries ?? 1
  }).pipe(
    Effect.map(({ value }) => verdictsOf(claims, value)),
    Effect.catchAll((error) =>
      error._tag === "ResearchBudgetExhausted"
        ? Effect.succeed(claims.map((claim) => unresolved(claim, "unchecked", "the budget could not pay for it")))
        : Effect.as(
            Effect.logWarning("a claim check failed", error.message),
            claims.map((claim) => unresolved(claim, "failed", error.message))
          )
    )
  )

/**
 * Checks `claims` against the sources `resolve` gives for their citation numbers, through `model`, in batches. A
 * claim none of whose cited sources has stored text is `unverifiable`, without a call. Results are in claim order.
 */
export const check = Effect.fn("ClaimVerification.check")(function* (
  model: LanguageModel.Service,
  claims: ReadonlyArray<Claim>,
  resolve: (number: number) => Source | undefined,
  options?: Options
) {
  const hasText = (claim: Claim) =>
    claim.citations.some((number) => {
      const source = resolve(number)
      return source !== undefined && sourceText(source).trim() !== ""
    })
  const checkable = claims.filter(hasText)
  const results = yield* Effect.forEach(
    batches(checkable, options?.batchSize ?? 8),
    (batch) => checkBatch(model, batch, resolve, options),
    { concurrency: Math.max(1, options?.concurrency ?? 4) }
  )
  const byClaim = new Map(results.flat().map((checked) => [checked.claim, checked] as const))
  return claims.map(
    (claim) => byClaim.get(claim) ?? unresolved(claim, "unverifiable", "no cited source has stored text")
  )
})
