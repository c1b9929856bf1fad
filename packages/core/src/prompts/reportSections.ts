/**
 * The prompts of a report asked for in a shape (`ReportShape`): what the single report call is told of the length,
 * the outline and the user's instructions, and, for a long report written section by section, the plan, each
 * section, the introduction and conclusion, and the second pass on a part whose length missed its target.
 */
import * as Schema from "effect/Schema"
import type { Language } from "../internal/text/language.js"
import { reportInstruction } from "../internal/text/language.js"
import * as ReportShape from "../ReportShape.js"
import * as Untrusted from "./untrusted.js"

/** The report's plan: its title, its sections in order with the findings each draws on, the conclusion's title. */
export const Plan = Schema.Struct({
  title: Schema.String.annotations({ description: "The report's title, in the report's language" }),
  sections: Schema.Array(
    Schema.Struct({
      title: Schema.String.annotations({ description: "The section's title, in the report's language" }),
      findings: Schema.Array(Schema.Int).annotations({
        description: "The numbers of the findings this section draws on (see 'Findings n')"
      })
    })
  ),
  conclusionTitle: Schema.String.annotations({ description: "The conclusion's title, in the report's language" })
})
export type Plan = typeof Plan.Type

const bounds = (words: number): string => {
  const low = Math.round(words * (1 - ReportShape.tolerance))
  const high = Math.round(words * (1 + ReportShape.tolerance))
  return `about ${words} words (between ${low} and ${high}), not counting the source list`
}

/** The length line every writing prompt carries, read by the emulator too: `Length: about N words`. */
export const length = (words: number): string =>
  `Length: ${bounds(words)}. Reach it with the findings' substance (figures, dates, names, caveats, comparisons), ` +
  "never with filler, repetition or generalities; if the findings cannot fill it, write less."

/** The user's own instructions for the report, given as theirs. */
export const instructions = (text: string): string =>
  `The user's instructions for the report (audience, tone, what to stress); follow them within the rules above:\n${text.trim()}`

/** The user's outline, for the single report call. */
export const outline = (titles: ReadonlyArray<string>): string =>
  [
    "Sections: after the title, use exactly these `##` sections, in this order and with these titles:",
    ...titles.map((title, i) => `${i + 1}. ${title}`)
  ].join("\n")

/** What the single report call is told of the shape the user asked for, as lines for its system prompt. */
export const shapeLines = (config: {
  readonly reportWords?: number | undefined
  readonly reportOutline?: ReadonlyArray<string> | undefined
  readonly reportInstructions?: string | undefined
}): ReadonlyArray<string> => [
  ...(config.reportOutline === undefined ? [] : ["", outline(config.reportOutline)]),
  ...(config.reportWords === undefined ? [] : ["", length(config.reportWords)]),
  ...(config.reportInstructions === undefined || config.reportInstructions.trim() === ""
    ? []
    : ["", instructions(config.reportInstructions)])
]

const common = (language: Language, userInstructions: string | undefined): ReadonlyArray<string> => [
  `Language: ${reportInstruction(language)}`,
  "",
  "Never write meta commentary: no sentences about yourself, this report, the research process or the findings you " +
    "were given. State the content directly.",
  "",
  "Citations: support every factual claim with the numbers of the sources it rests on, inline as [n] right after the " +
    "claim, e.g. [3] or [2, 5]. Use only numbers of the source list you are given, never another, and never a URL. " +
    "Do not write a source list.",
  ...(userInstructions === undefined || userInstructions.trim() === "" ? [] : ["", instructions(userInstructions)]),
  "",
  Untrusted.notice
]

/** The planner's instructions: the sections of a long report and the findings each draws on. */
export const planSystem = (input: {
  readonly today: string
  readonly language: Language
  readonly structure: string
  readonly words: number
  readonly outline: ReadonlyArray<string> | undefined
}): string =>
  [
    `You plan a long research report of about ${input.words} words, to be written section by section. Today is ${input.today}.`,
    "",
    `Language of the titles: ${reportInstruction(input.language)}`,
    "",
    `Structure: ${input.structure}`,
    "",
    input.outline === undefined
      ? "Choose the report's sections (an introduction and a conclusion are written apart: do not plan them). Each " +
        "section must stand on its own findings, so that the sections can be written at the same time; give each " +
        "the numbers of the findings it draws on. Every finding should belong to at least one section."
      : [
          "The user gave the sections: plan exactly these, in this order, with these titles, and give each the " +
            "numbers of the findings it draws on:",
          ...input.outline.map((title, i) => `${i + 1}. ${title}`)
        ].join("\n"),
    "",
    Untrusted.notice
  ].join("\n")

/** The writer's instructions for one section. */
export const sectionSystem = (input: {
  readonly today: string
  readonly language: Language
  readonly title: string
  readonly words: number
  readonly instructions: string | undefined
}): string =>
  [
    `You write one section of the final report of a research project: the section "${input.title}". ` +
      `Today is ${input.today}.`,
    "",
    "Write only the section's body: no title, no `#` or `##` heading (`###` subsections are fine), no introduction " +
      "or conclusion of the whole report. Keep the specific figures, dates, names and caveats of the findings, and " +
      "weigh conflicting evidence.",
    "",
    length(input.words),
    "",
    ...common(input.language, input.instructions)
  ].join("\n")

/** The writer's instructions for the introduction or the conclusion, written from the sections. */
export const framingSystem = (input: {
  readonly today: string
  readonly language: Language
  readonly part: "introduction" | "conclusion"
  readonly words: number
  readonly instructions: string | undefined
}): string =>
  [
    `You write the ${input.part} of the final report of a research project, from its sections. Today is ${input.today}.`,
    "",
    input.part === "introduction"
      ? "Open with the direct answer to the question in a short paragraph, then say what the report covers. No heading."
      : "Draw the conclusions the sections support: the answer, how sure it is and why, what remains open. No heading.",
    "Cite the sources the sections cite for each claim, with the same numbers.",
    "",
    length(input.words),
    "",
    ...common(input.language, input.instructions)
  ].join("\n")

/** The user message of a plan, a section or the framing: the question and the material, each part in its block. */
export const material = (parts: ReadonlyArray<string>): string => parts.filter((part) => part !== "").join("\n\n")

/** The written sections, as the introduction and conclusion read them. */
export const writtenSections = (sections: ReadonlyArray<{ readonly title: string; readonly body: string }>): string =>
  [
    "The report's sections:",
    Untrusted.wrap(
      { kind: "report sections" },
      sections.map((section) => `## ${section.title}\n\n${section.body}`).join("\n\n")
    )
  ].join("\n")

/** The second pass on a part whose length missed its target: told both, asked to rewrite it, never to pad. */
export const resize = (words: number, target: number): string =>
  words < target
    ? `That text has ${words} words; it should have about ${target}. Rewrite it whole to about ${target} words by ` +
      "giving more of the findings' specifics (figures, dates, names, caveats, comparisons), keeping every " +
      "citation. Never add filler, repetition or claims the findings do not make. Answer with the rewritten text only."
    : `That text has ${words} words; it should have about ${target}. Rewrite it whole to about ${target} words by ` +
      "keeping what matters most and its citations, dropping repetition and lesser detail. Answer with the " +
      "rewritten text only."
