/**
 * Synthesis: the report role writes the report from the findings of the research units that completed (never those
 * of failed units, never error text), in the question's language, structured by the kind of question, citing a
 * numbered list of the sources the session retrieved. The citations are then renumbered 1..N and any pointing at no
 * retrieved source removed and counted. A prompt too large for the model, or for what the budget has left, is shrunk
 * section by section; when what is left cannot pay for a report of useful length, the findings are given as they are,
 * under a notice saying so, without a model call.
 */
import * as Effect from "effect/Effect"
import * as Budget from "../Budget.js"
import * as Citations from "../Citations.js"
import * as ContextRecovery from "../ContextRecovery.js"
import { ModelMalformedOutput } from "../Errors.js"
import * as Language from "../internal/text/language.js"
import * as Notices from "../internal/text/reportNotices.js"
import * as VerificationNotices from "../internal/text/verificationNotices.js"
import * as LanguageModel from "../LanguageModel.js"
import * as ModelRouter from "../ModelRouter.js"
import * as Novelty from "../Novelty.js"
import * as SectionsPrompt from "../prompts/reportSections.js"
import * as Prompt from "../prompts/synthesis.js"
import * as ReportShape from "../ReportShape.js"
import { Grounding, Report, type TopicResult, type UngroundedReason } from "../Research.js"
import * as ResearchEvents from "../ResearchEvents.js"
import type { Session } from "../Session.js"
import type { Source } from "../Source.js"
import * as StructuredOutput from "../StructuredOutput.js"
import type { Task } from "../Task.js"
import * as Tokens from "../Tokens.js"
import * as ReportSections from "./ReportSections.js"
import { isProtected, type Section } from "../Truncation.js"
import type { Material } from "../internal/report/material.js"
import { today } from "../internal/text/calendar.js"

export type { Material, TopicFindings } from "../internal/report/material.js"

/** The completed results of the session, in round and priority order. */
export const completedResults = (session: Session): ReadonlyArray<{ topic: string; result: TopicResult }> =>
  session.rounds.flatMap((round) =>
    round.directives.flatMap((directive) => {
      const result = round.results.find((r) => r.directiveId === directive.id)
      return result !== undefined && result.status === "completed" && result.findings.trim() !== ""
        ? [{ topic: directive.directive.topic, result }]
        : []
    })
  )

/**
 * Numbers the sources the findings rest on (one number per URL across topics) and rewrites each topic's citations,
 * where `[n]` means the topic's n-th source, to those numbers. A citation to no source of its topic is removed.
 */
export const material = (session: Session): Material => {
  const byId = new Map(session.sources.map((s) => [s.id, s] as const))
  const numberOfUrl = new Map<string, number>()
  const sources: Array<Source> = []
  const topics = completedResults(session).map(({ result, topic }) => {
    const local = result.sourceIds.map((id) => {
      const source = byId.get(id)
      if (source === undefined) return undefined
      const key = Novelty.normalizeUrl(source.url)
      let number = numberOfUrl.get(key)
      if (number === undefined) {
        sources.push(source)
        number = sources.length
        numberOfUrl.set(key, number)
      }
      return number
    })
    const body = Citations.stripSourceList(result.findings)
    const findings = Citations.remap(body, (n) => local[n - 1]).markdown
    return { topic, findings }
  })
  return { sources, topics }
}

/**
 * What a report written from `sources` retrieved sources stands on and, when that is none, why: no search was ever
 * called (the budget stopped it, or every unit failed first, or the models never called one), every call failed, or the
 * searches answered with nothing kept.
 */
export const groundingOf = (session: Session, sources: number): Grounding => {
  if (sources > 0) return new Grounding({ sources })
  const results = session.rounds.flatMap((round) => round.results)
  const calls = results.reduce((n, r) => n + r.toolCalls, 0)
  const failedCalls = results.reduce((n, r) => n + r.failedToolCalls, 0)
  const allFailed = results.length > 0 && results.every((r) => r.status === "failed")
  const stoppedByBudget =
    session.supervisionStopReason === "budget" || results.some((r) => r.stopReason === "run_budget")
  const reason: UngroundedReason =
    calls === 0
      ? stoppedByBudget
        ? "budget"
        : allFailed
          ? "research_failed"
          : "no_tool_call"
      : failedCalls >= calls
        ? "searches_failed"
        : allFailed
          ? "research_failed"
          : (session.sourcePolicyRemovals?.total ?? 0) > 0
            ? "policy"
            : "nothing_found"
  return new Grounding({ sources: 0, reason })
}

/** The report with `notice` as its opening paragraph: right under its title when it has one, else first. */
export const withNotice = (markdown: string, notice: string): string => {
  const title = /^\s{0,3}#\s+[^\n]*\n?/.exec(markdown)
  if (title === null) return `${notice}\n\n${markdown.trimStart()}`
  return `${title[0].trimEnd()}\n\n${notice}\n\n${markdown.slice(title[0].length).trimStart()}`
}

