/**
 * The simulated model's plan of a long report (core's report role asks for `report_plan` before writing by sections):
 * one section per aspect the research covered, titled by what its findings were about ("Current evidence", "Main
 * arguments"), then a conclusion; with the user's outline, their titles, each drawing on every finding. A plan filled
 * from the schema alone titled every section and the conclusion with the question.
 */
import type { Conversation } from "./conversation.js"

/** Whether the conversation asks for the plan of a long report. */
export const isReportPlan = (conversation: Conversation): boolean =>
  conversation.system.startsWith("You plan a long research report")

/** A finding's topic as a section title: what the directive researched, up to its first comma. */
const titleOf = (topic: string): string => {
  const asked = /^Research (?:the )?(.+?) regarding:/i.exec(topic)?.[1] ?? topic
  const title = (asked.split(/,| and /)[0] ?? asked).trim().split(/\s+/).slice(0, 8).join(" ")
  return title.charAt(0).toUpperCase() + title.slice(1)
}

/** The plan: its title, its sections with the findings each draws on, and the conclusion's title. */
export const reportPlan = (conversation: Conversation, subject: string) => {
  const material = conversation.turns.map((turn) => turn.text).join("\n")
  const findings = [...material.matchAll(/^Findings (\d+): (.+)$/gm)].map((m) => ({
    number: Number(m[1]),
    title: titleOf(m[2] ?? "")
  }))
  const outline = [
    ...(/The user gave the sections:[^\n]*\n((?:\d+\. [^\n]*\n?)+)/.exec(conversation.system)?.[1] ?? "").matchAll(
      /^\d+\. (.+)$/gm
    )
  ].map((m) => (m[1] ?? "").trim())
  const every = findings.map((f) => f.number)
  // Findings about the same aspect share its section.
  const byTitle = new Map<string, Array<number>>()
  for (const finding of findings) byTitle.set(finding.title, [...(byTitle.get(finding.title) ?? []), finding.number])
  const sections =
    outline.length > 0
      ? outline.map((title) => ({ title, findings: every }))
      : [...byTitle].map(([title, numbers]) => ({ title, findings: numbers }))
  return { title: subject, sections, conclusionTitle: "Conclusion" }
}
