/**
 * A whole research run from a script, with no keys and no network: every role of the pipeline answered by a scripted
 * model (clarification, brief, the supervisor's rounds, researchers, summaries, compression, the report and the
 * verification of its citations), over a static web, a memory session store and an event stream. A test states what
 * matters to it (the directives, the pages found, the report) and the rest is answered plausibly.
 *
 * Also the typed replies each role and tool takes, for scripts written by hand with `ScriptedModel`: the tool names
 * and argument shapes are the pipeline's own. The summarisation role answers two schemas, the fetch-time summary of
 * a page (`source_summary`) and the verification of a report's cited sentences (`claim_verdicts`); the scripted
 * models here declare native structured output, so each request names its schema and is answered in it.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Researcher from "../phases/Researcher.js"
import * as Supervisor from "../phases/Supervisor.js"
import type * as ClaimVerification from "../ClaimVerification.js"
import type * as ContentExtractor from "../ContentExtractor.js"
import type * as FollowUp from "../FollowUp.js"
import type * as LanguageModel from "../LanguageModel.js"
import type * as ModelRouter from "../ModelRouter.js"
import type { Brief, Clarification, Directive as ResearchDirective, SupportLabel } from "../Research.js"
import * as ResearchEvents from "../ResearchEvents.js"
import type * as SearchProvider from "../SearchProvider.js"
import type * as SessionStore from "../SessionStore.js"
import * as Summarizer from "../Summarizer.js"
import * as MemorySessionStore from "./MemorySessionStore.js"
import * as ScriptedModel from "./ScriptedModel.js"
import * as StaticWeb from "./StaticWeb.js"

// =============================================================================
// Replies, typed as the pipeline reads them
// =============================================================================

/** The supervisor's tools as the pipeline sends and decodes them. */
export const supervisorTools = {
  think: Supervisor.think,
  conductResearch: Supervisor.conductResearch,
  researchComplete: Supervisor.researchComplete
} as const

/** The researcher's tools as the pipeline sends and decodes them, sized by a configuration's limits. */
export const researcherTools: typeof Researcher.makeTools = Researcher.makeTools

/** The clarification role's answer. */
export const clarification = (value: typeof Clarification.Encoded): ScriptedModel.Reply => ScriptedModel.json(value)

/** The brief role's answer. */
export const brief = (value: typeof Brief.Encoded): ScriptedModel.Reply => ScriptedModel.json(value)

/** The supervisor's `think` tool call. */
export const supervisorThink = (reflection: string): ScriptedModel.ScriptedToolCall => ({
  name: "think",
  arguments: { reflection }
})

/** The supervisor's `conductResearch` tool call: one directive for one researcher. */
export const conductResearch = (directive: typeof ResearchDirective.Encoded): ScriptedModel.ScriptedToolCall => ({
  name: "conductResearch",
  arguments: directive
})

/** The supervisor's `researchComplete` tool call: research ends and the report is written. */
export const supervisorComplete: ScriptedModel.ScriptedToolCall = { name: "researchComplete", arguments: {} }

/** The researcher's `webSearch` tool call. */
export const webSearch = (...queries: ReadonlyArray<string>): ScriptedModel.ScriptedToolCall => ({
  name: "webSearch",
  arguments: { queries }
})

/** The researcher's `extractContent` tool call. */
export const extractContent = (...urls: ReadonlyArray<string>): ScriptedModel.ScriptedToolCall => ({
  name: "extractContent",
  arguments: { urls }
})

/** The researcher's `think` tool call. */
export const think = (reflection: string): ScriptedModel.ScriptedToolCall => ({
  name: "think",
  arguments: { reflection }
})

/** The researcher's `researchComplete` tool call: its findings, citing the results it saw as `[n]`. */
export const researchComplete = (summary: string): ScriptedModel.ScriptedToolCall => ({
  name: "researchComplete",
  arguments: { summary }
})

/** The summarisation role's fetch-time summary of a page (schema `source_summary`). */
export const sourceSummary = (value: {
  readonly summary: string
  readonly excerpts: ReadonlyArray<string>
}): ScriptedModel.Reply => ScriptedModel.json(value)

/** The summarisation role's verdicts on a batch of cited sentences (schema `claim_verdicts`). */
export const verdicts = (value: ClaimVerification.Answer): ScriptedModel.Reply => ScriptedModel.json(value)

