/**
 * What the supervisor reads: the evidence inventory after each round, and its conversation rebuilt from the session's
 * rounds before every call (so a resumed run continues exactly where the checkpoint left it).
 */
import * as Schema from "effect/Schema"
import * as LanguageModel from "../../LanguageModel.js"
import * as Prompt from "../../prompts/supervisor.js"
import { Directive, type IssuedDirective, type TopicResult } from "../../Research.js"
import type { Session } from "../../Session.js"
import type { Source } from "../../Source.js"
import type { Task } from "../../Task.js"
import { domainOf } from "./sourceQuality.js"

/** The names of the supervisor's tools, as its rebuilt conversation calls them. */
export const toolNames = { think: "think", conductResearch: "conductResearch" } as const

const qualityCounts = (sources: ReadonlyArray<Source>): string => {
  const count = (q: Source["quality"]) => sources.filter((s) => s.quality === q).length
  return `quality high ${count("high")}, medium ${count("medium")}, low ${count("low")}, unknown ${count("unknown")}`
}

const sourcesOf = (session: Session, directive: IssuedDirective, result: TopicResult | undefined) => {
  const found = session.sources.filter((s) => s.directiveId === directive.id)
  if (found.length > 0 || result === undefined) return found
  const ids = new Set(result.sourceIds)
  return session.sources.filter((s) => ids.has(s.id))
}

/** The evidence inventory over the rounds up to `uptoRound`: sources, domains and quality per topic and in total. */
export const inventory = (session: Session, uptoRound: number): string => {
  const lines: Array<string> = []
  const all: Array<Source> = []
  for (const round of session.rounds) {
    if (round.round > uptoRound) continue
    for (const directive of round.directives) {
      const result = round.results.find((r) => r.directiveId === directive.id)
      const topic = directive.directive.topic.replace(/\s+/g, " ").slice(0, 90)
      if (result === undefined) {
        lines.push(`- [${directive.id}] ${topic}: did not finish`)
        continue
      }
      if (result.status === "failed") {
        lines.push(`- [${directive.id}] ${topic}: failed, no evidence`)
        continue
      }
      const sources = sourcesOf(session, directive, result)
      all.push(...sources)
      const domains = [...new Set(sources.map((s) => domainOf(s.url)))]
      lines.push(
        `- [${directive.id}] ${topic}: ${sources.length} sources from ${domains.length} domains` +
          (domains.length > 0 ? ` (${domains.slice(0, 6).join(", ")}${domains.length > 6 ? ", …" : ""})` : "") +
          `; ${qualityCounts(sources)}; stopped: ${result.stopReason}`
      )
    }
  }
  const unique = [...new Map(all.map((s) => [s.id, s] as const)).values()]
  const domains = new Set(unique.map((s) => domainOf(s.url)))
  lines.push(`Total: ${unique.length} sources from ${domains.size} domains; ${qualityCounts(unique)}.`)
  return lines.join("\n")
}

const encodeDirective = Schema.encodeSync(Directive)

/** The supervisor's conversation, rebuilt from the session's rounds (from typed parts: not validated again). */
export const history = (
  session: Session,
  task: Pick<Task, "query" | "brief" | "constraints" | "library">,
  maxRounds: number
): ReadonlyArray<LanguageModel.Message> => {
  const messages: Array<LanguageModel.Message> = [LanguageModel.user(Prompt.task(task))]
  // A continuation's direction is asked after the rounds that came before it.
  const reopened = (afterRound: number) => {
    for (const c of session.continuations) {
      if (c.afterRound === afterRound) messages.push(LanguageModel.user(Prompt.continuation(c.direction, c.maxRounds)))
    }
  }
  reopened(0)
  for (const round of session.rounds) {
    const thinkCall =
      round.reflection === undefined
        ? []
        : [
            new LanguageModel.ToolCall(
              { id: `r${round.round}-think`, name: toolNames.think, arguments: { reflection: round.reflection } },
              true
            )
          ]
    const calls = round.directives.map(
      (d) =>
        new LanguageModel.ToolCall(
          { id: d.id, name: toolNames.conductResearch, arguments: encodeDirective(d.directive) },
          true
        )
    )
    if (thinkCall.length + calls.length === 0) continue
    messages.push(LanguageModel.assistant("", [...thinkCall, ...calls]))
    for (const call of thinkCall) messages.push(LanguageModel.toolResult(call, "Reflection recorded."))
    for (const [i, d] of round.directives.entries()) {
      const call = calls[i]
      if (call === undefined) continue
      const result = round.results.find((r) => r.directiveId === d.id)
      const content =
        result === undefined
          ? Prompt.directiveUnfinished(d.directive)
          : result.status === "failed"
            ? Prompt.directiveFailed(d.directive)
            : Prompt.directiveReport(
                d.directive,
                result.supervisorSummary.trim() === "" ? result.findings.slice(0, 1_500) : result.supervisorSummary,
                sourcesOf(session, d, result).length
              )
      messages.push(LanguageModel.toolResult(call, content, result === undefined || result.status === "failed"))
    }
    messages.push(
      LanguageModel.user(
        Prompt.afterRound({
          round: round.round,
          maxRounds,
          inventory: inventory(session, round.round),
          deferred: round.deferred
        })
      )
    )
    reopened(round.round)
  }
  return messages
}
