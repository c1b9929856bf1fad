/**
 * The simulated model's mind: what it answers to a conversation. It reads the tools offered and the response format
 * (or, for a model without tool calling, core's JSON action protocol in the system prompt) and plays the supervisor,
 * the researcher, a structured-output step or the writer, so a simulated run goes through every phase. The wire
 * shape of each decision is in `simulatedReplies.ts`.
 */
import { type Conversation, numbered, pageTextOf, promptedSchema, sentence, subjectOf } from "./conversation.js"
import { isReportPlan, reportPlan } from "./reportPlan.js"
import { fakeFromSchema, type FakeContext } from "./fake.js"
import { followUpAnswer, isFollowUp } from "./followUpAnswer.js"
import { claimVerdicts, isClaimCheck } from "./verifier.js"
import { getObjects, getString } from "../wire/json.js"
import type { Refusals } from "./localServers.js"

/** The simulation's options with their defaults filled in. */
export interface Settings {
  readonly directives: number
  readonly supervisorRounds: number
  readonly searchRounds: number
  readonly resultsPerQuery: number
  readonly refuse: Refusals
}

/** What the model answers: text, a JSON value (as text, or as the arguments of a forced tool), or tool calls. */
export type Decision =
  | { readonly kind: "text"; readonly text: string }
  | { readonly kind: "json"; readonly value: unknown; readonly tool: string | undefined }
  | { readonly kind: "tools"; readonly calls: ReadonlyArray<{ readonly name: string; readonly arguments: unknown }> }

const countCalls = (conversation: Conversation, name: string): number =>
  conversation.turns.reduce((n, turn) => n + turn.toolCalls.filter((call) => call === name).length, 0)

const assistantTurns = (conversation: Conversation, name: string): number =>
  conversation.turns.filter((turn) => turn.toolCalls.includes(name)).length

const directiveAngles = [
  "the current evidence, key figures and how they were measured",
  "the main arguments, stakeholders and competing perspectives",
  "recent developments, open questions and what experts expect next",
  "practical consequences and documented case studies",
  "the history and the definitions that frame the debate"
]

/** A tool call whose arguments are made from the tool's schema as the request sent it, worded after the hints. */
const callOf = (
  conversation: Conversation,
  name: string,
  fake: FakeContext,
  hints: Readonly<Record<string, unknown>>
): { readonly name: string; readonly arguments: unknown } => ({
  name,
  arguments: fakeFromSchema(conversation.tools.get(name), { ...fake, hints })
})

/** A finished research reopened in a new direction: the turns after the user asked for it, and the direction. */
const continued = (conversation: Conversation): Conversation => {
  const at = conversation.turns.reduce(
    (last, turn, i) => (turn.role === "user" && turn.text.includes("The user now asks to go deeper") ? i : last),
    -1
  )
  return at < 0 ? conversation : { ...conversation, turns: conversation.turns.slice(at) }
}

const supervisorTurn = (whole: Conversation, options: Settings, fake: FakeContext): Decision => {
  // A continuation runs its own rounds (one), on its direction.
  const conversation = continued(whole)
  const reopened = conversation !== whole
  if (assistantTurns(conversation, "conductResearch") >= (reopened ? 1 : options.supervisorRounds)) {
    return { kind: "tools", calls: [callOf(conversation, "researchComplete", fake, {})] }
  }
  const direction = /go deeper in this direction:\n([^\n]*)/.exec(conversation.turns[0]?.text ?? "")?.[1]
  const subject = reopened && direction !== undefined ? direction : subjectOf(whole)
  const round = assistantTurns(conversation, "conductResearch") + (reopened ? 1 : 0)
  const count = Math.max(1, round === 0 ? options.directives : Math.min(2, options.directives))
  const calls = Array.from({ length: count }, (_, i) => {
    const angle = directiveAngles[(round * count + i) % directiveAngles.length] ?? "the evidence"
    return callOf(conversation, "conductResearch", fake, {
      topic: `Research ${angle} regarding: ${subject.replace(/[.?!]+$/, "")}. Gather specific, sourced facts and note any disagreement.`,
      perspective: `An analyst focused on ${angle.split(",")[0] ?? angle}`,
      evidenceNeeded: "Figures with dates, primary sources and named studies",
      priority: 1 + (i % 3)
    })
  })
  return { kind: "tools", calls }
}

const researcherTurn = (conversation: Conversation, options: Settings): Decision => {
  const subject = subjectOf(conversation)
  const fake: FakeContext = { subject, index: 0 }
  if (countCalls(conversation, "webSearch") < options.searchRounds) {
    const round = countCalls(conversation, "webSearch")
    const base = subject
    const queries =
      round === 0 ? [base.slice(0, 120), `${base.slice(0, 100)} statistics`] : [`${base.slice(0, 100)} criticism`]
    const search = callOf(conversation, "webSearch", fake, { queries })
    // Told that the results of a last search still reach its findings, it ends in the same turn as that search.
    const last =
      round === options.searchRounds - 1 && /call researchComplete in the same turn/i.test(conversation.system)
    return { kind: "tools", calls: last ? [search, completion(conversation, subject, fake, true)] : [search] }
  }
  return { kind: "tools", calls: [completion(conversation, subject, fake)] }
}

