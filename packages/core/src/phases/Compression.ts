/**
 * Compression, right after a researcher: the `compression` model rewrites the researcher's material into findings
 * with inline numbered citations (reformatting, not summarising) and appends a brief for the supervisor. The result is
 * kept only when it is at least `compressionMinRatio` of the raw notes and cites one of the unit's sources; otherwise
 * the raw notes stand and the supervisor brief is built without a model. A context-window overflow shrinks the
 * sources, never the instruction, the question or the assignment.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ContextRecovery from "../ContextRecovery.js"
import { domainOf } from "../internal/research/sourceQuality.js"
import * as LanguageModel from "../LanguageModel.js"
import { ModelRouter } from "../ModelRouter.js"
import * as Prompt from "../prompts/compression.js"
import * as Untrusted from "../prompts/untrusted.js"
import type { IssuedDirective } from "../Research.js"
import type { SourceQuality } from "../Source.js"
import * as StructuredOutput from "../StructuredOutput.js"
import type { Task } from "../Task.js"
import type { Section } from "../Truncation.js"
import * as Usage from "../Usage.js"
import type { SeenSource } from "../internal/research/sourceLedger.js"

/** What compression works from, beside the task: one researcher's material. */
export interface Input {
  readonly directive: IssuedDirective
  /** The sources the researcher was shown, in number order. */
  readonly seen: ReadonlyArray<SeenSource>
  /** The researcher's own summary (`researchComplete`), or its closing text. */
  readonly summary: string | undefined
  /** Checked before the model call; true leaves the raw notes standing. */
  readonly shouldStop: Effect.Effect<boolean>
}

/** The findings of the unit. */
export interface Output {
  /** Findings with inline `[n]` citations, n being the source's number in `seen`. */
  readonly findings: string
  /** At most `supervisorSummaryMaxChars`: covered, key findings, confidence, gaps. */
  readonly supervisorSummary: string
  /** True when the model's rewrite was kept; false when the raw notes stand. */
  readonly compressed: boolean
  readonly usage: Usage.Usage
  /** Why the raw notes stand, for the logs (never part of the findings). */
  readonly fallbackReason: string | undefined
}

// =============================================================================
// Raw notes and checks
// =============================================================================

/** The researcher's material as plain notes: its summary, then every source it read under its number. */
export const rawNotes = (input: Pick<Input, "seen" | "summary">): string => {
  const summary = input.summary?.trim() ?? ""
  const parts: Array<string> = []
  if (summary !== "") parts.push(`Researcher's summary:\n${summary}`)
  if (input.seen.length === 0) {
    parts.push("No sources were found for this assignment.")
  } else {
    parts.push(
      [
        "Sources:",
        ...input.seen.map(
          (seen) => `[${seen.number}] ${seen.source.title} (${seen.source.url})\n${seen.content.trim()}`
        )
      ].join("\n\n")
    )
  }
  return parts.join("\n\n")
}

/** True when the text cites at least one of sources 1..count as `[n]` (or `[n, m]`). */
export const citesSource = (text: string, count: number): boolean => {
  for (const match of text.matchAll(/\[(\d+(?:\s*[,;]\s*\d+)*)\]/g)) {
    const numbers = (match[1] ?? "").split(/[,;]/).map((n) => Number.parseInt(n.trim(), 10))
    if (numbers.some((n) => n >= 1 && n <= count)) return true
  }
  return false
}