const titleOf = (markdown: string, fallback: string): string => {
  const heading = /^\s{0,3}#\s+(.+?)\s*#*\s*$/m.exec(markdown)
  const title = heading?.[1]?.trim()
  return title !== undefined && title !== "" ? title : fallback.replace(/\s+/g, " ").trim().slice(0, 120)
}

/** The sections of the report prompt. */
export const sections = (
  task: Pick<Task, "query" | "brief" | "constraints" | "language">,
  found: Material
): ReadonlyArray<Section> => [
  { name: "question", kind: "question", content: `Question:\n${task.query}` },
  ...(task.brief === undefined
    ? []
    : [
        {
          name: "brief",
          kind: "brief" as const,
          content: [
            `Research brief:\n${task.brief.brief}`,
            ...(task.brief.scope.include.length > 0 ? [`Include: ${task.brief.scope.include.join("; ")}`] : []),
            ...(task.brief.scope.exclude.length > 0 ? [`Exclude: ${task.brief.scope.exclude.join("; ")}`] : [])
          ].join("\n")
        }
      ]),
  ...(task.constraints === undefined || task.constraints === ""
    ? []
    : [{ name: "constraints", kind: "brief" as const, content: `Constraints:\n${task.constraints}` }]),
  ...found.topics.map((t, i): Section => ({
    name: `findings ${i + 1}`,
    kind: "findings",
    content: Prompt.findings(i + 1, t.topic, t.findings)
  })),
  ...(found.sources.length > 0
    ? [
        {
          name: "sources",
          kind: "instruction" as const,
          content: Prompt.sourceList(found.sources.map((s, i) => ({ number: i + 1, title: s.title, url: s.url })))
        }
      ]
    : []),
  { name: "request", kind: "instruction", content: Prompt.request(task.language) }
]

/** The report's output limit and input limit under a budget: undefined without one, "short" when it cannot pay. */
const budgetFor = (
  room: number | undefined,
  fixedTokens: number,
  modelOutput: number | undefined
): { readonly outputTokens: number; readonly inputTokens: number } | "short" | undefined => {
  if (room === undefined) return undefined
  const spare = room - fixedTokens
  if (spare < Budget.usefulReportTokens) return "short"
  // Half of what is left beyond the prompt's fixed part for the report, the rest for the findings; 10% of the input's
  // share is slack for the router's count (the vendor's tokenizer, where the prompt is fitted by the estimate).
  const outputTokens = Math.min(
    modelOutput ?? Budget.outputEstimate.report,
    Math.max(Budget.usefulReportTokens, Math.floor(spare / 2))
  )
  return { outputTokens, inputTokens: Math.floor((room - outputTokens) * 0.9) }
}

/** The findings as they are, under a notice that the budget could not pay for a report: no model call. */
const findingsAsTheyAre = (task: Task, found: Material) =>
  Effect.gen(function* () {
    const status = yield* (yield* Budget.current).status
    const budget = task.config.budget
    yield* ResearchEvents.publish({
      _tag: "BudgetWarning",
      level: "report_short",
      budget: budget.maxTokens === undefined ? "usd" : "tokens",
      spent: budget.maxTokens === undefined ? status.spent.costUsd : status.spent.tokens,
      limit: budget.maxTokens ?? budget.maxUsd ?? 0
    })
    yield* Effect.logWarning("what is left of the budget cannot pay for a report; the findings are given as they are")
    const body = [
      `# ${task.query.replace(/\s+/g, " ").trim().slice(0, 120)}`,
      Notices.budgetShortNotice(task.language.code),
      ...found.topics.map((t) => `## ${t.topic.replace(/\s+/g, " ").trim().slice(0, 160)}\n\n${t.findings.trim()}`)
    ].join("\n\n")
    return body
  })

