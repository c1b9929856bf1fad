/**
 * A long report, written section by section (`ReportShape.isSectioned`): the report role plans the sections and the
 * findings each draws on (or takes the user's outline and assigns the findings to it), writes the sections at the same
 * time, each from its own findings and the sources they cite, then the introduction and the conclusion from the
 * written sections. Each part is given its share of the target length, and a part that misses it by more than the
 * tolerance gets one second pass, told its length and the target (`lengthPass`); the product never pads. The parts
 * cite the report's material numbers, so that once assembled the report is renumbered 1..N once, and checked as any
 * report is (sentence by sentence while it is written, then by the verification phase).
 */
import * as Effect from "effect/Effect"
import * as Budget from "../Budget.js"
import * as Citations from "../Citations.js"
import * as ContextRecovery from "../ContextRecovery.js"
import { kindOf, type ProviderError } from "../Errors.js"
import * as LanguageModel from "../LanguageModel.js"
import * as Prompt from "../prompts/reportSections.js"
import * as SynthesisPrompt from "../prompts/synthesis.js"
import * as ReportShape from "../ReportShape.js"
import * as ResearchEvents from "../ResearchEvents.js"
import * as StructuredOutput from "../StructuredOutput.js"
import type { Task } from "../Task.js"
import * as Tokens from "../Tokens.js"
import type { Section } from "../Truncation.js"
import type { Material } from "../internal/report/material.js"

/** Sections written at once at most. */
export const sectionConcurrency = 4

/** The fewest words a planned section is given: a plan of more sections than that allows is merged. */
export const minSectionWords = 150

/** A section as planned: its title, the topics (indexes into the material's) it draws on, its share of the words. */
export interface PlannedSection {
  readonly title: string
  readonly topics: ReadonlyArray<number>
  readonly words: number
}

/** The plan the report is written to. */
export interface ReportPlan {
  readonly title: string
  readonly sections: ReadonlyArray<PlannedSection>
  /** Absent when the user gave the outline: their sections are the report's. */
  readonly conclusionTitle: string | undefined
  readonly introductionWords: number
  readonly conclusionWords: number
}

// =============================================================================
// Planning
// =============================================================================

const oneLine = (text: string, max: number): string => text.replace(/\s+/g, " ").trim().slice(0, max)

/** The topics a planned section names, as indexes, each once and within the material. */
const topicsOf = (numbers: ReadonlyArray<number> | undefined, count: number): ReadonlyArray<number> =>
  [...new Set(numbers ?? [])].filter((n) => n >= 1 && n <= count).map((n) => n - 1)

const all = (count: number): ReadonlyArray<number> => Array.from({ length: count }, (_, i) => i)

/**
 * The sections of the report from what the planner answered (undefined when it could not): the user's titles in their
 * order when given, else the planner's, else one per topic; every topic drawn on by some section; no more sections
 * than the words allow.
 */
export const sectionsOf = (
  planned: Prompt.Plan | undefined,
  found: Material,
  outline: ReadonlyArray<string> | undefined,
  bodyWords: number
): ReadonlyArray<Omit<PlannedSection, "words">> => {
  const count = found.topics.length
  if (outline !== undefined) {
    return outline.map((title, i) => {
      const topics = topicsOf(planned?.sections[i]?.findings, count)
      return { title, topics: topics.length > 0 ? topics : all(count) }
    })
  }
  const proposed = (planned?.sections ?? [])
    .map((s) => ({ title: oneLine(s.title, 160), topics: topicsOf(s.findings, count) }))
    .filter((s) => s.title !== "" && s.topics.length > 0)
  const sections =
    proposed.length >= Math.min(2, count)
      ? proposed
      : found.topics.map((t, i) => ({ title: oneLine(t.topic, 80), topics: [i] }))
  const most = Math.max(1, Math.floor(bodyWords / minSectionWords))
  const kept = sections.slice(0, most).map((s) => ({ ...s, topics: [...s.topics] }))
  // What the plan left out, or the sections past the most the words allow drew on, goes to the leanest section.
  const covered = new Set(kept.flatMap((s) => s.topics))
  for (const topic of all(count)) {
    if (covered.has(topic)) continue
    const leanest = kept.reduce((a, b) => (b.topics.length < a.topics.length ? b : a))
    leanest.topics.push(topic)
  }
  return kept
}

/** The plan: the planner's answer (or the user's outline) with each part's share of `words`. */
export const planOf = (
  planned: Prompt.Plan | undefined,
  found: Material,
  task: Pick<Task, "query" | "config">,
  words: number
): ReportPlan => {
  const outline = task.config.reportOutline
  const introductionWords = Math.round(words * ReportShape.framingShare)
  const conclusionWords = outline === undefined ? introductionWords : 0
  const bodyWords = words - introductionWords - conclusionWords
  const sections = sectionsOf(planned, found, outline, bodyWords)
  const each = Math.round(bodyWords / Math.max(1, sections.length))
  const title = oneLine(planned?.title ?? "", 160)
  return {
    title: title === "" ? oneLine(task.query, 120) : title,
    sections: sections.map((s) => ({ ...s, words: each })),
    conclusionTitle: outline === undefined ? oneLine(planned?.conclusionTitle ?? "", 80) || "Conclusion" : undefined,
    introductionWords,
    conclusionWords
  }
}