/** The compression role's answer: the findings with their citations, then the brief the supervisor reads. */
export const compression = (findings: string, covered: string): ScriptedModel.Reply =>
  [
    "## Findings",
    findings,
    "",
    "## Supervisor brief",
    `Covered: ${covered}`,
    `Key findings: ${findings}`,
    "Confidence: medium",
    "Gaps: none"
  ].join("\n")

// =============================================================================
// A whole run
// =============================================================================

/** A directive of the script, and how its researcher goes about it. */
export interface Directive {
  /** The paragraph the researcher is given. */
  readonly topic: string
  readonly perspective?: string | undefined
  readonly evidenceNeeded?: string | undefined
  readonly priority?: 1 | 2 | 3 | undefined
  /** The researcher's searches, in one call; the topic by default. */
  readonly queries?: ReadonlyArray<string> | undefined
  /** Pages the researcher reads in full after searching; none by default. */
  readonly extract?: ReadonlyArray<string> | undefined
  /** The researcher's findings, citing what it saw as `[n]`; one sentence citing `[1]` by default. */
  readonly findings?: string | undefined
}

/** A scripted run: what each role answers. Everything but the pages has a default. */
export interface Script {
  /** The pages the web holds: searches rank them by the query's words. */
  readonly pages: ReadonlyArray<StaticWeb.Page>
  /** The clarification decision; not needed by default. */
  readonly clarification?: typeof Clarification.Encoded | undefined
  /** The brief, or only its text. */
  readonly brief?: string | typeof Brief.Encoded | undefined
  /** The supervisor's rounds: the directives (or only their topics) it delegates in each; it completes after them. */
  readonly rounds?: ReadonlyArray<ReadonlyArray<string | Directive>> | undefined
  /**
   * The report, citing the sources as `[n]` in the order the run found them; or the report role's script (a long
   * report's plan, sections, introduction and conclusion are each a call of it).
   */
  readonly report?: string | ScriptedModel.Script | undefined
  /** The verdict on every cited sentence; `supported` by default. */
  readonly verdict?: SupportLabel | undefined
  /** The supervisor's rounds after the session is reopened in a new direction (`FollowUp.extend`); none by default. */
  readonly continuationRounds?: ReadonlyArray<ReadonlyArray<string | Directive>> | undefined
  /** The report written after a continuation; `report` by default. */
  readonly continuationReport?: string | undefined
  /** The answer to a follow-up question (`FollowUp.ask`); covered, citing `[1]`, by default. */
  readonly answer?: typeof FollowUp.ModelAnswer.Encoded | undefined
}

const defaultTopic = "Find the primary sources on the question and what they say."

const roundsOf = (rounds: ReadonlyArray<ReadonlyArray<string | Directive>>): ReadonlyArray<ReadonlyArray<Directive>> =>
  rounds.map((round) => round.map((directive) => (typeof directive === "string" ? { topic: directive } : directive)))

const directivesOf = (script: Script): ReadonlyArray<ReadonlyArray<Directive>> =>
  roundsOf(script.rounds ?? [[defaultTopic]])

const firstUserText = (request: LanguageModel.GenerateRequest): string => {
  const first = request.messages.find((message) => message._tag === "user")
  return first?._tag === "user" ? first.content : ""
}

const allText = (request: LanguageModel.GenerateRequest): string =>
  [request.system ?? "", ...request.messages.map((message) => message.content)].join("\n")

const findingsOf = (directive: Directive): string =>
  directive.findings ?? `What the sources say on this topic, in brief [1].`

/** What the supervisor's conversation says when a finished research is reopened in a new direction. */
const continuationMarker = "The user now asks to go deeper"

/** Whether a request carries the brief of a reopened session (the report's does). */
const reopenedBrief = (request: LanguageModel.GenerateRequest): boolean =>
  allText(request).includes("The user later asked to go deeper")

/** The supervisor's turn that delegates one round. */
const delegating = (round: ReadonlyArray<Directive>): ScriptedModel.Reply =>
  ScriptedModel.toolCalls(
    ...round.map((d) =>
      conductResearch({
        topic: d.topic,
        perspective: d.perspective ?? "the evidence",
        evidenceNeeded: d.evidenceNeeded ?? "primary sources",
        priority: d.priority ?? 1
      })
    )
  )