/** Splits a compression answer into the findings and the supervisor brief (when the model wrote one). */
export const splitBrief = (text: string): { readonly findings: string; readonly brief: string | undefined } => {
  const cleaned = StructuredOutput.stripThinking(text)
  const match = /^[ \t]{0,3}(?:#{1,4}[ \t]*|\*\*)supervisor brief\b.*$/im.exec(cleaned)
  // The "## Findings" heading the prompt asks for is scaffolding, not content.
  const withoutHeading = (findings: string) => findings.trim().replace(/^#{1,4}[ \t]*findings[ \t]*\n+/i, "")
  if (match === null) return { findings: withoutHeading(cleaned), brief: undefined }
  const brief = cleaned.slice(match.index + match[0].length).trim()
  return { findings: withoutHeading(cleaned.slice(0, match.index)), brief: brief === "" ? undefined : brief }
}

/** Cuts a text to at most `max` characters, at a sentence or line end when one is close. */
export const capText = (text: string, max: number): string => {
  const trimmed = text.trim()
  if (trimmed.length <= max) return trimmed
  const room = Math.max(0, max - 1)
  const kept = trimmed.slice(0, room)
  const end = Math.max(kept.lastIndexOf(". "), kept.lastIndexOf(".\n"), kept.lastIndexOf("\n"))
  const cut = end >= room * 0.6 ? end + 1 : room
  return `${kept.slice(0, cut).trimEnd()}…`
}

const qualityRank: Readonly<Record<SourceQuality, number>> = { high: 3, medium: 2, low: 1, unknown: 0 }

/**
 * The supervisor brief built without a model, from the assignment, the sources and a text of key findings (the
 * researcher's summary, or the findings themselves).
 */
export const plainSupervisorSummary = (options: {
  readonly directive: IssuedDirective
  readonly seen: ReadonlyArray<SeenSource>
  readonly keyText: string | undefined
  readonly maxChars: number
  readonly note: string
}): string => {
  const sources = options.seen.map((s) => s.source)
  const domainCount = new Set(sources.map((source) => domainOf(source.url))).size
  const high = sources.filter((source) => source.quality === "high").length
  const confidence =
    sources.length >= 3 && domainCount >= 3 && high >= 1 ? "medium" : sources.length === 0 ? "low" : "low to medium"
  const key = options.keyText?.trim() ?? ""
  const keyFindings =
    key !== ""
      ? capText(key.replace(/\s+/g, " "), Math.floor(options.maxChars * 0.5))
      : sources.length === 0
        ? "none: no sources were found"
        : sources
            .slice(0, 5)
            .map((source, i) => `${source.title} [${options.seen[i]?.number ?? i + 1}]`)
            .join("; ")
  return capText(
    [
      `Covered: ${capText(options.directive.directive.topic.replace(/\s+/g, " "), 300)}`,
      `Key findings: ${keyFindings}`,
      `Confidence: ${confidence} (${sources.length} sources from ${domainCount} domains, ${high} of high quality)`,
      `Gaps: ${options.note}`
    ].join("\n"),
    options.maxChars
  )
}

// =============================================================================
// Compression
// =============================================================================

const sourceSectionPrefix = "source "

/** Compresses a researcher's material. Never fails: when the rewrite fails or falls short, the raw notes stand. */
export const run = Effect.fn("Compression.run")(function* (task: Pick<Task, "query" | "config">, input: Input) {
  const { config } = task
  const raw = rawNotes(input)
  const maxChars = config.supervisorSummaryMaxChars
  const fallback = (reason: string, usage: Usage.Usage = Usage.empty): Output => ({
    findings: raw,
    supervisorSummary: plainSupervisorSummary({
      directive: input.directive,
      seen: input.seen,
      keyText: input.summary,
      maxChars,
      note: "not assessed; the researcher's raw notes are given as they are"
    }),
    compressed: false,
    usage,
    fallbackReason: reason
  })

  if (input.seen.length === 0) return fallback("there were no sources to compress")
  if (yield* input.shouldStop) return fallback("the run asked to stop before compression")

  const router = yield* ModelRouter
  const model = router.forRole("compression")
  const directive = input.directive.directive
  const bySection = new Map<string, SeenSource>(
    input.seen.map((seen) => [`${sourceSectionPrefix}${seen.number}`, seen])
  )
  const summary = input.summary?.trim() ?? ""
  const sections: ReadonlyArray<Section> = [
    { name: "question", kind: "question", content: `The user's question: ${task.query}` },
    { name: "assignment", kind: "brief", content: Prompt.assignment(directive) },
    ...(summary === ""
      ? []
      : [{ name: "summary", kind: "findings" as const, content: `The researcher's summary:\n${summary}` }]),
    ...input.seen.map((seen): Section => ({
      name: `${sourceSectionPrefix}${seen.number}`,
      kind: "source",
      content: seen.content,
      quality: qualityRank[seen.source.quality]
    })),
    { name: "instruction", kind: "instruction", content: Prompt.instruction(maxChars) }
  ]
  // Sources are wrapped when the request is built, after any truncation, so a cut never loses a closing delimiter.
  const build = (shrunk: ReadonlyArray<Section>): LanguageModel.GenerateRequest => ({
    system: Prompt.system(maxChars),
    messages: [
      LanguageModel.user(
        shrunk
          .map((section) => {
            const seen = bySection.get(section.name)
            if (seen === undefined || section.kind !== "source") return section.content
            return Untrusted.wrap(
              { kind: "source", label: `[${seen.number}]`, url: seen.source.url, title: seen.source.title },
              section.content
            )
          })
          .join("\n\n")
      )
    ]
  })

  const completion = yield* Effect.either(ContextRecovery.generateSectioned(model, sections, build))
  if (Either.isLeft(completion)) {
    const reason = `compression failed: ${completion.left.message}`
    yield* Effect.logWarning(`${input.directive.id}: ${reason}; the raw notes stand`)
    return fallback(reason)
  }
  const usage = completion.right.usage
  const { brief, findings } = splitBrief(completion.right.text)
  if (findings.length < config.compressionMinRatio * raw.length) {
    return fallback(`the rewrite kept ${findings.length} of ${raw.length} characters`, usage)
  }
  if (!citesSource(findings, input.seen.length)) return fallback("the rewrite cites no source", usage)
  const output: Output = {
    findings,
    supervisorSummary:
      brief === undefined
        ? plainSupervisorSummary({
            directive: input.directive,
            seen: input.seen,
            keyText: findings,
            maxChars,
            note: "not assessed by the compression model"
          })
        : capText(brief, maxChars),
    compressed: true,
    usage,
    fallbackReason: undefined
  }
  return output
})