const headingKey = (title: string): string =>
  title
    .replace(/^[\d.)\s]+/, "")
    .replace(/[*_`]/g, "")
    .replace(/\s+/g, " ")
    .trim()
    .toLowerCase()

/** Whether a report's `##` sections are the outline's titles, in its order (others may come between them). */
export const followsOutline = (markdown: string, outline: ReadonlyArray<string>): boolean => {
  const headings = [...markdown.matchAll(/^\s{0,3}##\s+(.+?)\s*#*\s*$/gm)].map((m) => headingKey(m[1] ?? ""))
  let at = 0
  for (const title of outline) {
    const found = headings.indexOf(headingKey(title), at)
    if (found < 0) return false
    at = found + 1
  }
  return true
}

/** Words a long outline is given per section when no length was asked. */
export const wordsPerOutlineSection = 400

/**
 * The words a report written section by section aims at, or undefined when it is written in one call: the length
 * asked (or the outline's sections at `wordsPerOutlineSection`), lowered to what the budget can pay for.
 */
const sectionedWords = (task: Task, found: Material, model: LanguageModel.Service) =>
  Effect.gen(function* () {
    if (!ReportShape.isSectioned(task.config) || found.topics.length === 0) return undefined
    const asked = task.config.reportWords ?? (task.config.reportOutline?.length ?? 1) * wordsPerOutlineSection
    const affordable = ReportSections.affordableWords(yield* (yield* Budget.current).room("report", model.model), found)
    if (affordable === undefined || affordable >= asked) return asked
    yield* Effect.logWarning(`what is left of the budget pays for about ${affordable} of the ${asked} words asked`)
    return affordable >= ReportShape.sectionedAbove ? affordable : undefined
  })

/** Writes the report in one call (shaped as asked, its length given one second pass when it misses); undefined when the budget cannot pay. */
const single = (task: Task, found: Material, model: LanguageModel.Service, date: string) =>
  Effect.gen(function* () {
    const kind = Prompt.classify(task.query, task.brief?.brief)
    const shape = SectionsPrompt.shapeLines(task.config)
    const system = Prompt.system({
      today: date,
      language: task.language,
      kind,
      hasSources: found.sources.length > 0,
      shape
    })
    const parts = sections(task, found)
    const build = (
      shown: ReadonlyArray<Section>,
      outputTokens: number | undefined,
      extra: ReadonlyArray<LanguageModel.Message>
    ): LanguageModel.GenerateRequest => ({
      system,
      messages: [LanguageModel.user(shown.map((part) => part.content).join("\n\n")), ...extra],
      ...(outputTokens === undefined ? {} : { maxOutputTokens: outputTokens })
    })
    const budget = yield* Budget.current
    const limits = budgetFor(
      yield* budget.room("report", model.model),
      Tokens.estimateRequestTokens(build(parts.filter(isProtected), undefined, [])),
      model.maxOutputTokens
    )
    if (limits === "short") return undefined
    const call = (extra: ReadonlyArray<LanguageModel.Message>) =>
      ContextRecovery.generateSectioned(model, parts, (shown) => build(shown, limits?.outputTokens, extra), {
        limitTokens: limits?.inputTokens
      }).pipe(
        Effect.tap((completion) =>
          completion.finishReason === "length"
            ? Effect.logWarning(
                "the report reached the model's output limit and may end abruptly; raise the report role's output tokens" +
                  (limits === undefined ? "" : " or the budget")
              )
            : Effect.void
        )
      )
    const words = task.config.reportWords
    return yield* (
      words === undefined || found.sources.length === 0
        ? Effect.map(call([]), (completion) => StructuredOutput.stripThinking(completion.text))
        : ReportSections.lengthPass(words, call, StructuredOutput.stripThinking)
    ).pipe(
      // The router refuses a report the budget cannot cover after all: the findings stand instead.
      Effect.map((text): string | undefined => text),
      Effect.catchTag("ResearchBudgetExhausted", () => Effect.succeed(undefined))
    )
  })

/** Writes the report of the task from what the session found. */
export const run = Effect.fn("Synthesis.run")(function* (task: Task, session: Session) {
  const { language } = task
  const found = material(session)
  const date = yield* today
  const model = yield* ModelRouter.forRole("report")
  const words = yield* sectionedWords(task, found, model)
  const once = words === undefined ? yield* single(task, found, model, date) : undefined
  const outline = task.config.reportOutline
  // A report written in one call that did not follow the outline given is written again by its sections, whose titles
  // are the outline's: the outline is the user's, not a suggestion.
  const strayed =
    once !== undefined && outline !== undefined && found.topics.length > 0 && !followsOutline(once, outline)
  if (strayed)
    yield* Effect.logWarning("the report did not follow the outline given; it is written again by its sections")
  const written =
    words !== undefined || strayed
      ? yield* ReportSections.write(
          task,
          found,
          model,
          words ?? task.config.reportWords ?? (outline?.length ?? 1) * wordsPerOutlineSection,
          date
        )
      : once
  const text = written === undefined ? yield* findingsAsTheyAre(task, found) : written
  if (text === "") {
    return yield* Effect.fail(new ModelMalformedOutput({ reason: "the report model returned no text", raw: "" }))
  }
  const finalized = Citations.finalize(text, found.sources, Language.sourcesHeading(language))
  const grounding = groundingOf(session, found.sources.length)
  // A report that rests on no source says so first, in its own language, whatever the model wrote.
  const noticed =
    grounding.reason === undefined
      ? finalized.markdown
      : withNotice(finalized.markdown, Notices.noSourceNotice(language.code, grounding.reason))
  // With the check off, the report ends by saying its citations were not checked, where a checked one says how many.
  const markdown = task.config.verify
    ? noticed
    : `${noticed.trimEnd()}\n\n${VerificationNotices.notCheckedLine(language.code)}\n`
  // Strings, a count and citations made as such: not validated again.
  const report = new Report(
    {
      title: titleOf(finalized.markdown, task.query),
      markdown,
      citations: finalized.citations,
      language: language.name,
      droppedCitations: finalized.dropped,
      grounding
    },
    true
  )
  yield* ResearchEvents.publish({
    _tag: "ReportWritten",
    characters: report.markdown.length,
    citations: report.citations.length,
    droppedCitations: report.droppedCitations,
    sources: grounding.sources,
    ...(grounding.reason === undefined ? {} : { ungrounded: grounding.reason })
  })
  return report
})