/** The scripts of every role for a scripted run. */
export const scripts = (script: Script): ScriptedModel.RouterScripts => {
  const rounds = directivesOf(script)
  const continuationRounds = roundsOf(script.continuationRounds ?? [])
  const directives = [...rounds, ...continuationRounds].flat()
  // The directive a researcher or compression request is about: the one whose topic it carries (longest first, so
  // that a topic that contains another is not mistaken for it).
  const byLength = [...directives].sort((a, b) => b.topic.length - a.topic.length)
  const directiveOf = (text: string): Directive => byLength.find((d) => text.includes(d.topic)) ?? { topic: "" }
  const researcher: ScriptedModel.Script = (request) => {
    const directive = directiveOf(firstUserText(request))
    const turn = request.messages.filter((message) => message._tag === "assistant").length
    const steps: ReadonlyArray<ScriptedModel.ScriptedToolCall> = [
      webSearch(...(directive.queries ?? [directive.topic])),
      ...(directive.extract !== undefined && directive.extract.length > 0
        ? [extractContent(...directive.extract)]
        : []),
      researchComplete(findingsOf(directive))
    ]
    return ScriptedModel.toolCalls(steps[Math.min(turn, steps.length - 1)] ?? researchComplete(findingsOf(directive)))
  }
  const summarization: ScriptedModel.Script = (request) => {
    if (request.responseFormat?.name === "claim_verdicts") {
      const ids = [...allText(request).matchAll(/<sentence id="(\d+)"/g)].map((match) => Number(match[1]))
      const label = script.verdict ?? "supported"
      return verdicts({
        verdicts: ids.map((claim) => ({ claim, label, explanation: "scripted verdict", citations: [] }))
      })
    }
    return sourceSummary({ summary: "What the page says, in brief.", excerpts: [] })
  }
  const briefValue: typeof Brief.Encoded =
    typeof script.brief === "object"
      ? script.brief
      : {
          brief: script.brief ?? "Research the question as asked, from primary sources.",
          scope: { include: [], exclude: [] },
          sourcePreferences: ["primary sources"],
          language: "English"
        }
  return {
    default: ["unexpected call"],
    roles: {
      clarification: {
        script: [clarification(script.clarification ?? { needClarification: false, question: "", verification: "" })],
        capabilities: { structuredOutput: true }
      },
      brief: { script: [brief(briefValue)], capabilities: { structuredOutput: true } },
      supervisor: (request, { call }) => {
        // After a continuation's direction, its own rounds; before it, the research's, counted by calls.
        const reopened = request.messages.reduce(
          (last, m, index) => (m._tag === "user" && m.content.includes(continuationMarker) ? index : last),
          -1
        )
        const turn =
          reopened < 0 ? call - 1 : request.messages.slice(reopened).filter((m) => m._tag === "assistant").length
        const round = (reopened < 0 ? rounds : continuationRounds)[turn]
        return round === undefined ? ScriptedModel.toolCalls(supervisorComplete) : delegating(round)
      },
      researcher,
      summarization: { script: summarization, capabilities: { structuredOutput: true } },
      compression: (request) => {
        const directive = directiveOf(allText(request))
        return compression(findingsOf(directive), directive.topic)
      },
      report:
        script.report !== undefined && typeof script.report !== "string"
          ? script.report
          : {
              script: (request) => {
                if (request.responseFormat?.name === "follow_up_answer") {
                  return ScriptedModel.json(
                    script.answer ?? { covered: true, answer: "What the stored sources say on it [1].", direction: "" }
                  )
                }
                const report =
                  typeof script.report === "string" ? script.report : "# Report\n\nWhat the sources say [1]."
                return allText(request).includes(continuationMarker) || reopenedBrief(request)
                  ? (script.continuationReport ?? report)
                  : report
              },
              capabilities: { structuredOutput: true }
            }
    }
  }
}

/** Everything `Pipeline.research` needs, scripted: the models of every role (and their log), the web, a store. */
export const layer = (
  script: Script
): Layer.Layer<
  | ModelRouter.ModelRouter
  | ScriptedModel.ScriptedLog
  | Summarizer.Summarizer
  | SearchProvider.SearchProvider
  | ContentExtractor.ContentExtractor
  | SessionStore.SessionStore
  | ResearchEvents.ResearchEvents
> =>
  Layer.mergeAll(
    Layer.provideMerge(Summarizer.layer, ScriptedModel.layerRouter(scripts(script))),
    StaticWeb.layer({ pages: script.pages }),
    MemorySessionStore.layer,
    ResearchEvents.layer
  )

/** The calls the run made, by role, in order. */
export const calls: Effect.Effect<
  ReadonlyArray<ScriptedModel.RecordedCall>,
  never,
  ScriptedModel.ScriptedLog
> = ScriptedModel.calls