const question = (task: Task): Section => ({
  name: "question",
  kind: "question",
  content: `Question:\n${task.query}${task.brief === undefined ? "" : `\n\nResearch brief:\n${task.brief.brief}`}`
})

/** Asks the report role for the plan; a plan it cannot give (or the budget cannot pay for) is made without it. */
const plan = (task: Task, found: Material, model: LanguageModel.Service, words: number, today: string) =>
  Effect.gen(function* () {
    const kind = SynthesisPrompt.classify(task.query, task.brief?.brief)
    const system = Prompt.planSystem({
      today,
      language: task.language,
      structure: SynthesisPrompt.structureOf(kind),
      words,
      outline: task.config.reportOutline
    })
    // The planner reads the gist of each topic's findings, not all of it: it assigns them, the sections read them.
    const gist = found.topics.map((t, i) => `Findings ${i + 1}: ${oneLine(t.topic, 300)}\n${oneLine(t.findings, 600)}`)
    const request: LanguageModel.GenerateRequest = {
      system,
      messages: [LanguageModel.user(Prompt.material([question(task).content, ...gist]))],
      maxOutputTokens: 2_000
    }
    const planned = yield* StructuredOutput.generateObject(model, Prompt.Plan, request, { name: "report_plan" }).pipe(
      Effect.map((generated): Prompt.Plan | undefined => generated.value),
      Effect.catchAll((error) =>
        Effect.as(
          Effect.logWarning(`the report's plan failed (${kindOf(error)}); the sections follow the research topics`),
          undefined
        )
      )
    )
    return planOf(planned, found, task, words)
  })

// =============================================================================
// Writing
// =============================================================================