/**
 * `researchComplete`, its summary citing what the results so far have shown. Sent with a search (`searching`), whose
 * results reach the findings after it, a summary with no results yet says so rather than that nothing was found.
 */
const completion = (conversation: Conversation, subject: string, fake: FakeContext, searching = false) => {
  // Results arrive as tool messages, or as user messages under the JSON action protocol.
  const sources = numbered(
    conversation.turns
      .slice(1)
      .filter((turn) => turn.role !== "assistant")
      .map((t) => t.text)
      .join("\n")
  )
  const summary =
    sources.length === 0
      ? searching
        ? `The findings on ${subject} are in the results of the search sent with this summary.`
        : `No usable sources were found on ${subject}.`
      : sources
          .slice(0, 5)
          .map((source) => `${sentence(source.line, `A source addresses ${subject}`)} [${source.n}]`)
          .join(" ")
  return callOf(conversation, "researchComplete", fake, { summary })
}

const reportText = (conversation: Conversation): string => {
  const all = [conversation.system, ...conversation.turns.map((turn) => turn.text)].join("\n")
  const subject = subjectOf(conversation).replace(/[.?!]$/, "")
  const sources = numbered(all).slice(0, 8)
  const cite = (i: number): string => {
    const source = sources[i % Math.max(1, sources.length)]
    return source === undefined ? "" : ` [${source.n}]`
  }
  const findings = sources.map((source) => `${sentence(source.line, `Evidence on ${subject}`)} [${source.n}]`)
  if (!/final report/i.test(conversation.system)) {
    // Intermediate writing (compression, notes): the findings themselves, each cited.
    return findings.length > 0 ? findings.join("\n\n") : `The available evidence on ${subject} is limited.`
  }
  const outline = outlineOf(conversation.system)
  const target = targetWords(conversation) ?? (outline.length > 0 ? outline.length * 150 : undefined)
  if (target !== undefined) return sizedReport(conversation, subject, findings, target, outline)
  return [
    `# ${subject}`,
    "",
    `${subject} has been examined from several angles, with measured effects and open questions${cite(0)}.`,
    "",
    "## Key findings",
    "",
    ...(findings.length > 0 ? findings.map((f) => `- ${f}`) : [`- The available evidence on ${subject} is limited.`]),
    "",
    "## Conclusion",
    "",
    `The evidence points in a consistent direction, though independent replication remains scarce${cite(1)}.`
  ].join("\n")
}

/** The length a writing prompt asks for (`Length: about N words`), the latest turn's when a second pass asks again. */
const targetWords = (conversation: Conversation): number | undefined => {
  const again = [...conversation.turns].reverse().find((turn) => turn.role === "user")?.text ?? ""
  const asked = /should have about (\d+)/.exec(again) ?? /Length: about (\d+) words/.exec(conversation.system)
  return asked === null ? undefined : Number(asked[1])
}

/** The sections a report prompt lists (`Sections: ... use exactly these`), in order. */
const outlineOf = (system: string): ReadonlyArray<string> => {
  const block = /Sections: [^\n]*use exactly these[^\n]*\n((?:\d+\. [^\n]*\n?)+)/.exec(system)?.[1] ?? ""
  return [...block.matchAll(/^\d+\. (.+)$/gm)].map((m) => (m[1] ?? "").trim())
}

const wordCount = (text: string): number =>
  text
    .replace(/\[\d+(?:,\s*\d+)*\]/g, " ")
    .split(/\s+/)
    .filter((word) => /\w/.test(word)).length

const connectives = ["", "In particular, ", "By the same measure, ", "Another source adds that ", "Notably, "]

/**
 * Prose of about `target` words from the cited findings, in paragraphs of four sentences: what a model told a length
 * writes. A section or the introduction and conclusion are their body alone; a whole report has a title and sections.
 */
