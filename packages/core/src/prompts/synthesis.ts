/**
 * The report prompt: the writer turns the researchers' findings into the final report, in the question's language,
 * shaped by the kind of question, citing the numbered sources inline.
 */
import type { Language } from "../internal/text/language.js"
import { reportInstruction } from "../internal/text/language.js"
import * as Untrusted from "./untrusted.js"

/** The kinds of question, each with its own report structure. */
export type QuestionKind = "comparison" | "enumeration" | "howto" | "literature_review" | "explanation"

const patterns: ReadonlyArray<readonly [QuestionKind, RegExp]> = [
  [
    "literature_review",
    /\b(literature review|systematic review|review of (the )?(literature|research|studies)|state of the art|survey of|meta-analys[ie]s|what does the research say)\b|文献综述|研究综述|综述|研究现状|文献回顾/i
  ],
  [
    "comparison",
    /\b(vs\.?|versus|compared? (to|with)|comparing|comparison|differences? between|better than|pros and cons|trade-?offs?|which is better|should (i|we) (use|choose|pick))\b|\bbetween \S.* and \S|对比|比较|区别|差异|相比|优劣|哪个更好/i
  ],
  [
    "howto",
    /^\s*(how (do|can|should|to) (i|we|you|one)?|how to|steps to|guide to|best way to|set up|setup|install|configure)\b|\bhow to\b|\bstep[- ]by[- ]step\b|如何|怎么|怎样|步骤|教程|指南/i
  ],
  [
    "enumeration",
    /^\s*(list|name|which|what are the (best|top|main|leading|most)|top \d+|best \w+)\b|\b(top \d+|list of|examples of|options for|alternatives to|best .+ for)\b|哪些|列举|列出|有哪些|推荐|排名/i
  ]
]

/** Tells the kind of question from its wording (the brief's wording is a fallback). */
export const classify = (question: string, brief?: string | undefined): QuestionKind => {
  for (const text of [question, brief ?? ""]) {
    for (const [kind, pattern] of patterns) if (pattern.test(text)) return kind
  }
  return "explanation"
}

const structures: Readonly<Record<QuestionKind, string>> = {
  comparison:
    "This is a comparison. Open with the verdict in a few sentences, then one section per item compared (or per " +
    "criterion when that reads better), then a comparison table of the criteria that matter, then when to choose " +
    "which. Compare like with like; say where evidence for one side is missing.",
  enumeration:
    "This asks for a list. Open with a one-paragraph overview, then the items themselves, one short section or " +
    "table row each with what sets it apart and the evidence, ordered by relevance (or as the question asks). If " +
    "the question names a number of items, give exactly that many.",
  howto:
    "This asks how to do something. Open with what the reader will achieve and what they need, then numbered " +
    "steps in order, each with the concrete command, setting or action, then pitfalls and how to check it worked.",
  literature_review:
    "This is a literature review. Open with the state of knowledge in a paragraph, then themes or lines of " +
    "research with the key studies (who, when, method, finding), where they agree and disagree, the quality of " +
    "the evidence, and open questions.",
  explanation:
    "This asks for an explanation. Open with a direct answer in a short paragraph, then sections that build the " +
    "understanding step by step (background, how it works, evidence, implications, limits), then a conclusion."
}

/** The report structure of a kind of question. */
export const structureOf = (kind: QuestionKind): string => structures[kind]

/** The writer's instructions. */
export const system = (input: {
  readonly today: string
  readonly language: Language
  readonly kind: QuestionKind
  readonly hasSources: boolean
  /** The shape the user asked for (length, outline, instructions), as `ReportSections.shapeLines` words it. */
  readonly shape?: ReadonlyArray<string> | undefined
}): string =>
  [
    `You write the final report of a research project. Today is ${input.today}.`,
    "",
    `Language: ${reportInstruction(input.language)}`,
    "",
    `Structure: ${structures[input.kind]}`,
    "Use a `#` title, `##` sections and `###` subsections; tables where they help. Be thorough: the reader " +
      "asked for research, not a summary, so keep the specific figures, dates, names and caveats the findings " +
      "give. Present conflicting evidence as such and weigh it.",
    "",
    "Never write meta commentary: no sentences about yourself, this report, the research process, the " +
      "researchers or the findings you were given (not 'Based on the research…', 'This report will…', 'I found…'). " +
      "State the content directly.",
    "",
    input.hasSources
      ? "Citations: support every factual claim with the numbers of the sources it rests on, inline as [n] right " +
        "after the claim, e.g. [3] or [2, 5]. Use only the numbers of the source list below, never a number that " +
        "is not in it, and never a URL or source you were not given. Do not write a source list or references " +
        "section: it is added after your text."
      : "No sources could be retrieved for this question. Say so in one sentence at the start, write only what is " +
        "well established, and do not cite anything.",
    ...(input.shape ?? []),
    "",
    Untrusted.notice
  ].join("\n")

/** A numbered source, as listed for the writer. */
export interface NumberedSource {
  readonly number: number
  readonly title: string
  readonly url: string
}

/** The source list section. */
export const sourceList = (sources: ReadonlyArray<NumberedSource>): string =>
  [
    "Numbered sources (cite these numbers):",
    Untrusted.wrap(
      { kind: "source list" },
      sources.map((s) => `[${s.number}] ${s.title.replace(/\s+/g, " ").slice(0, 200)} — ${s.url}`).join("\n")
    )
  ].join("\n")

/** One topic's findings, with their citations already numbered against the source list. */
export const findings = (index: number, topic: string, text: string): string =>
  [`Findings ${index}: ${topic.slice(0, 300)}`, Untrusted.wrap({ kind: "research findings" }, text)].join("\n")

/** The closing request. */
export const request = (language: Language): string =>
  `Write the report now, in ${language.name}, citing the numbered sources inline.`