/** A part's text as the report takes it: no reasoning, no heading of its own, no source list. */
const bodyOf = (text: string): string =>
  Citations.stripSourceList(StructuredOutput.stripThinking(text))
    .replace(/^\s*(?:#{1,2}\s+[^\n]*\n+)+/, "")
    .trim()

/**
 * One part written to `target` words: a part that misses it by more than the tolerance is asked once more, told its
 * length, and the version nearer the target is kept.
 */
export const lengthPass = (
  target: number,
  write: (extra: ReadonlyArray<LanguageModel.Message>) => Effect.Effect<LanguageModel.Completion, ProviderError>,
  clean: (text: string) => string = bodyOf
) =>
  Effect.gen(function* () {
    const first = clean((yield* write([])).text)
    const words = ReportShape.countWords(first)
    if (ReportShape.withinTolerance(words, target)) return first
    const again = yield* write([LanguageModel.assistant(first), LanguageModel.user(Prompt.resize(words, target))]).pipe(
      Effect.map((completion) => clean(completion.text)),
      // A second pass the budget cannot pay for leaves the first version.
      Effect.catchTag("ResearchBudgetExhausted", () => Effect.succeed(first))
    )
    const nearer = (text: string) => Math.abs(ReportShape.countWords(text) - target)
    return again !== "" && nearer(again) < nearer(first) ? again : first
  })

/** A call of the report role over a sectioned prompt, with the turns of a second pass after it. */
const writer =
  (model: LanguageModel.Service, system: string, parts: ReadonlyArray<Section>, words: number) =>
  (extra: ReadonlyArray<LanguageModel.Message>) =>
    ContextRecovery.generateSectioned(model, parts, (shown) => ({
      system,
      messages: [LanguageModel.user(Prompt.material(shown.map((part) => part.content))), ...extra],
      maxOutputTokens: Math.min(
        model.maxOutputTokens ?? Infinity,
        Math.max(Budget.usefulReportTokens, ReportShape.reportTokensFor(words))
      )
    }))

/** The numbers cited in a text. */
const citedIn = (text: string): ReadonlySet<number> =>
  new Set([...text.matchAll(/\[(\d+(?:\s*[,;]\s*\d+)*)\]/g)].flatMap((m) => (m[1] ?? "").split(/[,;]/).map(Number)))

/** The source list of the material, only the entries `cited` names, each under its report-wide number. */
const sourcesPart = (found: Material, cited: ReadonlySet<number>): Section => ({
  name: "sources",
  kind: "instruction",
  content: SynthesisPrompt.sourceList(
    found.sources.flatMap((s, i) => (cited.has(i + 1) ? [{ number: i + 1, title: s.title, url: s.url }] : []))
  )
})

/** Publishes that a part was written, with its words, for progress to show. */
const published =
  (part: "section" | "introduction" | "conclusion", title: string, index: number, total: number) => (body: string) =>
    ResearchEvents.publish({
      _tag: "ReportSectionWritten",
      part,
      title,
      index,
      sections: total,
      words: ReportShape.countWords(body)
    })

/** One section from its own findings; the budget refusing it leaves the findings as they are under its title. */
const section =
  (task: Task, found: Material, model: LanguageModel.Service, today: string, planned: ReportPlan) =>
  (s: PlannedSection, index: number) => {
    const topics = s.topics.flatMap((i) => {
      const t = found.topics[i]
      return t === undefined ? [] : [{ ...t, number: i + 1 }]
    })
    const others = planned.sections.filter((other) => other !== s).map((other) => other.title)
    const parts: ReadonlyArray<Section> = [
      question(task),
      ...(others.length === 0
        ? []
        : [
            {
              name: "outline",
              kind: "instruction" as const,
              content: `Other sections, written apart: ${others.join("; ")}`
            }
          ]),
      ...topics.map((t): Section => ({
        name: `findings ${t.number}`,
        kind: "findings",
        content: SynthesisPrompt.findings(t.number, t.topic, t.findings)
      })),
      sourcesPart(found, citedIn(topics.map((t) => t.findings).join("\n"))),
      { name: "request", kind: "instruction", content: `Write the section "${s.title}" now, in ${task.language.name}.` }
    ]
    const system = Prompt.sectionSystem({
      today,
      language: task.language,
      title: s.title,
      words: s.words,
      instructions: task.config.reportInstructions
    })
    return lengthPass(s.words, writer(model, system, parts, s.words)).pipe(
      Effect.catchTag("ResearchBudgetExhausted", () =>
        Effect.succeed(topics.map((t) => t.findings.trim()).join("\n\n"))
      ),
      Effect.tap(published("section", s.title, index + 1, planned.sections.length)),
      Effect.map((body) => ({ title: s.title, body }))
    )
  }

/** The introduction or the conclusion, from the written sections; nothing when the budget refuses it. */
const framing = (
  task: Task,
  found: Material,
  model: LanguageModel.Service,
  today: string,
  part: "introduction" | "conclusion",
  words: number,
  written: ReadonlyArray<{ readonly title: string; readonly body: string }>
) => {
  const parts: ReadonlyArray<Section> = [
    question(task),
    { name: "sections", kind: "findings", content: Prompt.writtenSections(written) },
    sourcesPart(found, citedIn(written.map((w) => w.body).join("\n"))),
    { name: "request", kind: "instruction", content: `Write the ${part} now, in ${task.language.name}.` }
  ]
  const system = Prompt.framingSystem({
    today,
    language: task.language,
    part,
    words,
    instructions: task.config.reportInstructions
  })
  return lengthPass(words, writer(model, system, parts, words)).pipe(
    Effect.catchTag("ResearchBudgetExhausted", () => Effect.succeed("")),
    Effect.tap(published(part, part, 0, written.length))
  )
}

/**
 * The words a budget can pay for: what the room left for the report holds once the findings are read (by the sections,
 * and again by the framing through the sections), at `tokensPerWord` with a second pass's slack. Undefined without one.
 */
export const affordableWords = (room: number | undefined, found: Material): number | undefined => {
  if (room === undefined) return undefined
  const reading = Tokens.estimateTokens(found.topics.map((t) => t.findings).join("\n")) + 4_000
  return Math.max(0, Math.floor((room - reading) / (ReportShape.reportTokensFor(1) * 2)))
}

/** Writes the report section by section to `words`, as markdown citing the material's numbers. */
export const write = Effect.fn("ReportSections.write")(function* (
  task: Task,
  found: Material,
  model: LanguageModel.Service,
  words: number,
  today: string
) {
  const planned = yield* plan(task, found, model, words, today)
  yield* ResearchEvents.publish({
    _tag: "ReportPlanned",
    sections: planned.sections.map((s) => s.title),
    words
  })
  const written = yield* Effect.forEach(planned.sections, section(task, found, model, today, planned), {
    concurrency: sectionConcurrency
  })
  const [introduction, conclusion] = yield* Effect.all(
    [
      framing(task, found, model, today, "introduction", planned.introductionWords, written),
      planned.conclusionTitle === undefined
        ? Effect.succeed("")
        : framing(task, found, model, today, "conclusion", planned.conclusionWords, written)
    ],
    { concurrency: 2 }
  )
  return [
    `# ${planned.title}`,
    ...(introduction === "" ? [] : [introduction]),
    ...written.map((w) => `## ${w.title}\n\n${w.body}`),
    ...(planned.conclusionTitle === undefined || conclusion === ""
      ? []
      : [`## ${planned.conclusionTitle}\n\n${conclusion}`])
  ].join("\n\n")
})