const sizedReport = (
  conversation: Conversation,
  subject: string,
  findings: ReadonlyArray<string>,
  target: number,
  outline: ReadonlyArray<string> = []
): string => {
  const base = findings.length > 0 ? findings : [`The available evidence on ${subject} is limited.`]
  const whole = !/^You write (one section|the introduction|the conclusion)/.test(conversation.system)
  const sentences: Array<string> = []
  let words = whole ? wordCount(`# ${subject} ## Findings`) : 0
  for (let i = 0; words < target; i++) {
    const connective = connectives[Math.floor(i / base.length) % connectives.length] ?? ""
    const found = base[i % base.length] ?? ""
    const line = connective === "" ? found : connective + found.charAt(0).toLowerCase() + found.slice(1)
    sentences.push(line)
    words += wordCount(line)
  }
  const paragraphs: Array<string> = []
  for (let i = 0; i < sentences.length; i += 4) paragraphs.push(sentences.slice(i, i + 4).join(" "))
  if (!whole) return paragraphs.join("\n\n")
  if (outline.length === 0) return [`# ${subject}`, "## Findings", ...paragraphs].join("\n\n")
  // The sections asked for, in order, the paragraphs shared among them.
  const each = Math.max(1, Math.ceil(paragraphs.length / outline.length))
  return [
    `# ${subject}`,
    ...outline.flatMap((title, i) => [`## ${title}`, ...paragraphs.slice(i * each, (i + 1) * each)])
  ].join("\n\n")
}

const actionNames = (text: string): ReadonlyArray<string> => {
  try {
    return getObjects(JSON.parse(text), "actions").map((action) => getString(action, "tool", ""))
  } catch {
    return []
  }
}

/**
 * A model without tool calling gets the tools in its system prompt (core's JSON action protocol) and its earlier
 * actions as JSON text: read both back, so the agent turns work the same.
 */
const actionProtocol = (conversation: Conversation): Conversation | undefined => {
  if (!conversation.system.includes("You act through tools.")) return undefined
  const tools = new Map<string, unknown>()
  for (const match of conversation.system.matchAll(/^- ([A-Za-z0-9_-]+): [^\n]*\n {2}arguments: (.+)$/gm)) {
    const name = match[1] ?? ""
    try {
      tools.set(name, JSON.parse(match[2] ?? ""))
    } catch {
      tools.set(name, undefined)
    }
  }
  const turns = conversation.turns.map((turn) =>
    turn.role === "assistant" ? { ...turn, toolCalls: actionNames(turn.text) } : turn
  )
  return { ...conversation, tools, turns }
}

/**
 * Whether a request is too bare to research as asked, as a real model would judge one: a topic of one or two words
 * ("heat pumps", "laptops?") says neither which aspect nor for whom. Such a request gets a clarifying question (where
 * the step asks for `needClarification`), so that a simulated run can try that path; a longer one never does.
 */
export const needsClarification = (subject: string): boolean => {
  const words = subject
    .replace(/[?？!.]+$/, "")
    .trim()
    .split(/\s+/)
    .filter((word) => word !== "")
  return words.length > 0 && words.length <= 2
}

/** The model's answer to a conversation. */
export const decide = (conversation: Conversation, options: Settings): Decision => {
  const protocol = actionProtocol(conversation)
  if (protocol !== undefined) {
    const turn = protocol.tools.has("conductResearch")
      ? supervisorTurn(protocol, options, { subject: subjectOf(protocol), index: 0 })
      : protocol.tools.has("webSearch")
        ? researcherTurn(protocol, options)
        : undefined
    if (turn?.kind === "tools") {
      const actions = turn.calls.map((call) => ({ tool: call.name, arguments: call.arguments }))
      return { kind: "text", text: JSON.stringify({ actions }) }
    }
  }
  if (isFollowUp(conversation)) {
    return { kind: "json", value: followUpAnswer(conversation), tool: conversation.forcedTool }
  }
  if (isClaimCheck(conversation)) {
    return { kind: "json", value: claimVerdicts(conversation), tool: conversation.forcedTool }
  }
  const subject = subjectOf(conversation)
  if (isReportPlan(conversation)) {
    return { kind: "json", value: reportPlan(conversation, subject), tool: conversation.forcedTool }
  }
  const fake: FakeContext = {
    subject,
    index: 0,
    pageText: pageTextOf(conversation),
    ...(needsClarification(subject) ? { hints: { needClarification: true } } : {})
  }
  if (conversation.responseSchema !== undefined) {
    return { kind: "json", value: fakeFromSchema(conversation.responseSchema, fake), tool: undefined }
  }
  const forced = conversation.forcedTool
  if (forced !== undefined && !["conductResearch", "webSearch", "extractContent"].includes(forced)) {
    return { kind: "json", value: fakeFromSchema(conversation.tools.get(forced), fake), tool: forced }
  }
  const prompted = promptedSchema(
    [conversation.system, ...conversation.turns.filter((t) => t.role === "user").map((t) => t.text)].join("\n")
  )
  if (prompted !== undefined) return { kind: "json", value: fakeFromSchema(prompted, fake), tool: undefined }
  if (conversation.tools.has("conductResearch")) return supervisorTurn(conversation, options, fake)
  if (conversation.tools.has("webSearch")) return researcherTurn(conversation, options)
  return { kind: "text", text: reportText(conversation) }
}
